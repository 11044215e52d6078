// The injectable clock: expiry, daily and monthly refills, and sliding rate-limit windows.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { creditsAt, dueRefill, lastRefillBoundary, spendFrom } from "../../../src/server/domain/credits";
import {
  evaluateLimits,
  limitCounter,
  namespaceCounter,
  windowEnded,
  type WindowCounter,
  type LimitCheck,
} from "../../../src/server/domain/sliding-window";
import { manualClock, start, type Started } from "../helpers";

/** evaluateLimits over a plain record of counters, applying its writes. */
function checkLimits(windows: Record<string, WindowCounter>, checks: LimitCheck[], now: number) {
  const { passed, states, writes } = evaluateLimits((c) => windows[c], checks, now);
  for (const w of writes) windows[w.check.counter] = w.value;
  return { passed, states };
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

describe("refill boundaries (pure)", () => {
  it("daily: 00:00 UTC of the current day", () => {
    expect(lastRefillBoundary({ interval: "daily", amount: 1 }, Date.UTC(2025, 2, 10, 13, 5))).toBe(Date.UTC(2025, 2, 10));
    expect(lastRefillBoundary({ interval: "daily", amount: 1 }, Date.UTC(2025, 2, 10))).toBe(Date.UTC(2025, 2, 10));
  });

  it("monthly: refillDay of this month if passed, else of the previous month, clamped to the month's end", () => {
    const m = (refillDay: number, now: number) => lastRefillBoundary({ interval: "monthly", amount: 1, refillDay }, now);
    expect(m(15, Date.UTC(2025, 2, 20))).toBe(Date.UTC(2025, 2, 15));
    expect(m(15, Date.UTC(2025, 2, 10))).toBe(Date.UTC(2025, 1, 15));
    expect(m(31, Date.UTC(2025, 1, 28, 1))).toBe(Date.UTC(2025, 1, 28)); // February 2025 has 28 days
    expect(m(31, Date.UTC(2024, 1, 28, 1))).toBe(Date.UTC(2024, 0, 31)); // 2024: the 29th is the boundary
    expect(m(31, Date.UTC(2024, 1, 29, 1))).toBe(Date.UTC(2024, 1, 29));
    expect(m(10, Date.UTC(2025, 0, 5))).toBe(Date.UTC(2024, 11, 10)); // across the year
  });

  it("a refill sets remaining to amount (does not add) and happens once per boundary", () => {
    const credits = { remaining: 3, refill: { interval: "daily" as const, amount: 10 }, lastRefillAt: Date.UTC(2025, 0, 1, 12) };
    const before = Date.UTC(2025, 0, 1, 23);
    expect(creditsAt(credits, before)).toBe(credits);
    const due = Date.UTC(2025, 0, 2, 0, 0, 0, 1);
    expect(creditsAt(credits, due)).toEqual({ ...credits, remaining: 10, lastRefillAt: due });
    expect(credits.remaining).toBe(3);
    // spendFrom applies it (then charges) in place, once per boundary.
    expect(spendFrom(credits, 0, due, dueRefill(credits, due))).toEqual({ ok: true, remaining: 10 });
    credits.remaining = 4;
    const later = Date.UTC(2025, 0, 2, 20);
    expect(spendFrom(credits, 0, later, dueRefill(credits, later))).toEqual({ ok: true, remaining: 4 });
    expect(creditsAt(credits, later)).toBe(credits);
  });

  it("spendFrom: over-balance unchanged, cost 0 passes", () => {
    const c = { remaining: 2, lastRefillAt: 0 };
    expect(spendFrom(c, 3, 1, undefined)).toEqual({ ok: false, remaining: 2 });
    expect(spendFrom(c, 0, 1, undefined)).toEqual({ ok: true, remaining: 2 });
    expect(spendFrom(c, 2, 1, undefined)).toEqual({ ok: true, remaining: 0 });
    expect(spendFrom(c, 0, 1, undefined)).toEqual({ ok: true, remaining: 0 });
    expect(dueRefill(c, 1)).toBeUndefined();
  });
});

describe("sliding window (pure)", () => {
  it("weights the previous window by the part of it still inside the sliding window", () => {
    const windows: Record<string, WindowCounter> = {};
    const check = (now: number, cost = 1) => checkLimits(windows, [{ counter: "c", limit: 10, duration: 1000, cost }], now);
    // Fill window 0 with 10.
    expect(check(100, 10).passed).toBe(true);
    expect(check(999).passed).toBe(false);
    // At 25% into window 1: effective = 0 + 10 × 0.75 + 1 = 8.5 → allowed; 3 more fit (8.5, 9.5, 10.5 > 10).
    expect(check(1250)).toEqual({ passed: true, states: [{ passed: true, remaining: 1, reset: 2000 }] });
    expect(check(1250).passed).toBe(true);
    expect(check(1250).passed).toBe(false);
    // Two windows later nothing is left over.
    expect(check(3000, 10).passed).toBe(true);
  });

  it("all-or-nothing across several limits", () => {
    const windows: Record<string, WindowCounter> = {};
    const both = (now: number) =>
      checkLimits(
        windows,
        [
          { counter: "a", limit: 5, duration: 1000, cost: 1 },
          { counter: "b", limit: 1, duration: 1000, cost: 1 },
        ],
        now,
      );
    expect(both(0).passed).toBe(true);
    const denied = both(1);
    expect(denied.passed).toBe(false);
    expect(denied.states.map((s) => s.passed)).toEqual([true, false]);
    expect(windows.a!.current).toBe(1);
  });

  it("a window has ended (its counter can be dropped) only when older than the previous window", () => {
    expect(windowEnded(10, 1000, 10_500)).toBe(false);
    expect(windowEnded(9, 1000, 10_500)).toBe(false);
    expect(windowEnded(8, 1000, 10_500)).toBe(true);
    expect(windowEnded(0, 60_000, 10_500)).toBe(false);
  });

  it("counters are unambiguous: limit id + duration, and JSON tuples for namespaces", () => {
    expect(limitCounter("rl_a", 1000)).not.toBe(limitCounter("rl_a", 60_000));
    expect(namespaceCounter("ws", "a:b", "c", 1000)).not.toBe(namespaceCounter("ws", "a", "b:c", 1000));
    expect(namespaceCounter("ws", 'a","b', "c", 1000)).not.toBe(namespaceCounter("ws", "a", 'b","c', 1000));
  });
});

describe("clock-driven behaviour over HTTP", () => {
  let s: Started;
  const clock = manualClock(Date.UTC(2025, 0, 15, 12));
  beforeAll(async () => {
    s = await start({ now: clock.now });
  });
  afterAll(() => s.close());

  it("daily refill at 00:00 UTC sets remaining to amount", async () => {
    clock.t = Date.UTC(2025, 0, 15, 12); // each test sets the clock: they may run in any order
    const { key } = await s.createKey({ credits: { remaining: 2, refill: { interval: "daily", amount: 5 } } });
    expect(await s.verify(key, { credits: { cost: 2 } })).toMatchObject({ code: "VALID", credits: 0 });
    expect(await s.verify(key)).toMatchObject({ code: "USAGE_EXCEEDED" });
    clock.t = Date.UTC(2025, 0, 15, 23, 59, 59, 999);
    expect(await s.verify(key)).toMatchObject({ code: "USAGE_EXCEEDED" });
    clock.t = Date.UTC(2025, 0, 16);
    expect(await s.verify(key)).toMatchObject({ code: "VALID", credits: 4 });
    clock.t = Date.UTC(2025, 0, 18, 9); // missed days do not add up
    expect(await s.verify(key)).toMatchObject({ code: "VALID", credits: 4 });
  });

  it("monthly refill on refillDay, clamped to the month's last day", async () => {
    clock.t = Date.UTC(2025, 0, 20);
    const { key, keyId } = await s.createKey({ remaining: 1, refill: { interval: "monthly", amount: 3, refillDay: 31 } });
    expect(await s.verify(key)).toMatchObject({ code: "VALID", credits: 0 });
    clock.t = Date.UTC(2025, 0, 30, 23);
    expect(await s.verify(key)).toMatchObject({ code: "USAGE_EXCEEDED" });
    clock.t = Date.UTC(2025, 0, 31, 1);
    expect(await s.verify(key)).toMatchObject({ code: "VALID", credits: 2 });
    clock.t = Date.UTC(2025, 1, 28, 1); // February: the 31st is clamped to the 28th
    const info = await s.call("keys.getKey", { keyId });
    expect(info.body.data.credits).toEqual({ remaining: 3, refill: { interval: "monthly", amount: 3, refillDay: 31 } });
  });

  it("rate-limit windows follow the clock", async () => {
    clock.t = Date.UTC(2025, 1, 1, 0, 0, 0);
    const { key } = await s.createKey({ ratelimits: [{ name: "per-minute", limit: 2, duration: 60_000, autoApply: true }] });
    await s.verify(key);
    await s.verify(key);
    expect(await s.verify(key)).toMatchObject({ code: "RATE_LIMITED", ratelimits: [{ reset: clock.t + 60_000 }] });
    clock.advance(60_000 + 30_000); // half-way through the next window: 2 × 0.5 + 1 = 2 → allowed
    expect(await s.verify(key)).toMatchObject({ code: "VALID" });
    expect(await s.verify(key)).toMatchObject({ code: "RATE_LIMITED" });
    clock.advance(2 * 60_000);
    expect(await s.verify(key)).toMatchObject({ code: "VALID" });
  });

  it("expiry follows the clock, also through rerollKey's grace period", async () => {
    clock.t = Date.UTC(2025, 2, 1);
    const { key, keyId } = await s.createKey();
    const rerolled = await s.call("keys.rerollKey", { keyId, expiration: DAY });
    expect(rerolled.status).toBe(200);
    expect(await s.verify(key)).toMatchObject({ code: "VALID", expires: clock.t + DAY });
    clock.advance(DAY);
    expect(await s.verify(key)).toMatchObject({ code: "EXPIRED" });
    expect(await s.verify(rerolled.body.data.key)).toMatchObject({ code: "VALID" });
  });
});
