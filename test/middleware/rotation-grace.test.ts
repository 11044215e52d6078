// apiKeyAuth({ rotationHeaders }) over a reroll's whole grace, on Express against the real local key
// service whose clock the test moves: the old key answers Deprecation and Sunset (its expiry, the end
// of the grace) on every request until the grace ends, then is refused as EXPIRED without them; the
// new key and a key without an expiry never get them, nor does a route without the option.
import express from "express";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKeyAuth, silentLogger } from "keyguard";
import { startService, type ServiceFixture } from "./helpers";
import { GENEROUS } from "../support/time-limits";

const GRACE = 10 * 60_000;
const HOUR = 3_600_000;
// The service's clock: real time plus what the test moves it by (the middleware reads real time).
let offset = 0;
let fx: ServiceFixture;
let app: express.Express;

beforeAll(async () => {
  fx = await startService({ now: () => Date.now() + offset });
  const base = { rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, ...GENEROUS, cache: false as const, logger: silentLogger };
  app = express();
  app.get("/rotation", apiKeyAuth({ ...base, rotationHeaders: { window: HOUR } }), (_req, res) => {
    res.send("ok");
  });
  app.get("/plain", apiKeyAuth(base), (_req, res) => {
    res.send("ok");
  });
});
afterAll(() => fx?.close());

const call = (path: string, key: string) => request(app).get(path).set("Authorization", `Bearer ${key}`);

describe("rotationHeaders over a reroll's grace", () => {
  it("the old key is told until the grace ends, then refused; other keys and the plain route are never told", async () => {
    const old = await fx.createKeyWithId();
    const normal = await fx.createKey();
    const before = await call("/rotation", old.key).expect(200);
    expect([before.headers.deprecation, before.headers.sunset]).toEqual([undefined, undefined]);

    const rerolled = await fx.client.keys.rerollKey({ keyId: old.keyId, expiration: GRACE });
    const { expires } = await fx.client.keys.getKey({ keyId: old.keyId });
    expect(expires).toBeGreaterThan(Date.now());
    const told = { deprecation: `@${Math.floor((expires! - HOUR) / 1000)}`, sunset: new Date(expires!).toUTCString() };

    // During the grace: every request of the old key, the same two headers.
    for (const step of [0, GRACE / 2]) {
      offset = step;
      const res = await call("/rotation", old.key).expect(200);
      expect({ deprecation: res.headers.deprecation, sunset: res.headers.sunset }, `at +${step} ms`).toEqual(told);
    }
    for (const res of [await call("/rotation", rerolled.key), await call("/rotation", normal), await call("/plain", old.key)]) {
      expect(res.status).toBe(200);
      expect([res.headers.deprecation, res.headers.sunset]).toEqual([undefined, undefined]);
    }

    // The grace over: the old key is refused, and a denial carries neither header.
    offset = GRACE + 60_000;
    const after = await call("/rotation", old.key);
    expect(after.status).toBe(401);
    expect(after.body).toMatchObject({ code: "EXPIRED" });
    expect([after.headers.deprecation, after.headers.sunset]).toEqual([undefined, undefined]);
    const fresh = await call("/rotation", rerolled.key).expect(200);
    expect(fresh.headers.deprecation).toBeUndefined();
  });
});
