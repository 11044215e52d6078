// Abort handling of the request chokepoint: an attempt's signal, a fetch that ignores its signal has
// its late response and its stalled body released, and calls work on a Node without AbortSignal.any.

import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "keyguard/client";
import { attemptSignal, raceAbort } from "../../src/client/abort";
import { silentLogger } from "../../src/logger";
import { ROOT_KEY, ok, startServer, type TestServer } from "./helpers/fault-server";

const VERIFIED = { valid: true, code: "VALID", keyId: "key_1" };
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Lets pending I/O callbacks and promise jobs run: `n` turns of the event loop (bounded). */
async function turns(n = 20): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** A body stream that never delivers a byte and records being cancelled. */
function stalledBody(): { body: ReadableStream<Uint8Array>; cancelled: () => boolean } {
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    pull: () => new Promise<void>(() => undefined),
    cancel: () => {
      cancelled = true;
    },
  });
  return { body, cancelled: () => cancelled };
}

describe("attemptSignal", () => {
  it("aborts with the caller's reason, and detaches from the caller once disposed", () => {
    const caller = new AbortController();
    const attempt = attemptSignal(caller.signal, 60_000);
    expect(getEventListeners(caller.signal, "abort")).toHaveLength(1);
    const reason = new Error("caller first");
    caller.abort(reason);
    expect(attempt.signal.aborted).toBe(true);
    expect(attempt.signal.reason).toBe(reason);
    attempt.dispose();

    const quiet = new AbortController();
    const disposed = attemptSignal(quiet.signal, 60_000);
    disposed.dispose();
    expect(getEventListeners(quiet.signal, "abort")).toHaveLength(0);
    quiet.abort();
    expect(disposed.signal.aborted).toBe(false);
  });

  it("is aborted from the start when the caller's signal already is", () => {
    const reason = new Error("already");
    expect(attemptSignal(AbortSignal.abort(reason), 60_000).signal.reason).toBe(reason);
  });

  it("aborts with a TimeoutError after its time, and never once disposed", async () => {
    const timed = attemptSignal(undefined, 5);
    await new Promise((resolve) => timed.signal.addEventListener("abort", resolve, { once: true }));
    expect(timed.signal.reason).toMatchObject({ name: "TimeoutError" });

    const disposed = attemptSignal(undefined, 5);
    disposed.dispose();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(disposed.signal.aborted).toBe(false);
  });
});

describe("raceAbort", () => {
  it("settles like the promise while the signal is quiet, and removes its listener", async () => {
    const controller = new AbortController();
    await expect(raceAbort(Promise.resolve(1), controller.signal)).resolves.toBe(1);
    await expect(raceAbort(Promise.reject(new Error("no")), controller.signal)).rejects.toThrow("no");
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("rejects with the reason on abort, and hands a value delivered later to onLate", async () => {
    const late: number[] = [];
    let deliver: ((n: number) => void) | undefined;
    const controller = new AbortController();
    const raced = raceAbort(new Promise<number>((resolve) => (deliver = resolve)), controller.signal, (n) => late.push(n));
    const reason = new Error("stop");
    controller.abort(reason);
    await expect(raced).rejects.toBe(reason);
    deliver!(7);
    await turns(2);
    expect(late).toEqual([7]);

    await expect(raceAbort(Promise.resolve(8), AbortSignal.abort(reason), (n) => late.push(n))).rejects.toBe(reason);
    await turns(2);
    expect(late).toEqual([7, 8]);
  });
});

// Faults only a custom fetch can produce: it ignores the abort signal it is given.
describe("a fetch that ignores its signal", () => {
  it("a response arriving after the caller aborted is cancelled, not left open", async () => {
    let deliver: ((response: Response) => void) | undefined;
    const lateFetch: typeof fetch = () => new Promise<Response>((resolve) => (deliver = resolve));
    const client = createClient({ rootKey: ROOT_KEY, baseUrl: "http://127.0.0.1:9", fetch: lateFetch, logger: silentLogger });
    const controller = new AbortController();
    const reason = new Error("caller gave up");
    const pending = client.keys.verifyKey({ key: "k" }, { signal: controller.signal });
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);

    const late = stalledBody();
    expect(deliver).toBeDefined();
    deliver!(new Response(late.body, { status: 200 }));
    await turns();
    expect(late.cancelled()).toBe(true);
  });

  it("a body stalled when the caller aborts is cancelled", async () => {
    const stalled = stalledBody();
    let calls = 0;
    const stallingFetch: typeof fetch = async () => {
      calls++;
      return new Response(stalled.body, { status: 200, headers: { "Content-Type": "application/json" } });
    };
    const client = createClient({ rootKey: ROOT_KEY, baseUrl: "http://127.0.0.1:9", fetch: stallingFetch, logger: silentLogger });
    const controller = new AbortController();
    const reason = new Error("caller gave up");
    const pending = client.keys.verifyKey({ key: "k" }, { signal: controller.signal });
    await turns(); // the client is now waiting for the body
    expect(calls).toBe(1);
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    await turns();
    expect(stalled.cancelled()).toBe(true);
  });

  it("a body stalled past the per-attempt timeout is cut off and cancelled", async () => {
    const stalled = stalledBody();
    const stallingFetch: typeof fetch = async () => new Response(stalled.body, { status: 200 });
    const client = createClient({
      rootKey: ROOT_KEY,
      baseUrl: "http://127.0.0.1:9",
      fetch: stallingFetch,
      logger: silentLogger,
      timeout: 50,
    });
    await expect(client.keys.verifyKey({ key: "k" })).rejects.toMatchObject({ code: "KEY_SERVICE_TIMEOUT", scope: "attempt", timeout: 50 });
    await turns();
    expect(stalled.cancelled()).toBe(true);
  });
});

describe("without AbortSignal.any (Node 20.0 to 20.2)", () => {
  const original = Object.getOwnPropertyDescriptor(AbortSignal, "any");
  afterEach(() => {
    if (original) Object.defineProperty(AbortSignal, "any", original);
  });
  function removeAny(): void {
    Object.defineProperty(AbortSignal, "any", { value: undefined, configurable: true, writable: true });
  }

  it("a call with a caller's signal succeeds, and leaves no listener on that signal", async () => {
    server = await startServer((_req, res) => ok(res, VERIFIED));
    removeAny();
    const controller = new AbortController();
    const client = createClient({ rootKey: ROOT_KEY, baseUrl: server.url, logger: silentLogger });
    await expect(client.keys.verifyKey({ key: "k" }, { signal: controller.signal })).resolves.toEqual(VERIFIED);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("the caller's abort and the per-attempt timeout still end the call", async () => {
    server = await startServer(() => undefined);
    removeAny();
    const client = createClient({ rootKey: ROOT_KEY, baseUrl: server.url, logger: silentLogger });
    const controller = new AbortController();
    const reason = new Error("caller gave up");
    const pending = client.keys.verifyKey({ key: "k" }, { signal: controller.signal });
    await expect.poll(() => server!.requests.length).toBe(1);
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);

    const timer = new AbortController();
    await expect(client.keys.verifyKey({ key: "k" }, { signal: timer.signal, timeout: 50 })).rejects.toMatchObject({
      code: "KEY_SERVICE_TIMEOUT",
      scope: "attempt",
    });
    expect(getEventListeners(timer.signal, "abort")).toHaveLength(0);
  });
});
