// The pure retry schedule and Retry-After parsing, and the real sleep under fake timers.

import { afterEach, describe, expect, it, vi } from "vitest";
import { DEFAULT_RETRY, parseRetryAfter, retryAfterDelay, retryDelay, type RetryPolicy } from "../../src/client/retry";
import { sleep } from "../../src/client/runtime";

const noJitter: RetryPolicy = { ...DEFAULT_RETRY, jitter: 0 };

describe("retryDelay", () => {
  it("doubles from initialDelay and caps at maxDelay", () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => retryDelay(noJitter, n, 0.3))).toEqual([1000, 2000, 4000, 8000, 16_000, 16_000, 16_000]);
  });

  it("the defaults are the spec's example: 1 s, doubling, 5 attempts", () => {
    expect(DEFAULT_RETRY).toEqual({ attempts: 5, initialDelay: 1000, factor: 2, maxDelay: 16_000, jitter: 0.2 });
  });

  it("applies proportional jitter: random 0.5 is the base, 0 and ~1 the ±jitter edges", () => {
    expect(retryDelay(DEFAULT_RETRY, 2, 0.5)).toBe(2000);
    expect(retryDelay(DEFAULT_RETRY, 2, 0)).toBe(1600);
    expect(retryDelay(DEFAULT_RETRY, 2, 0.999_999)).toBe(2400);
  });

  it("never exceeds maxDelay, even with jitter", () => {
    expect(retryDelay(DEFAULT_RETRY, 10, 0.999_999)).toBe(16_000);
    expect(retryDelay(DEFAULT_RETRY, 10, 0)).toBe(12_800);
  });

  it("uses the factor, and treats a non-finite random as no jitter", () => {
    const policy = { ...noJitter, initialDelay: 100, factor: 3 };
    expect([1, 2, 3].map((n) => retryDelay(policy, n, 0))).toEqual([100, 300, 900]);
    expect(retryDelay(DEFAULT_RETRY, 1, Number.NaN)).toBe(1000);
  });

  it("Retry-After replaces the computed wait, capped at maxDelay", () => {
    expect(retryAfterDelay(DEFAULT_RETRY, 3000)).toBe(3000);
    expect(retryAfterDelay(DEFAULT_RETRY, 120_000)).toBe(16_000);
    expect(retryAfterDelay(DEFAULT_RETRY, 0)).toBe(0);
  });
});

describe("parseRetryAfter", () => {
  const now = Date.parse("2025-01-01T00:00:00Z");

  it("reads delay-seconds", () => {
    expect(parseRetryAfter("0", now)).toBe(0);
    expect(parseRetryAfter("3", now)).toBe(3000);
    expect(parseRetryAfter(" 10 ", now)).toBe(10_000);
  });

  it("reads an HTTP-date relative to now, never negative", () => {
    expect(parseRetryAfter("Wed, 01 Jan 2025 00:00:05 GMT", now)).toBe(5000);
    expect(parseRetryAfter("Tue, 31 Dec 2024 23:59:00 GMT", now)).toBe(0);
  });

  it("clamps absurd values to a day", () => {
    expect(parseRetryAfter("99999999999", now)).toBe(86_400_000);
  });

  it.each([null, undefined, "", "soon", "-1", "1.5", "3s", "x".repeat(100)])("rejects %j", (value) => {
    expect(parseRetryAfter(value, now)).toBeUndefined();
  });
});

describe("sleep", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("resolves after the given time", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    let done = false;
    const p = sleep(1000).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await p;
    expect(done).toBe(true);
  });

  it("rejects with the signal's reason when aborted, and clears its timer", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const controller = new AbortController();
    const p = sleep(10_000, controller.signal);
    expect(vi.getTimerCount()).toBe(1);
    controller.abort(new Error("stop"));
    await expect(p).rejects.toThrow("stop");
    expect(vi.getTimerCount()).toBe(0);
    await expect(sleep(10, AbortSignal.abort(new Error("already")))).rejects.toThrow("already");
  });
});
