// Unit tests of the verification cache: what is stored and for how long, in-flight sharing, and
// the invariant that charged answers (credits, rate limits) are never reused.
import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { cacheKeyFor, createVerificationCache, hashKey, storableFor } from "../../src/middleware/cache";
import { createStaleStore } from "../../src/middleware/stale";
import type { VerifyKeyResult } from "../../src/protocol/types";

const settings = { ttl: 30_000, negativeTtl: 5_000, max: 100 };
const VALID: VerifyKeyResult = { valid: true, code: "VALID", keyId: "key_1", enabled: true };
const NOT_FOUND: VerifyKeyResult = { valid: false, code: "NOT_FOUND" };
const k = (key: string, shape = "") => cacheKeyFor(hashKey(key), shape);

function counter(result: VerifyKeyResult | (() => VerifyKeyResult)) {
  let calls = 0;
  const run = vi.fn(async () => {
    calls++;
    await new Promise((r) => setTimeout(r, 5));
    return typeof result === "function" ? result() : result;
  });
  return { run, calls: () => calls };
}

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(1_700_000_000_000);
});
afterEach(() => {
  vi.useRealTimers();
});

async function settle<T>(p: Promise<T>): Promise<T> {
  await vi.advanceTimersByTimeAsync(10);
  return p;
}

describe("hashKey", () => {
  it("is SHA-256 base64url and never the key", () => {
    expect(hashKey("sk_secret")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(hashKey("sk_secret")).not.toContain("secret");
    expect(k("sk_secret", "a.read")).not.toContain("sk_secret");
  });

  it("equals the reference SHA-256 digest, for ASCII and non-ASCII keys alike", () => {
    for (const key of ["sk_secret", "ключ_🔑", "x".repeat(512)]) {
      expect(hashKey(key)).toBe(createHash("sha256").update(key).digest("base64url"));
    }
  });
});

describe("storableFor", () => {
  const now = Date.UTC(2030, 0, 1);
  it("keeps VALID for ttl, capped by expires", () => {
    expect(storableFor(VALID, settings, now)).toBe(30_000);
    expect(storableFor({ ...VALID, expires: now + 1234 }, settings, now)).toBe(1234);
    expect(storableFor({ ...VALID, expires: now - 1 }, settings, now)).toBe(0);
  });
  it("keeps NOT_FOUND for negativeTtl and nothing else", () => {
    expect(storableFor(NOT_FOUND, settings, now)).toBe(5_000);
    expect(storableFor({ valid: false, code: "EXPIRED", keyId: "k" }, settings, now)).toBe(0);
  });
  it("never keeps answers with credits or rate limits", () => {
    expect(storableFor({ ...VALID, credits: 4 }, settings, now)).toBe(0);
    const rl = { id: "rl_1", name: "r", limit: 1, duration: 1000, remaining: 0, reset: now, exceeded: false, autoApply: true };
    expect(storableFor({ ...VALID, ratelimits: [rl] }, settings, now)).toBe(0);
    expect(storableFor({ ...VALID, identity: { id: "id_1", externalId: "u", ratelimits: [rl] } }, settings, now)).toBe(0);
  });
});

describe("createVerificationCache", () => {
  it("reuses a VALID answer until the ttl ends", async () => {
    const cache = createVerificationCache(settings);
    const c = counter(VALID);
    expect(await settle(cache.verify(hashKey("a"), "", c.run))).toEqual(VALID);
    expect(await cache.verify(hashKey("a"), "", c.run)).toEqual(VALID);
    expect(c.calls()).toBe(1);
    vi.advanceTimersByTime(30_001);
    await settle(cache.verify(hashKey("a"), "", c.run));
    expect(c.calls()).toBe(2);
  });

  it("keys by request shape", async () => {
    const cache = createVerificationCache(settings);
    const c = counter(VALID);
    await settle(cache.verify(hashKey("a"), "x.read", c.run));
    await settle(cache.verify(hashKey("a"), "x.write", c.run));
    expect(c.calls()).toBe(2);
  });

  it("keeps NOT_FOUND for negativeTtl only", async () => {
    const cache = createVerificationCache(settings);
    const c = counter(NOT_FOUND);
    await settle(cache.verify(hashKey("nope"), "", c.run));
    await cache.verify(hashKey("nope"), "", c.run);
    expect(c.calls()).toBe(1);
    vi.advanceTimersByTime(5_001);
    await settle(cache.verify(hashKey("nope"), "", c.run));
    expect(c.calls()).toBe(2);
  });

  it("shares one in-flight call among concurrent requests for a reusable answer", async () => {
    const cache = createVerificationCache(settings);
    const c = counter(VALID);
    const all = Promise.all(Array.from({ length: 5 }, () => cache.verify(hashKey("a"), "", c.run)));
    expect(await settle(all)).toEqual(Array(5).fill(VALID));
    expect(c.calls()).toBe(1);
  });

  it("does not hand a charged answer to waiters: each verifies on its own, nothing is stored", async () => {
    const cache = createVerificationCache(settings);
    let remaining = 3;
    const c = counter(() => (remaining > 0 ? { ...VALID, credits: --remaining } : { valid: false, code: "USAGE_EXCEEDED", keyId: "key_1", credits: 0 }));
    const runs = Array.from({ length: 5 }, () => cache.verify(hashKey("a"), "", c.run));
    await vi.advanceTimersByTimeAsync(50);
    const results = await Promise.all(runs);
    expect(results.filter((r) => r.valid)).toHaveLength(3);
    expect(c.calls()).toBe(5);
    expect(cache.size).toBe(0);
  });

  it("shares but does not store other rejections", async () => {
    const cache = createVerificationCache(settings);
    const c = counter({ valid: false, code: "EXPIRED", keyId: "key_1" });
    await settle(Promise.all([cache.verify(hashKey("a"), "", c.run), cache.verify(hashKey("a"), "", c.run)]));
    expect(c.calls()).toBe(1);
    expect(cache.size).toBe(0);
  });

  it("never stores failures; waiters share the failure", async () => {
    const cache = createVerificationCache(settings);
    const run = vi.fn(async () => {
      await new Promise((r) => setTimeout(r, 5));
      throw Object.assign(new Error("down"), { code: "KEY_SERVICE_NETWORK_ERROR" });
    });
    const both = Promise.allSettled([cache.verify(hashKey("a"), "", run), cache.verify(hashKey("a"), "", run)]);
    const [a, b] = await settle(both);
    expect(a.status).toBe("rejected");
    expect(b.status).toBe("rejected");
    expect(run).toHaveBeenCalledTimes(1);
    expect(cache.size).toBe(0);
  });

  it("deleteKeyHash drops every shape of one key, and an in-flight call still answers its waiters", async () => {
    const cache = createVerificationCache(settings);
    const c = counter(VALID);
    await settle(Promise.all([cache.verify(hashKey("a"), "p", c.run), cache.verify(hashKey("a"), "", c.run), cache.verify(hashKey("b"), "", c.run)]));
    expect(cache.size).toBe(3);
    expect(cache.peek(hashKey("a"), "p")).toEqual(VALID);
    cache.deleteKeyHash(hashKey("a"));
    expect(cache.size).toBe(1);
    expect(cache.peek(hashKey("a"), "p")).toBeUndefined();

    const inFlight = cache.verify(hashKey("a"), "", c.run);
    cache.deleteKeyHash(hashKey("a"));
    expect(await settle(inFlight)).toEqual(VALID);
    expect(cache.size).toBe(1);
    cache.clear();
    expect(cache.size).toBe(0);
  });
});

describe("charged keys (observe)", () => {
  const CHARGED: VerifyKeyResult = { ...VALID, credits: 5 };

  it("a key marked charged is never joined: concurrent requests each run", async () => {
    const cache = createVerificationCache(settings);
    cache.observe(hashKey("a"), CHARGED);
    const c = counter(CHARGED);
    await settle(Promise.all([cache.verify(hashKey("a"), "", c.run), cache.verify(hashKey("a"), "", c.run)]));
    expect(c.calls()).toBe(2);
    expect(cache.size).toBe(0);
  });

  it("marking a key drops the answers stored for it before; a reusable answer clears the mark", async () => {
    const cache = createVerificationCache(settings);
    const c = counter(VALID);
    await settle(Promise.all([cache.verify(hashKey("a"), "", c.run), cache.verify(hashKey("a"), "p", c.run), cache.verify(hashKey("b"), "", c.run)]));
    expect(cache.size).toBe(3);
    cache.observe(hashKey("a"), CHARGED);
    expect(cache.size).toBe(1);
    expect(cache.peek(hashKey("a"), "")).toBeUndefined();
    cache.observe(hashKey("a"), VALID);
    await settle(Promise.all([cache.verify(hashKey("a"), "", c.run), cache.verify(hashKey("a"), "", c.run)]));
    expect(c.calls()).toBe(4); // joined again: one call for two requests
    expect(cache.peek(hashKey("a"), "")).toEqual(VALID);
  });

  it("the mark lasts as long as a VALID answer would (ttl)", async () => {
    const cache = createVerificationCache(settings);
    cache.observe(hashKey("a"), CHARGED);
    vi.advanceTimersByTime(30_001);
    const c = counter(VALID);
    await settle(Promise.all([cache.verify(hashKey("a"), "", c.run), cache.verify(hashKey("a"), "", c.run)]));
    expect(c.calls()).toBe(1);
  });
});

describe("createStaleStore", () => {
  it("forgets one request shape", () => {
    const store = createStaleStore(60_000, 10);
    store.remember(k("a"), VALID);
    store.remember(k("a", "p"), VALID);
    store.forget(k("a"));
    expect(store.recall(k("a"))).toBeUndefined();
    expect(store.recall(k("a", "p"))).toEqual({ result: VALID, age: 0 });
  });

  it("recalls a kept answer until maxAge, never past the key's expiry", () => {
    const store = createStaleStore(60_000, 10);
    store.remember(k("a"), VALID);
    store.remember(k("b"), { ...VALID, expires: Date.now() + 10_000 });
    vi.advanceTimersByTime(20_000);
    expect(store.recall(k("a"))).toEqual({ result: VALID, age: 20_000 });
    expect(store.recall(k("b"))).toBeUndefined();
    vi.advanceTimersByTime(40_001);
    expect(store.recall(k("a"))).toBeUndefined();
  });

  it("forgets a key hash", () => {
    const store = createStaleStore(60_000, 10);
    store.remember(k("a"), VALID);
    store.deleteKeyHash(hashKey("a"));
    expect(store.recall(k("a"))).toBeUndefined();
  });
});
