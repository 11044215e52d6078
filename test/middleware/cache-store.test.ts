// Unit tests of the memory store and of the verification step over it: what is kept and for how
// long, in-flight sharing, the invariant that charged answers (credits, rate limits) are never
// reused, invalidation by key, keyId and all (revoke during a verification included), staleIfError.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { KeyServiceClient } from "keyguard/client";
import { ConfigError, silentLogger } from "keyguard";
import { planShape } from "../../src/middleware/request-shape";
import { memoryStore, storableFor } from "../../src/middleware/cache-store";
import { createVerifier } from "../../src/middleware/verify";
import { invalidateAll, invalidateKey, invalidateKeyId, parseInvalidation } from "../../src/protocol/invalidation";
import { keyHash } from "../../src/protocol/key-hash";
import type { VerifyKeyResult } from "../../src/protocol/types";

const settings = { ttl: 30_000, negativeTtl: 5_000 };
const VALID: VerifyKeyResult = { valid: true, code: "VALID", keyId: "key_1", enabled: true };
const NOT_FOUND: VerifyKeyResult = { valid: false, code: "NOT_FOUND" };
const SHAPE = planShape({ permissions: undefined, cost: undefined, ratelimits: undefined, tags: undefined }).fixed!;
const QUERY = planShape({ permissions: "x.read", cost: undefined, ratelimits: undefined, tags: undefined }).fixed!;
const ref = (key: string, query = "") => ({ keyHash: keyHash(key), query });

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(1_700_000_000_000);
});
afterEach(() => {
  vi.useRealTimers();
});

/** A client whose verifyKey answers after 5 ms (fake time) with `answer()`, counting calls. */
function countingClient(answer: () => VerifyKeyResult | Promise<never>) {
  let calls = 0;
  const client = {
    keys: {
      verifyKey: async () => {
        calls++;
        await new Promise((r) => setTimeout(r, 5));
        return answer();
      },
    },
  } as unknown as KeyServiceClient;
  return { client, calls: () => calls };
}

function verifierFor(client: KeyServiceClient, over: { staleIfError?: number } = {}) {
  const store = memoryStore({ max: 100 });
  const verifier = createVerifier({
    client,
    call: { settings: { timeout: 1000, deadline: 2500, retry: null }, options: { timeout: 1000, deadline: 2500, retry: false } },
    cache: settings,
    store,
    staleIfError: over.staleIfError ?? 0,
    staleMax: 10,
    onServiceError: "closed",
    logger: silentLogger,
  });
  const verify = (key: string, shape = SHAPE) => verifier.verify(key, keyHash(key), shape);
  return { store, verifier, verify };
}

async function settle<T>(p: Promise<T>): Promise<T> {
  await vi.advanceTimersByTimeAsync(10);
  return p;
}

describe("invalidation messages", () => {
  it("round-trip, and anything else is refused", () => {
    for (const m of [invalidateKey("sk_a"), invalidateKeyId("key_1"), invalidateAll()]) {
      expect(parseInvalidation(JSON.stringify(m))).toEqual(m);
    }
    expect(JSON.stringify(invalidateKey("sk_a"))).not.toContain("sk_a");
    for (const bad of [
      "",
      "{",
      "null",
      '{"v":2,"kind":"all"}',
      '{"v":1,"kind":"key","keyHash":"short"}',
      '{"v":1,"kind":"keyId","keyId":""}',
      '{"v":1,"kind":"drop"}',
    ]) {
      expect(parseInvalidation(bad)).toBeUndefined();
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

describe("memoryStore", () => {
  it("keeps an answer for its ttl, by key hash and query", () => {
    const store = memoryStore();
    const miss = store.lookup(ref("a"), 0);
    expect(miss).toMatchObject({ ticket: { ref: ref("a") } });
    store.settle(miss.ticket!, VALID, 1000);
    expect(store.peek(ref("a"))).toEqual(VALID);
    expect(store.peek(ref("a", "x.read"))).toBeUndefined();
    expect(store.lookup(ref("a"), 0)).toEqual({ hit: VALID });
    vi.advanceTimersByTime(1001);
    expect(store.peek(ref("a"))).toBeUndefined();
  });

  it("ttl 0 or no result keeps nothing", () => {
    const store = memoryStore();
    store.settle(store.lookup(ref("a"), 0).ticket!, VALID, 0);
    store.settle(store.lookup(ref("b"), 0).ticket!, undefined, 1000);
    expect(store.size).toBe(0);
  });

  it("invalidates by key (every query), by keyId and all, and tells its listeners", async () => {
    const store = memoryStore();
    const seen: unknown[] = [];
    store.subscribe((m) => seen.push(m));
    const put = (key: string, query: string, result: VerifyKeyResult) =>
      store.settle(store.lookup(ref(key, query), 0).ticket!, result, 1000);
    put("a", "", VALID);
    put("a", "x.read", VALID);
    put("b", "", { ...VALID, keyId: "key_2" });
    put("c", "", { ...VALID, keyId: "key_2" });
    await store.invalidate(invalidateKey("a"));
    expect([store.peek(ref("a")), store.peek(ref("a", "x.read"))]).toEqual([undefined, undefined]);
    expect(store.size).toBe(2);
    await store.invalidate(invalidateKeyId("key_2"));
    expect(store.size).toBe(0);
    put("d", "", VALID);
    await store.invalidate(invalidateAll());
    expect(store.size).toBe(0);
    expect(seen).toEqual([invalidateKey("a"), invalidateKeyId("key_2"), invalidateAll()]);
  });

  it("refuses an answer whose lookup came before an invalidation of its key, keyId or all", async () => {
    for (const message of [invalidateKey("a"), invalidateKeyId("key_1"), invalidateAll()]) {
      const store = memoryStore();
      const ticket = store.lookup(ref("a"), 0).ticket!;
      await store.invalidate(message);
      store.settle(ticket, VALID, 1000);
      expect(store.peek(ref("a"))).toBeUndefined();
      // A lookup after the invalidation stores normally; other keys were never affected.
      store.settle(store.lookup(ref("a"), 0).ticket!, VALID, 1000);
      expect(store.peek(ref("a"))).toEqual(VALID);
    }
    const store = memoryStore();
    const ticket = store.lookup(ref("a"), 0).ticket!;
    await store.invalidate(invalidateKey("other"));
    await store.invalidate(invalidateKeyId("key_other"));
    store.settle(ticket, VALID, 1000);
    expect(store.peek(ref("a"))).toEqual(VALID);
  });

  it("keeps at most max answers", () => {
    const store = memoryStore({ max: 2 });
    for (const key of ["a", "b", "c"]) store.settle(store.lookup(ref(key), 0).ticket!, VALID, 1000);
    expect(store.size).toBe(2);
  });

  it("refuses a bad max and an unknown option name with a ConfigError naming the option", () => {
    const refusal = (options: unknown) => {
      try {
        memoryStore(options as never);
      } catch (err) {
        return err;
      }
      return undefined;
    };
    for (const max of [0, -1, 1.5, "10", Number.NaN, Infinity]) {
      const err = refusal({ max });
      expect(err, String(max)).toBeInstanceOf(ConfigError);
      expect(err).toMatchObject({
        option: "max",
        message: expect.stringMatching(/^memoryStore: invalid option max = .+\. Use a whole number 1\.\.2147483647 \(default 1000\)\.$/),
      });
    }
    expect(refusal({ maxx: 10 })).toMatchObject({
      option: "maxx",
      message: "memoryStore: unknown option maxx (did you mean max?); the options are max.",
    });
    expect(refusal([])).toMatchObject({
      option: "options",
      message: "memoryStore: invalid option options = an array. Pass { max } or nothing.",
    });
    expect(refusal({ max: 1 })).toBeUndefined();
  });
});

describe("the verifier over a store", () => {
  it("reuses a VALID answer until the ttl ends, per query", async () => {
    const c = countingClient(() => VALID);
    const { verify } = verifierFor(c.client);
    expect(await settle(verify("a"))).toMatchObject({ kind: "result", result: VALID });
    await verify("a");
    expect(c.calls()).toBe(1);
    await settle(verify("a", QUERY));
    expect(c.calls()).toBe(2);
    vi.advanceTimersByTime(30_001);
    await settle(verify("a"));
    expect(c.calls()).toBe(3);
  });

  it("keeps NOT_FOUND for negativeTtl only", async () => {
    const c = countingClient(() => NOT_FOUND);
    const { verify } = verifierFor(c.client);
    await settle(verify("nope"));
    await verify("nope");
    expect(c.calls()).toBe(1);
    vi.advanceTimersByTime(5_001);
    await settle(verify("nope"));
    expect(c.calls()).toBe(2);
  });

  it("shares one in-flight call among concurrent requests for a reusable answer", async () => {
    const c = countingClient(() => VALID);
    const { verify } = verifierFor(c.client);
    const all = await settle(Promise.all(Array.from({ length: 5 }, () => verify("a"))));
    expect(all.every((o) => o.kind === "result" && o.result.valid)).toBe(true);
    expect(c.calls()).toBe(1);
  });

  it("does not hand a charged answer to waiters: each verifies on its own, nothing is stored", async () => {
    let remaining = 3;
    const c = countingClient(() =>
      remaining > 0 ? { ...VALID, credits: --remaining } : { valid: false, code: "USAGE_EXCEEDED", keyId: "key_1", credits: 0 },
    );
    const { verify, store } = verifierFor(c.client);
    const runs = Array.from({ length: 5 }, () => verify("a"));
    await vi.advanceTimersByTimeAsync(50);
    const results = await Promise.all(runs);
    expect(results.filter((r) => r.kind === "result" && r.result.valid)).toHaveLength(3);
    expect(c.calls()).toBe(5);
    expect(store.size).toBe(0);
  });

  it("a key marked charged is not joined, and a kept answer from before is not used while marked", async () => {
    let answer: VerifyKeyResult = VALID;
    const c = countingClient(() => answer);
    const { verify, verifier } = verifierFor(c.client);
    await settle(verify("a"));
    answer = { ...VALID, credits: 5 };
    await settle(
      verifier.verify("a", keyHash("a"), planShape({ permissions: undefined, cost: 1, ratelimits: undefined, tags: undefined }).fixed!),
    );
    expect(verifier.peek(keyHash("a"), SHAPE)).toBeUndefined();
    await settle(Promise.all([verify("a"), verify("a")]));
    expect(c.calls()).toBe(4);
    answer = VALID;
    await settle(verify("a")); // a reusable answer clears the mark
    await settle(Promise.all([verify("a"), verify("a")]));
    expect(c.calls()).toBe(5);
  });

  it("never stores failures; waiters share the failure", async () => {
    const c = countingClient(() => Promise.reject(Object.assign(new Error("down"), { code: "KEY_SERVICE_NETWORK_ERROR" })));
    const { verify, store } = verifierFor(c.client);
    const both = await settle(Promise.all([verify("a"), verify("a")]));
    expect(both).toMatchObject([{ kind: "failure" }, { kind: "failure" }]);
    expect(c.calls()).toBe(1);
    expect(store.size).toBe(0);
  });

  it("a revoke while a verification is in flight: its waiters get the answer, nobody keeps it, new requests call again", async () => {
    const c = countingClient(() => VALID);
    const { verify, verifier, store } = verifierFor(c.client);
    const inFlight = verify("a");
    await vi.advanceTimersByTimeAsync(1);
    await verifier.invalidate(invalidateKeyId("key_1"));
    const after = verify("a");
    expect(await settle(inFlight)).toMatchObject({ kind: "result", result: VALID });
    await settle(after);
    expect(c.calls()).toBe(2); // the request after the revoke did not join the call from before
    expect(store.size).toBe(1); // only the answer asked after the revoke
    await verifier.invalidate(invalidateKey("a"));
    expect(verifier.peek(keyHash("a"), SHAPE)).toBeUndefined();
  });

  it("staleIfError: serves a kept VALID answer while the service fails, until an invalidation forgets it", async () => {
    let down = false;
    const c = countingClient(() =>
      down ? Promise.reject(Object.assign(new Error("down"), { code: "KEY_SERVICE_NETWORK_ERROR" })) : VALID,
    );
    const { verify, verifier, store } = verifierFor(c.client, { staleIfError: 60_000 });
    await settle(verify("a"));
    await store.invalidate(invalidateAll()); // the cached answer goes; the stale one with it
    await settle(verify("a"));
    vi.advanceTimersByTime(30_001); // the cached answer expired; the stale one is kept
    down = true;
    expect(await settle(verify("a"))).toMatchObject({ kind: "result", result: VALID });
    await verifier.invalidate(invalidateKeyId("key_1"));
    expect(await settle(verify("a"))).toMatchObject({ kind: "failure" });
  });

  it("staleIfError never serves past the key's expiry or maxAge", async () => {
    let down = false;
    const expires = Date.now() + 40_000;
    const c = countingClient(() =>
      down ? Promise.reject(Object.assign(new Error("down"), { code: "KEY_SERVICE_NETWORK_ERROR" })) : { ...VALID, expires },
    );
    const { verify } = verifierFor(c.client, { staleIfError: 60_000 });
    await settle(verify("a"));
    down = true;
    vi.advanceTimersByTime(30_001);
    expect(await settle(verify("a"))).toMatchObject({ kind: "result" });
    vi.advanceTimersByTime(10_000);
    expect(await settle(verify("a"))).toMatchObject({ kind: "failure" });
  });
});
