// Unit tests of the IETF RateLimit / RateLimit-Policy headers, Retry-After, and Deprecation / Sunset.
import { describe, expect, it } from "vitest";
import { rateLimitHeaders, retryAfterFromRatelimits } from "../../src/middleware/ratelimit-headers";
import { rotationHeaders } from "../../src/middleware/rotation-headers";

const now = 1_700_000_000_000;
const state = (
  name: string,
  over: Partial<{ limit: number; duration: number; remaining: number; reset: number; exceeded: boolean }> = {},
) => ({
  name,
  limit: 10,
  duration: 60_000,
  remaining: 3,
  reset: now + 41_200,
  exceeded: false,
  ...over,
});

describe("rateLimitHeaders", () => {
  it("is empty without rate limits", () => {
    expect(rateLimitHeaders(undefined, now)).toEqual({});
    expect(rateLimitHeaders([], now)).toEqual({});
  });

  it("renders structured-field lists with q, w, r, t", () => {
    expect(
      rateLimitHeaders([state("requests"), state("burst", { limit: 2, duration: 1000, remaining: 0, reset: now + 300 })], now),
    ).toEqual({
      "RateLimit-Policy": '"requests";q=10;w=60, "burst";q=2;w=1',
      RateLimit: '"requests";r=3;t=42, "burst";r=0;t=1',
    });
  });

  it("escapes names and clamps odd numbers", () => {
    const h = rateLimitHeaders([state('a"b\\é', { remaining: -2, reset: now - 5000 })], now);
    expect(h.RateLimit).toBe('"a\\"b\\\\_";r=0;t=0');
  });

  it("never promises a reset later than one window from now (service clock ahead of ours)", () => {
    const h = rateLimitHeaders([state("requests", { remaining: 0, reset: now + 68_000 })], now);
    expect(h.RateLimit).toBe('"requests";r=0;t=60');
  });

  it("skips malformed entries", () => {
    expect(rateLimitHeaders([{ name: "x" } as never], now)).toEqual({});
  });
});

describe("retryAfterFromRatelimits", () => {
  it("waits for the slowest exceeded limit, at least 1 s", () => {
    expect(
      retryAfterFromRatelimits(
        [
          state("a", { exceeded: true, reset: now + 2_100 }),
          state("b", { exceeded: true, reset: now + 9_000 }),
          state("c", { reset: now + 99_000 }),
        ],
        now,
      ),
    ).toBe(9);
    expect(retryAfterFromRatelimits([state("a", { exceeded: true, reset: now - 1 })], now)).toBe(1);
  });

  it("is at most one window, whatever the service's clock says", () => {
    expect(retryAfterFromRatelimits([state("a", { exceeded: true, duration: 60_000, reset: now + 62_000 })], now)).toBe(60);
  });

  it("is undefined when no limit is exceeded", () => {
    expect(retryAfterFromRatelimits([state("a")], now)).toBeUndefined();
    expect(retryAfterFromRatelimits(undefined, now)).toBeUndefined();
  });
});

describe("rotationHeaders", () => {
  const window = 3_600_000;
  it("Deprecation from the moment the key entered the window, Sunset at its expiry", () => {
    const expires = now + 600_000;
    expect(rotationHeaders(expires, { window }, now)).toEqual({
      Deprecation: `@${Math.floor((expires - window) / 1000)}`,
      Sunset: new Date(expires).toUTCString(),
    });
    // The same values on every request of the key.
    expect(rotationHeaders(expires, { window }, now + 60_000)).toEqual(rotationHeaders(expires, { window }, now));
  });

  it("none without an expiry, once expired, or before the window", () => {
    expect(rotationHeaders(undefined, { window }, now)).toBeUndefined();
    expect(rotationHeaders(now, { window }, now)).toBeUndefined();
    expect(rotationHeaders(now + window + 1, { window }, now)).toBeUndefined();
    expect(rotationHeaders(now + window, { window }, now)).toBeDefined();
  });
});
