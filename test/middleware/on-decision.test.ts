// The onDecision hook: one call per request that reached a decision, with the outcome, the status
// of a denial, the code, the keyId, where the answer came from and the time the service took.
// Real local key service; every scenario on Express 5 and Express 4.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import request from "supertest";
import type { IncomingMessage } from "node:http";
import { apiKeyAuth, ConfigError, getApiKey, silentLogger, type ApiKeyAuthOptions, type AuthDecision } from "keyguard";
import { EXPRESS_VERSIONS, recordingLogger, startService, type ServiceFixture } from "./helpers";
import { GENEROUS } from "../support/time-limits";

let fx: ServiceFixture;
beforeAll(async () => {
  fx = await startService();
});
afterAll(() => fx.close());
afterEach(() => fx.svc.service.setUnavailable(false));

describe.each(EXPRESS_VERSIONS)("$name", ({ express }) => {
  function appWith(options: Partial<ApiKeyAuthOptions> = {}) {
    const decisions: AuthDecision[] = [];
    const requests: IncomingMessage[] = [];
    const app = express();
    app.use(
      apiKeyAuth({
        rootKey: fx.svc.rootKey,
        baseUrl: fx.svc.baseUrl,
        logger: silentLogger,
        retry: false,
        ...GENEROUS,
        onDecision: (decision, req) => {
          decisions.push(decision);
          requests.push(req);
        },
        ...options,
      }),
    );
    app.all("/", (req, res) => {
      res.json({ keyId: getApiKey(req)?.keyId ?? null });
    });
    return { app, decisions, requests };
  }

  it("a miss is answered by the service (with its time), the next request by the cache", async () => {
    const { key, keyId } = await fx.createKeyWithId();
    const { app, decisions, requests } = appWith();
    expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
    expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
    expect(decisions).toEqual([
      { outcome: "admitted", status: undefined, code: "VALID", keyId, source: "service", serviceMs: expect.any(Number) },
      { outcome: "admitted", status: undefined, code: "VALID", keyId, source: "cache", serviceMs: undefined },
    ]);
    expect(decisions[0]!.serviceMs).toBeGreaterThan(0);
    expect(Object.isFrozen(decisions[1])).toBe(true);
    // The hook gets the request it decided about.
    expect(requests[0]!.headers["x-api-key"]).toBe(key);
  });

  it("requests without a key: denied 401 MISSING_KEY; with optional, admitted with that code", async () => {
    const denying = appWith();
    expect((await request(denying.app).get("/")).status).toBe(401);
    expect(denying.decisions).toEqual([
      { outcome: "denied", status: 401, code: "MISSING_KEY", keyId: undefined, source: "none", serviceMs: undefined },
    ]);

    const optional = appWith({ optional: true });
    expect((await request(optional.app).get("/")).status).toBe(200);
    expect(optional.decisions).toEqual([
      { outcome: "admitted", status: undefined, code: "MISSING_KEY", keyId: undefined, source: "none", serviceMs: undefined },
    ]);
  });

  it("malformed credentials: denied 400 INVALID_REQUEST without asking the service", async () => {
    const { app, decisions } = appWith();
    expect((await request(app).get("/").set("Authorization", "Bearer")).status).toBe(400);
    expect(decisions).toEqual([
      { outcome: "denied", status: 400, code: "INVALID_REQUEST", keyId: undefined, source: "none", serviceMs: undefined },
    ]);
  });

  it("an unknown key: NOT_FOUND from the service, then from the cache (negativeTtl)", async () => {
    const { app, decisions } = appWith();
    for (let i = 0; i < 2; i++) expect((await request(app).get("/").set("X-API-Key", "sk_not_a_key_of_this_service")).status).toBe(401);
    expect(decisions.map((d) => [d.outcome, d.status, d.code, d.keyId, d.source])).toEqual([
      ["denied", 401, "NOT_FOUND", undefined, "service"],
      ["denied", 401, "NOT_FOUND", undefined, "cache"],
    ]);
    expect(decisions[0]!.serviceMs).toEqual(expect.any(Number));
    expect(decisions[1]!.serviceMs).toBeUndefined();
  });

  it("a rejected key with an id: its keyId and the status of the policy", async () => {
    const { key, keyId } = await fx.createKeyWithId({ enabled: false });
    const { app, decisions } = appWith({ policy: { DISABLED: { status: 403 } } });
    expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(403);
    expect(decisions).toEqual([
      { outcome: "denied", status: 403, code: "DISABLED", keyId, source: "service", serviceMs: expect.any(Number) },
    ]);
  });

  it("the service unavailable: denied 503 SERVICE_UNAVAILABLE, with the time it took", async () => {
    const key = await fx.createKey();
    fx.svc.service.setUnavailable({ retryAfter: 0 });
    const { app, decisions } = appWith();
    expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(503);
    expect(decisions).toEqual([
      { outcome: "denied", status: 503, code: "SERVICE_UNAVAILABLE", keyId: undefined, source: "service", serviceMs: expect.any(Number) },
    ]);
  });

  it("failing open: admitted without a key, code SERVICE_UNAVAILABLE", async () => {
    fx.svc.service.setUnavailable({ retryAfter: 0 });
    const { app, decisions } = appWith({ onServiceError: "open" });
    const res = await request(app).get("/").set("X-API-Key", "sk_any_key_while_down");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ keyId: null });
    expect(decisions).toEqual([
      {
        outcome: "admitted",
        status: undefined,
        code: "SERVICE_UNAVAILABLE",
        keyId: undefined,
        source: "service",
        serviceMs: expect.any(Number),
      },
    ]);
  });

  it("staleIfError: the kept answer is reported as stale, with the time the failed call took", async () => {
    const { key, keyId } = await fx.createKeyWithId();
    const { app, decisions } = appWith({ cache: false, staleIfError: 60_000 });
    expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
    fx.svc.service.setUnavailable({ retryAfter: 0 });
    expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
    expect(decisions.map((d) => [d.outcome, d.code, d.keyId, d.source])).toEqual([
      ["admitted", "VALID", keyId, "service"],
      ["admitted", "VALID", keyId, "stale"],
    ]);
    expect(decisions[1]!.serviceMs).toEqual(expect.any(Number));
  });

  it("a root key the service rejects: denied 500 VERIFICATION_FAILED from the service", async () => {
    const { app, decisions } = appWith({ rootKey: "root_not_known_here" });
    expect((await request(app).get("/").set("X-API-Key", "sk_some_key_500")).status).toBe(500);
    expect(decisions).toEqual([
      { outcome: "denied", status: 500, code: "VERIFICATION_FAILED", keyId: undefined, source: "service", serviceMs: expect.any(Number) },
    ]);
  });

  it("an option function returning a bad value: denied 500 VERIFICATION_FAILED, nothing asked", async () => {
    const { app, decisions } = appWith({ cost: () => -1 });
    expect((await request(app).get("/").set("X-API-Key", "sk_some_key_cost")).status).toBe(500);
    expect(decisions).toEqual([
      { outcome: "denied", status: 500, code: "VERIFICATION_FAILED", keyId: undefined, source: "none", serviceMs: undefined },
    ]);
  });

  it("getKey: a cache hit found through it is reported as such", async () => {
    const { key, keyId } = await fx.createKeyWithId();
    const { app, decisions } = appWith({ getKey: async (req) => String(req.headers["x-token"] ?? "") });
    for (let i = 0; i < 2; i++) expect((await request(app).get("/").set("X-Token", key)).status).toBe(200);
    expect(decisions.map((d) => [d.code, d.keyId, d.source])).toEqual([
      ["VALID", keyId, "service"],
      ["VALID", keyId, "cache"],
    ]);
  });

  it("CORS preflights let through without credentials are not decisions: no call", async () => {
    const { app, decisions } = appWith();
    const res = await request(app).options("/").set("Origin", "https://app.example").set("Access-Control-Request-Method", "GET");
    expect(res.status).toBe(200);
    expect(decisions).toEqual([]);
  });

  it("a throwing hook never changes the answer, and is logged once per interval without its message", async () => {
    const key = await fx.createKey();
    const logger = recordingLogger();
    const { app } = appWith({
      logger,
      onDecision: () => {
        throw new TypeError(`hook failed for ${key}`);
      },
    });
    for (let i = 0; i < 3; i++) expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
    expect((await request(app).get("/")).status).toBe(401);
    expect(logger.entries).toEqual([
      {
        level: "error",
        fields: { error: "TypeError", suppressedSinceLastLog: 0 },
        message: "apiKeyAuth: onDecision threw; the request goes on as decided",
      },
    ]);
    expect(JSON.stringify(logger.entries)).not.toContain(key);
  });

  it("a hook returning a rejected promise is logged the same way", async () => {
    const logger = recordingLogger();
    const { app } = appWith({ logger, onDecision: (async () => Promise.reject(new RangeError("late"))) as never });
    expect((await request(app).get("/")).status).toBe(401);
    await new Promise((resolve) => setImmediate(resolve));
    expect(logger.entries).toEqual([
      {
        level: "error",
        fields: { error: "RangeError", suppressedSinceLastLog: 0 },
        message: "apiKeyAuth: onDecision threw; the request goes on as decided",
      },
    ]);
  });

  it("never the key: not in any decision", async () => {
    const key = await fx.createKey();
    const { app, decisions } = appWith();
    await request(app).get("/").set("X-API-Key", key);
    await request(app).get("/").set("X-API-Key", key);
    await request(app).get("/").set("X-API-Key", `${key}x`);
    expect(decisions).toHaveLength(3);
    expect(JSON.stringify(decisions)).not.toContain(key.slice(4));
  });
});

describe("the onDecision option", () => {
  it("must be a function", () => {
    expect(() => apiKeyAuth({ rootKey: "root_x", onDecision: "log" as never })).toThrow(ConfigError);
    expect(() => apiKeyAuth({ rootKey: "root_x", onDecision: "log" as never })).toThrow(
      /invalid option onDecision = "log"\. Pass a function/,
    );
  });
});
