// apiKeyAuth({ unknownKeyLimit }) against a real key service on port 0: after `max` unknown or
// malformed keys from one client address, that address's keys are answered 429 with Retry-After
// without a call to the service (its calls are counted) until the window ends; a key the cache
// holds as valid still passes; the address is the framework's (X-Forwarded-For only with Express's
// `trust proxy`); the memory store's counters; the options, checked at factory time.
import express from "express";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKeyAuth, ConfigError, memoryStore, silentLogger, type ApiKeyAuthOptions, type AuthDecision, type Store } from "keyguard";
import { webApiKeyAuth } from "keyguard/web";
import { countingClient, startService, type ServiceFixture } from "./helpers";
import { GENEROUS } from "../support/time-limits";

let fx: ServiceFixture;
beforeAll(async () => {
  fx = await startService();
});
afterAll(() => fx.close());

let serial = 0;
/** A key of the ordinary format that no API holds. */
const unknownKey = () => `sk_unknown${++serial}xxxxxxxxxxxxxxxxxxxx`;
/** A key of the checksummed format whose checksum fails: refused without a call. */
const badChecksum = () => `sk_kg0${"A".repeat(22)}${String(++serial).padStart(6, "1").slice(-6).replace(/0/g, "1")}`;

function appWith(options: ApiKeyAuthOptions & { trustProxy?: boolean }) {
  const { client, calls } = countingClient(fx.svc);
  const decisions: AuthDecision[] = [];
  const { trustProxy, ...rest } = options;
  const app = express();
  if (trustProxy) app.set("trust proxy", true);
  app.get("/", apiKeyAuth({ client, logger: silentLogger, onDecision: (d) => decisions.push(d), ...GENEROUS, ...rest }), (_req, res) => {
    res.send("ok");
  });
  const get = (key: string, forwardedFor?: string) => {
    const r = request(app).get("/").set("Authorization", `Bearer ${key}`);
    return forwardedFor === undefined ? r : r.set("X-Forwarded-For", forwardedFor);
  };
  return { app, calls, decisions, get };
}

describe("unknownKeyLimit", () => {
  it("after max unknown keys from one address the next keys get 429 with Retry-After, without a call", async () => {
    const { calls, decisions, get } = appWith({ unknownKeyLimit: { max: 3, window: 60_000 } });
    for (let i = 0; i < 3; i++) expect((await get(unknownKey())).status).toBe(401);
    expect(calls.count).toBe(3);
    for (let i = 0; i < 5; i++) {
      const res = await get(unknownKey());
      expect(res.status).toBe(429);
      expect(res.body.code).toBe("TOO_MANY_UNKNOWN_KEYS");
      expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1);
      expect(Number(res.headers["retry-after"])).toBeLessThanOrEqual(60);
    }
    // A malformed key is answered the same.
    expect((await get(badChecksum())).status).toBe(429);
    expect(calls.count).toBe(3);
    expect(decisions.at(-1)).toMatchObject({ outcome: "denied", status: 429, code: "TOO_MANY_UNKNOWN_KEYS", source: "none" });
  });

  it("malformed keys count too: bad checksums are refused offline, then an unknown key gets 429 without a call", async () => {
    const { calls, get } = appWith({ unknownKeyLimit: { max: 2, window: 60_000 } });
    const first = await get(badChecksum());
    expect(first.status).toBe(401);
    expect(first.body.code).toBe("INVALID_CHECKSUM");
    expect((await get(badChecksum())).status).toBe(401);
    expect((await get(unknownKey())).status).toBe(429);
    expect(calls.count).toBe(0);
  });

  it("a key the cache holds as valid still passes a blocked address; a valid key not known yet does not", async () => {
    const known = await fx.createKey();
    const fresh = await fx.createKey();
    const { calls, get } = appWith({ unknownKeyLimit: { max: 2, window: 60_000 } });
    expect((await get(known)).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await get(unknownKey())).status).toBe(401);
    expect((await get(unknownKey())).status).toBe(429);
    const before = calls.count;
    expect((await get(known)).status).toBe(200);
    expect((await get(fresh)).status).toBe(429);
    expect(calls.count).toBe(before);
  });

  it("once the window has passed, the address's keys reach the service again", async () => {
    const { calls, get } = appWith({ unknownKeyLimit: { max: 1, window: 1000 } });
    expect((await get(unknownKey())).status).toBe(401);
    expect((await get(unknownKey())).status).toBe(429);
    const valid = await fx.createKey();
    await expect.poll(async () => (await get(valid)).status, { timeout: 30_000, interval: 200 }).toBe(200);
    expect(calls.count).toBe(2);
  });

  it("without the option nothing is limited", async () => {
    const { calls, get } = appWith({});
    for (let i = 0; i < 8; i++) expect((await get(unknownKey())).status).toBe(401);
    expect(calls.count).toBe(8);
  });

  it("X-Forwarded-For counts only when Express trusts the proxy", async () => {
    const ignored = appWith({ unknownKeyLimit: { max: 2, window: 60_000 } });
    for (let i = 0; i < 2; i++) expect((await ignored.get(unknownKey(), `203.0.113.${i}`)).status).toBe(401);
    expect((await ignored.get(unknownKey(), "203.0.113.99")).status).toBe(429);

    const trusted = appWith({ unknownKeyLimit: { max: 2, window: 60_000 }, trustProxy: true });
    for (let i = 0; i < 2; i++) expect((await trusted.get(unknownKey(), "203.0.113.7")).status).toBe(401);
    expect((await trusted.get(unknownKey(), "203.0.113.7")).status).toBe(429);
    // Another address is not blocked.
    expect((await trusted.get(unknownKey(), "203.0.113.8")).status).toBe(401);
  });

  it("an app's own address function decides; undefined leaves a request uncounted", async () => {
    let address: string | undefined = "a";
    const { calls, get } = appWith({ unknownKeyLimit: { max: 1, window: 60_000, address: () => address } });
    expect((await get(unknownKey())).status).toBe(401);
    expect((await get(unknownKey())).status).toBe(429);
    address = undefined;
    expect((await get(unknownKey())).status).toBe(401);
    expect((await get(unknownKey())).status).toBe(401);
    address = "b";
    expect((await get(unknownKey())).status).toBe(401);
    expect(calls.count).toBe(4);
  });

  it("with cache: false the counts are kept in the process", async () => {
    const { calls, get } = appWith({ cache: false, unknownKeyLimit: { max: 1, window: 60_000 } });
    expect((await get(unknownKey())).status).toBe(401);
    expect((await get(unknownKey())).status).toBe(429);
    expect(calls.count).toBe(1);
  });

  it("the Web adapter counts by the address function it is given", async () => {
    const { client, calls } = countingClient(fx.svc);
    const auth = webApiKeyAuth({ client, logger: silentLogger, ...GENEROUS, unknownKeyLimit: { max: 1, address: () => "198.51.100.1" } });
    const ask = (key: string) => auth(new Request("http://app.test/", { headers: { authorization: `Bearer ${key}` } }));
    const first = await ask(unknownKey());
    expect(first instanceof Response && first.status).toBe(401);
    const second = await ask(unknownKey());
    expect(second instanceof Response && second.status).toBe(429);
    expect(second instanceof Response && second.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(calls.count).toBe(1);
  });
});

describe("unknownKeyLimit's options", () => {
  const client = () => countingClient(fx.svc).client;
  it("refuses a missing or bad max, a short window and a store without count()", () => {
    expect(() => apiKeyAuth({ client: client(), unknownKeyLimit: {} as never })).toThrow(ConfigError);
    expect(() => apiKeyAuth({ client: client(), unknownKeyLimit: { max: 0 } })).toThrow(/unknownKeyLimit\.max/);
    expect(() => apiKeyAuth({ client: client(), unknownKeyLimit: { max: 5, window: 10 } })).toThrow(/unknownKeyLimit\.window/);
    const { count: _count, ...rest } = memoryStore();
    void _count;
    expect(() => apiKeyAuth({ client: client(), store: rest as Store, unknownKeyLimit: { max: 5 } })).toThrow(/count\(\)/);
    expect(() => apiKeyAuth({ client: client(), policy: { TOO_MANY_UNKNOWN_KEYS: 401 } as never })).toThrow(/TOO_MANY_UNKNOWN_KEYS/);
  });

  it("the Web adapter, which sees no address, wants an address function", () => {
    expect(() => webApiKeyAuth({ client: client(), unknownKeyLimit: { max: 5 } })).toThrow(/unknownKeyLimit\.address/);
    expect(() => webApiKeyAuth({ client: client(), unknownKeyLimit: false })).not.toThrow();
  });
});

describe("memoryStore().count", () => {
  it("counts in a fixed window opened by the first addition; 0 only reads", async () => {
    const store = memoryStore();
    expect(store.count("a", 0, 1000)).toEqual({ count: 0, resetMs: 0 });
    expect(store.count("a", 1, 1000).count).toBe(1);
    const second = store.count("a", 1, 1000);
    expect(second.count).toBe(2);
    expect(second.resetMs).toBeGreaterThan(0);
    expect(second.resetMs).toBeLessThanOrEqual(1000);
    expect(store.count("a", 0, 1000).count).toBe(2);
    expect(store.count("b", 0, 1000).count).toBe(0);
    await expect.poll(() => store.count("a", 0, 1000).count, { timeout: 30_000, interval: 100 }).toBe(0);
    expect(store.count("a", 1, 1000).count).toBe(1);
  });
});
