// Key lookups outside transactions share statements (src/server/storage/postgres/coalesce.ts): the
// batching itself, over a read the test controls, and the PostgreSQL store's lookups by hash made
// together against a real PostgreSQL and Redis (their outage: store-postgres-outage.test.ts).
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Coalescer } from "../../../src/server/storage/postgres/coalesce";
import type { Storage } from "../../../src/server/storage/seam";
import type { KeyRecord } from "../../../src/server/records";
import { postgresStorage } from "../../../src/server/storage/postgres/store";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";
import { keyRecord } from "../../support/records";

/** A read whose statements the test answers one by one, in the order they were sent. */
function controlledRead<V = string>() {
  const sent: Array<{ values: string[]; answer: (found: Record<string, V>) => void; fail: (err: Error) => void }> = [];
  const read = (values: string[]) =>
    new Promise<Map<string, V>>((resolve, reject) => {
      sent.push({ values, answer: (found) => resolve(new Map(Object.entries(found))), fail: reject });
    });
  return { sent, read };
}

/** Lets every promise callback due run (a statement that came back lets the next one leave). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A patience no test reaches: lookups wait for the statement out. */
const PATIENT = 60_000;

describe("Coalescer", () => {
  it("sends a lookup at once when no statement is out", () => {
    const { sent, read } = controlledRead();
    const c = new Coalescer(read, { maxOut: 1, maxBatch: 10, patienceMs: PATIENT });
    void c.get("a");
    expect(sent.map((s) => s.values)).toEqual([["a"]]);
  });

  it("holds lookups while a statement is out and sends them together, each value once", async () => {
    const { sent, read } = controlledRead();
    const c = new Coalescer(read, { maxOut: 1, maxBatch: 10, patienceMs: PATIENT });
    const first = c.get("a");
    const later = [c.get("b"), c.get("c"), c.get("b")];
    expect(sent).toHaveLength(1);
    sent[0]!.answer({ a: "A" });
    expect(await first).toBe("A");
    await settle();
    expect(sent.map((s) => s.values)).toEqual([["a"], ["b", "c"]]);
    sent[1]!.answer({ b: "B" });
    // A value asked twice gets its record twice; one not found gets undefined.
    expect(await Promise.all(later)).toEqual(["B", undefined, "B"]);
  });

  it("gives each caller of a value asked twice a record of its own", async () => {
    const { sent, read } = controlledRead<{ n: number }>();
    const c = new Coalescer(read, { maxOut: 1, maxBatch: 10, patienceMs: PATIENT });
    void c.get("x");
    const both = [c.get("a"), c.get("a")];
    sent[0]!.answer({});
    await settle();
    sent[1]!.answer({ a: { n: 1 } });
    const [one, two] = await Promise.all(both);
    expect(one).toEqual({ n: 1 });
    expect(two).toEqual({ n: 1 });
    expect(one).not.toBe(two);
  });

  it("keeps up to maxOut statements out before it holds lookups", async () => {
    const { sent, read } = controlledRead();
    const c = new Coalescer(read, { maxOut: 2, maxBatch: 10, patienceMs: PATIENT });
    for (const v of ["a", "b", "c", "d"]) void c.get(v);
    expect(sent.map((s) => s.values)).toEqual([["a"], ["b"]]);
    sent[0]!.answer({});
    await settle();
    expect(sent.map((s) => s.values)).toEqual([["a"], ["b"], ["c", "d"]]);
  });

  it("sends a full batch at once, even while a statement is out", async () => {
    const { sent, read } = controlledRead();
    const c = new Coalescer(read, { maxOut: 1, maxBatch: 3, patienceMs: PATIENT });
    const all = ["a", "b", "c", "d", "e", "f", "g", "h"].map((v) => c.get(v));
    // "a" went alone; b–d and e–g filled batches and left; "h" waits for a statement to come back.
    expect(sent.map((s) => s.values)).toEqual([["a"], ["b", "c", "d"], ["e", "f", "g"]]);
    for (const s of sent) s.answer(Object.fromEntries(s.values.map((v) => [v, v.toUpperCase()])));
    await settle();
    expect(sent.map((s) => s.values)).toEqual([["a"], ["b", "c", "d"], ["e", "f", "g"], ["h"]]);
    sent[3]!.answer({ h: "H" });
    expect(await Promise.all(all)).toEqual(["A", "B", "C", "D", "E", "F", "G", "H"]);
  });

  it("sends one more statement for a lookup asked once the one out has been out for patienceMs", async () => {
    const { sent, read } = controlledRead();
    const c = new Coalescer(read, { maxOut: 1, maxBatch: 10, patienceMs: 30 });
    void c.get("a");
    void c.get("b");
    expect(sent).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 60));
    // The statement of "a" is slow: "c" does not wait for it, and takes "b" along.
    void c.get("c");
    expect(sent.map((s) => s.values)).toEqual([["a"], ["b", "c"]]);
    // The next lookup waits again: a statement left just now.
    void c.get("d");
    expect(sent).toHaveLength(2);
  });

  it("fails every lookup of a failed statement, and still sends those waiting", async () => {
    const { sent, read } = controlledRead();
    const c = new Coalescer(read, { maxOut: 1, maxBatch: 10, patienceMs: PATIENT });
    const first = c.get("a");
    const same = c.get("a");
    const waiting = c.get("b");
    const outage = new Error("store down");
    sent[0]!.fail(outage);
    await expect(first).rejects.toBe(outage);
    // "a" asked while its statement was out waits for the next one: it is not failed with the first.
    expect(sent.map((s) => s.values)).toEqual([["a"], ["a", "b"]]);
    sent[1]!.answer({ a: "A", b: "B" });
    expect(await Promise.all([same, waiting])).toEqual(["A", "B"]);
  });

  it("fails the lookups of a read that throws before it returns a promise, and goes on", async () => {
    let calls = 0;
    const c = new Coalescer<string>(
      (values) => {
        if (calls++ === 0) throw new Error("bad statement");
        return Promise.resolve(new Map(values.map((v) => [v, v])));
      },
      { maxOut: 1, maxBatch: 10, patienceMs: PATIENT },
    );
    await expect(c.get("a")).rejects.toThrow("bad statement");
    expect(await c.get("b")).toBe("b");
  });
});

const skip = await postgresRedisSkipReason("the PostgreSQL store's key lookups");

describe.skipIf(skip !== undefined)("the PostgreSQL store's key lookups made together", () => {
  const ns = isolatedNamespace();
  let store: Storage;
  let keeping: Storage;
  const keys = Array.from({ length: 40 }, (_, i) =>
    keyRecord({
      name: `key ${i}`,
      ...(i % 3 === 0 && { credits: { remaining: 10, lastRefillAt: 1 } }),
      permissionIds: i % 4 === 0 ? [`perm_${i}`] : [],
    }),
  );

  beforeAll(async () => {
    const options = { postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema };
    // Without the record cache: a key another test of this file looked up would be answered from it,
    // and this file's lookups must reach PostgreSQL in whatever order its tests run.
    store = await postgresStorage({ ...options, cacheKeys: false });
    keeping = await postgresStorage({ ...options, cacheKeys: true });
    await store.transaction(async (tx) => {
      for (const k of keys) await tx.put("keys", k);
    });
  });
  afterAll(async () => {
    await Promise.all([store, keeping].map((s) => s?.close()));
    await ns.drop();
  });

  it.each([
    ["without the record cache", () => store],
    ["with cacheKeys", () => keeping],
  ])("answers each of many lookups made at once with its own key, in fewer statements (%s)", async (_, which) => {
    const s = which();
    const asked = [...keys.map((k) => k.hash), "no such hash", keys[5]!.hash, keys[0]!.hash, "no such hash either"];
    // The statements the driver is given (counted, not changed).
    const statements = vi.spyOn(pg.Client.prototype, "query");
    let found: Array<KeyRecord | undefined>;
    let texts: string[];
    try {
      found = await Promise.all(asked.map((h) => s.direct.keyByHash(h)));
    } finally {
      texts = statements.mock.calls.map(([q]) => (typeof q === "string" ? q : (q as { text: string }).text));
      statements.mockRestore();
    }
    expect(found.map((k) => k?.id)).toEqual([...keys.map((k) => k.id), undefined, keys[5]!.id, keys[0]!.id, undefined]);
    const lookups = texts.filter((t) => t.includes("r.hash ="));
    expect(lookups.length).toBeGreaterThan(0);
    expect(lookups.length).toBeLessThan(asked.length / 2);
    expect(lookups.some((t) => t.includes("r.hash = ANY($1)"))).toBe(true);
    // Each caller gets a record of its own, with its links and credits.
    expect(found[0]).toMatchObject({ permissionIds: ["perm_0"], credits: { remaining: 10 } });
    expect(found[1]).toMatchObject({ permissionIds: [], name: "key 1" });
    expect(found[5]).not.toBe(found[41]);
    found[5]!.name = "changed by one caller";
    expect(found[41]!.name).toBe("key 5");
    expect((await s.direct.keyByHash(keys[5]!.hash))?.name).toBe("key 5");
  });

  it("finds a key written before it was asked, while other lookups are out", async () => {
    const fresh = keyRecord();
    const others = Promise.all(keys.map((k) => store.direct.keyByHash(k.hash)));
    await store.direct.put("keys", fresh);
    const [written, found] = await Promise.all([store.direct.keyByHash(fresh.hash), others]);
    expect(written?.id).toBe(fresh.id);
    expect(found.map((k) => k?.id)).toEqual(keys.map((k) => k.id));
  });
});
