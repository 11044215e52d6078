// The turns the PostgreSQL store's one-statement writes with an audit record take per workspace
// (src/server/storage/postgres/chain-turns.ts): at most `limit` calls of a key at once, the rest in
// the order they came, other keys not held up, a failed call's turn passed on, nothing kept after.
import { describe, expect, it } from "vitest";
import { Turns } from "../../../src/server/storage/postgres/chain-turns";

/** A call that runs until `finish` is called: notes when it started. */
function held(started: string[], name: string) {
  let finish!: (value: string) => void;
  let fail!: (err: Error) => void;
  const done = new Promise<string>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  return {
    fn: () => {
      started.push(name);
      return done;
    },
    finish: () => finish(name),
    fail: (err: Error) => fail(err),
  };
}

/** Lets every settled promise's callbacks run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("Turns", () => {
  it("runs at most `limit` calls of a key at once, the others in the order they came", async () => {
    const turns = new Turns(2);
    const started: string[] = [];
    const calls = ["a", "b", "c", "d", "e"].map((name) => held(started, name));
    const results = calls.map((c) => turns.run("ws_1", c.fn));
    await settle();
    expect(started).toEqual(["a", "b"]);
    calls[1]!.finish();
    await settle();
    expect(started).toEqual(["a", "b", "c"]);
    calls[0]!.finish();
    calls[2]!.finish();
    await settle();
    expect(started).toEqual(["a", "b", "c", "d", "e"]);
    calls[3]!.finish();
    calls[4]!.finish();
    expect(await Promise.all(results)).toEqual(["a", "b", "c", "d", "e"]);
    expect(turns.busyKeys).toBe(0);
  });

  it("does not hold one key's calls up behind another's", async () => {
    const turns = new Turns(1);
    const started: string[] = [];
    const first = held(started, "ws_1 first");
    const second = held(started, "ws_1 second");
    const other = held(started, "ws_2");
    const results = [turns.run("ws_1", first.fn), turns.run("ws_1", second.fn), turns.run("ws_2", other.fn)];
    await settle();
    expect(started).toEqual(["ws_1 first", "ws_2"]);
    expect(turns.busyKeys).toBe(2);
    other.finish();
    first.finish();
    await settle();
    expect(started).toEqual(["ws_1 first", "ws_2", "ws_1 second"]);
    second.finish();
    await Promise.all(results);
    expect(turns.busyKeys).toBe(0);
  });

  it("gives a failed call's error to its caller and its turn to the next", async () => {
    const turns = new Turns(1);
    const started: string[] = [];
    const failing = held(started, "fails");
    const next = held(started, "next");
    const failed = turns.run("ws_1", failing.fn);
    const after = turns.run("ws_1", next.fn);
    await settle();
    failing.fail(new Error("the statement failed"));
    await expect(failed).rejects.toThrow("the statement failed");
    await settle();
    expect(started).toEqual(["fails", "next"]);
    next.finish();
    expect(await after).toBe("next");
    expect(turns.busyKeys).toBe(0);
  });

  it("refuses a limit that is not a positive integer", () => {
    for (const limit of [0, -1, 1.5, Number.NaN]) expect(() => new Turns(limit)).toThrow(RangeError);
  });
});
