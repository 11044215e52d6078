// The retry loop on the production runtime (performance.now clock, setTimeout sleep) through the
// public createClient: fractional clock readings, deadline-capped attempt timeouts, real backoff waits.

import { setTimeout as realDelay } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createClient } from "keyguard/client";
import { defaultRuntime, type Runtime } from "../../src/client/runtime";
import { silentLogger } from "../../src/logger";
import { ROOT_KEY, fail, ok, startServer, type Handler, type TestServer } from "./helpers/fault-server";

// The production sleep, observed: every call still goes to the real implementation.
vi.mock("../../src/client/runtime", async (importOriginal) => {
  const actual = await importOriginal<{ defaultRuntime: Runtime }>();
  return { ...actual, defaultRuntime: Object.freeze({ ...actual.defaultRuntime, sleep: vi.fn(actual.defaultRuntime.sleep) }) };
});
const sleepSpy = vi.mocked(defaultRuntime.sleep);

const VERIFIED = { valid: true, code: "VALID", keyId: "key_1" };
const UNAVAILABLE = "err:svc:application:service_unavailable";
let server: TestServer | undefined;

beforeEach(() => {
  sleepSpy.mockClear();
});
afterEach(async () => {
  vi.useRealTimers();
  await server?.close();
  server = undefined;
});
async function serve(handler: Handler): Promise<TestServer> {
  server = await startServer(handler);
  return server;
}

/**
 * Waits (in real time, without moving the fake clock) until `condition` holds. Bounded: at least
 * 30 s of 5 ms real pauses (node:timers/promises is not faked by vi.useFakeTimers); 2 s was short
 * for a request to reach a server on a busy machine.
 */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 6000; i++) {
    if (condition()) return;
    await realDelay(5);
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** Tracks whether `promise` has settled (and marks its rejection as handled). */
function watch(promise: Promise<unknown>): { done: boolean } {
  const state = { done: false };
  const done = () => void (state.done = true);
  promise.then(done, done);
  return state;
}

/** Fakes setTimeout and the performance clock; Math.random = 0.5 (no jitter). */
function fakeClock(): void {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
  vi.spyOn(Math, "random").mockReturnValue(0.5);
}

function client(options: Parameters<typeof createClient>[0] = {}) {
  return createClient({ rootKey: ROOT_KEY, baseUrl: server!.url, logger: silentLogger, ...options });
}

describe("the production clock and sleep", () => {
  it("503, 503, 200 waits 1 s then 2 s (on the performance clock) and succeeds", async () => {
    const seen: number[] = [];
    await serve((_req, res, n) => {
      seen.push(performance.now());
      if (n < 3) fail(res, 503, UNAVAILABLE);
      else ok(res, VERIFIED);
    });
    fakeClock();
    const pending = client().keys.verifyKey({ key: "k" });
    const settled = watch(pending);

    for (const [i, wait] of [1000, 2000].entries()) {
      await until(() => sleepSpy.mock.calls.length === i + 1, `sleep #${i + 1}`);
      expect(sleepSpy.mock.calls[i]![0]).toBe(wait);
      await vi.advanceTimersByTimeAsync(wait);
    }
    await until(() => settled.done, "the call to settle");
    await expect(pending).resolves.toEqual(VERIFIED);
    expect(seen).toHaveLength(3);
    expect([seen[1]! - seen[0]!, seen[2]! - seen[1]!]).toEqual([1000, 2000]);
  });

  it("a slow 503 then 200 succeeds with timeout 1000 and deadline 2500 (fractional time left)", async () => {
    await serve((_req, res, n) => {
      if (n === 1) setTimeout(() => fail(res, 503, UNAVAILABLE), 700);
      else ok(res, VERIFIED);
    });
    fakeClock();
    const pending = client({ timeout: 1000, deadline: 2500 }).keys.verifyKey({ key: "k" });
    const settled = watch(pending);

    await until(() => server!.requests.length === 1, "the first request");
    await vi.advanceTimersByTimeAsync(700.25); // the slow 503; the clock now reads a fraction
    await until(() => sleepSpy.mock.calls.length === 1, "the backoff sleep");
    expect(sleepSpy.mock.calls[0]![0]).toBe(1000);
    await vi.advanceTimersByTimeAsync(1000);
    await until(() => settled.done, "the call to settle");
    await expect(pending).resolves.toEqual(VERIFIED);
    expect(server!.requests).toHaveLength(2);
  });

  it("a deadline shorter than the timeout caps the attempt (scope deadline), on the real clock", async () => {
    await serve(() => undefined);
    const err = await client({ timeout: 5000, deadline: 150 })
      .keys.verifyKey({ key: "k" })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "KEY_SERVICE_TIMEOUT", scope: "deadline", timeout: 150, attempts: 1 });
  });

  it("a per-call deadline below the timeout works on the real clock", async () => {
    await serve((_req, res) => ok(res, VERIFIED));
    await expect(client({ deadline: 3000 }).keys.verifyKey({ key: "k" })).resolves.toEqual(VERIFIED);
    await expect(client().keys.verifyKey({ key: "k" }, { deadline: 1000 })).resolves.toEqual(VERIFIED);
  });
});
