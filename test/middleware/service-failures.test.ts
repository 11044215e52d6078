// When the key service fails: 503 (down, hanging, 5xx, workspace rate limit), 500 for this
// server's misconfiguration, failing open, and staleIfError. Real local service; stubs for faults.
// Every scenario runs on Express 5 and Express 4.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { Response } from "express";
import request from "supertest";
import { createClient } from "keyguard/client";
import { apiKeyAuth, getApiKey, silentLogger, type ApiKeyAuthOptions, type KeyguardError } from "keyguard";
import express5 from "express";
import { webApiKeyAuth } from "keyguard/web";
import { refusedUrl } from "../support/loopback-ports";
import { EXPRESS_VERSIONS, recordingLogger, startService, startStub, type ServiceFixture } from "./helpers";
import { GENEROUS } from "../support/time-limits";

// The service clock; the EXPIRED scenario moves it forward.
let clock = Date.now();
let fx: ServiceFixture;
beforeAll(async () => {
  fx = await startService({ now: () => clock });
});
afterAll(() => fx.close());
afterEach(() => {
  fx.svc.service.setUnavailable(false);
  vi.useRealTimers();
});

const local = (extra: Partial<ApiKeyAuthOptions> = {}): ApiKeyAuthOptions => ({
  rootKey: fx.svc.rootKey,
  baseUrl: fx.svc.baseUrl,
  logger: silentLogger,
  ...GENEROUS,
  ...extra,
});

describe.each(EXPRESS_VERSIONS)("$name", ({ express }) => {
  function appWith(options: ApiKeyAuthOptions) {
    const denied: KeyguardError[] = [];
    const app = express();
    const auth = apiKeyAuth({
      onDenied: (err, _req, res: Response) => {
        denied.push(err);
        res.status(err.status).set(err.headers).json({ code: err.code });
      },
      ...options,
    });
    app.get("/", auth, (req, res) => res.json({ keyId: getApiKey(req)?.keyId ?? null }));
    return { app, denied, auth };
  }

  describe("service unavailable → 503", () => {
    it("connection refused: 503 with Retry-After after one retry", async () => {
      const { app, denied } = appWith({ rootKey: "root_key_x", baseUrl: await refusedUrl(), logger: silentLogger, ...GENEROUS });
      const res = await request(app).get("/").set("X-API-Key", "sk_whatever");
      expect(res.status).toBe(503);
      expect(res.headers["retry-after"]).toBe("5");
      expect(denied[0]!.cause).toMatchObject({ code: "KEY_SERVICE_NETWORK_ERROR", attempts: 2 });
    });

    it("connection refused with a deadline shorter than timeout + retry: still 503 (the retry's timeout is capped)", async () => {
      const { app, denied } = appWith({
        rootKey: "root_key_x",
        baseUrl: await refusedUrl(),
        logger: silentLogger,
        timeout: 20_000,
        deadline: 10_000,
      });
      const res = await request(app).get("/").set("X-API-Key", "sk_whatever");
      expect(res.status).toBe(503);
      expect(res.headers["retry-after"]).toBe("5");
      expect(res.body).toEqual({ code: "SERVICE_UNAVAILABLE" });
      expect(denied[0]!.cause).toMatchObject({ code: "KEY_SERVICE_NETWORK_ERROR", attempts: 2 });
    });

    it("the default answer is problem+json without the service's body", async () => {
      const key = await fx.createKey();
      fx.svc.service.setUnavailable({ retryAfter: 7 });
      const app = express().get("/", apiKeyAuth(local({ retry: false })), (_req, res) => res.send("ok"));
      const res = await request(app).get("/").set("X-API-Key", key);
      expect(res.status).toBe(503);
      expect(res.headers["retry-after"]).toBe("7");
      expect(res.headers["content-type"]).toBe("application/problem+json; charset=utf-8");
      expect(res.body).toEqual({
        type: "urn:keyguard:problem:service-unavailable",
        title: "Service Unavailable",
        status: 503,
        detail: "The API key could not be verified right now. Try again later.",
        code: "SERVICE_UNAVAILABLE",
        requestId: expect.stringMatching(/^req_/),
      });
    });

    it("one 503 is absorbed by the single retry", async () => {
      const key = await fx.createKey();
      fx.svc.service.setUnavailable({ failures: 1, retryAfter: 0 });
      const { app } = appWith(local());
      const res = await request(app).get("/").set("X-API-Key", key);
      expect(res.status).toBe(200);
      expect(res.body.keyId).toMatch(/^key_/);
    });

    it("a hanging service: 503 when the attempt timeout ends, no retry", async () => {
      let received = 0;
      const stub = await startStub(() => {
        received++; // never answers
      });
      try {
        const { app, denied } = appWith({ rootKey: "root_key_x", baseUrl: stub.baseUrl, logger: silentLogger, timeout: 150 });
        const res = await request(app).get("/").set("X-API-Key", "sk_whatever");
        expect(res.status).toBe(503);
        expect(denied[0]!.cause).toMatchObject({ code: "KEY_SERVICE_TIMEOUT", scope: "attempt", timeout: 150 });
        expect(received).toBe(1);
      } finally {
        await stub.close();
      }
    });

    it.each([
      { name: "500 from the service", status: 500, headers: {}, retryAfter: "5" },
      { name: "429 workspace_rate_limited", status: 429, headers: { "Retry-After": "3" }, retryAfter: "3" },
    ])("$name → 503", async ({ status, headers, retryAfter }) => {
      const stub = await startStub((_req, res) => {
        res.writeHead(status, { "Content-Type": "application/json", ...headers });
        res.end(
          JSON.stringify({
            meta: { requestId: "req_s" },
            error: { title: "x", detail: "secret upstream detail", status, type: "about:blank" },
          }),
        );
      });
      try {
        const app = express().get(
          "/",
          apiKeyAuth({ rootKey: "root_key_x", baseUrl: stub.baseUrl, logger: silentLogger, ...GENEROUS }),
          (_q, r) => r.send("ok"),
        );
        const res = await request(app).get("/").set("X-API-Key", "sk_whatever");
        expect(res.status).toBe(503);
        expect(res.headers["retry-after"]).toBe(retryAfter);
        expect(res.text).not.toContain("secret upstream detail");
      } finally {
        await stub.close();
      }
    });

    it("a 2xx that is not an envelope → 503", async () => {
      const stub = await startStub((_req, res) => res.end("<html>hello</html>"));
      try {
        const { app, denied } = appWith({ rootKey: "root_key_x", baseUrl: stub.baseUrl, logger: silentLogger, ...GENEROUS });
        expect((await request(app).get("/").set("X-API-Key", "sk_whatever")).status).toBe(503);
        expect(denied[0]!.cause).toMatchObject({ code: "KEY_SERVICE_INVALID_RESPONSE" });
      } finally {
        await stub.close();
      }
    });
  });

  describe("misconfiguration → 500 with an error log", () => {
    it.each([
      { name: "unknown root key (service 401)", rootKey: async () => "root_not_known_123", extra: {} },
      {
        name: "unknown rate limit name (service 412)",
        rootKey: async () => fx.svc.rootKey,
        extra: { ratelimits: [{ name: "no_such_limit" }] },
      },
    ])("$name", async ({ rootKey, extra }) => {
      const root = await rootKey();
      const logger = recordingLogger();
      const key = await fx.createKey();
      const app = express().get("/", apiKeyAuth({ rootKey: root, baseUrl: fx.svc.baseUrl, logger, ...GENEROUS, ...extra }), (_q, r) =>
        r.send("ok"),
      );
      const res = await request(app).get("/").set("X-API-Key", key);
      expect(res.status).toBe(500);
      expect(res.body).toMatchObject({
        status: 500,
        code: "VERIFICATION_FAILED",
        detail: "The request could not be authenticated because of a server error.",
      });
      expect(res.headers["www-authenticate"]).toBeUndefined();
      expect(logger.entries).toHaveLength(1);
      expect(logger.entries[0]).toMatchObject({ level: "error", fields: { code: "KEY_SERVICE_HTTP_ERROR" } });
      const logged = JSON.stringify(logger.entries);
      expect(logged).not.toContain(root);
      expect(logged).not.toContain(key);
    });

    it("a root key that may verify no API's keys: 500 VERIFICATION_FAILED (the service answers 403), logged without secrets", async () => {
      const logger = recordingLogger();
      const { rootKey: root } = await fx.svc.service.createRootKey({ permissions: ["api.*.read_key"] });
      const key = await fx.createKey();
      const app = express().get("/", apiKeyAuth({ rootKey: root, baseUrl: fx.svc.baseUrl, logger, ...GENEROUS }), (_q, r) => r.send("ok"));
      const res = await request(app).get("/").set("X-API-Key", key);
      expect(res.status).toBe(500);
      expect(res.body).toMatchObject({ code: "VERIFICATION_FAILED" });
      const logged = JSON.stringify(logger.entries);
      expect(logged).not.toContain(root);
      expect(logged).not.toContain(key);
    });

    it("a root key that may verify another API's keys only: every key of this API is NOT_FOUND (401), as production masks it", async () => {
      const { apiId } = await fx.svc.service.createApi({ name: "another" });
      const { rootKey: root } = await fx.svc.service.createRootKey({ permissions: [`api.${apiId}.verify_key`] });
      const key = await fx.createKey();
      const app = express().get("/", apiKeyAuth({ rootKey: root, baseUrl: fx.svc.baseUrl, logger: silentLogger, ...GENEROUS }), (_q, r) =>
        r.send("ok"),
      );
      const res = await request(app).get("/").set("X-API-Key", key);
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ code: "NOT_FOUND" });
    });

    it("a computed permission query that does not parse: 500 without a service call", async () => {
      const logger = recordingLogger();
      let calls = 0;
      const client = createClient({
        rootKey: fx.svc.rootKey,
        baseUrl: fx.svc.baseUrl,
        logger: silentLogger,
        fetch: (i, init) => {
          calls++;
          return fetch(i, init);
        },
      });
      const app = express().get("/", apiKeyAuth({ client, logger, permissions: () => "docs.read AND (" }), (_q, r) => r.send("ok"));
      const res = await request(app).get("/").set("X-API-Key", "sk_whatever");
      expect(res.status).toBe(500);
      expect(calls).toBe(0);
      expect(logger.entries[0]).toMatchObject({ level: "error" });
    });
  });

  describe("onServiceError: 'open'", () => {
    it("lets requests through without a key and warns once per interval", async () => {
      const logger = recordingLogger();
      const { app } = appWith({
        rootKey: "root_key_x",
        baseUrl: await refusedUrl(),
        logger,
        onServiceError: "open",
        retry: false,
        ...GENEROUS,
      });
      for (let i = 0; i < 3; i++) {
        const res = await request(app).get("/").set("X-API-Key", "sk_whatever");
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ keyId: null });
      }
      expect(logger.entries).toHaveLength(1);
      expect(logger.entries[0]).toMatchObject({ level: "warn", message: expect.stringContaining("unauthenticated") });
    });

    it("still denies a missing key and misconfiguration", async () => {
      const { app } = appWith({
        rootKey: "root_not_known_123",
        baseUrl: fx.svc.baseUrl,
        logger: silentLogger,
        onServiceError: "open",
        ...GENEROUS,
      });
      expect((await request(app).get("/")).status).toBe(401);
      expect((await request(app).get("/").set("X-API-Key", "sk_x")).status).toBe(500);
    });

    it("stays closed on the service's 429 workspace_rate_limited (random keys must not open the gate)", async () => {
      let received = 0;
      const stub = await startStub((_req, res) => {
        received++;
        res.writeHead(429, { "Content-Type": "application/json", "Retry-After": "4" });
        res.end(
          JSON.stringify({
            meta: { requestId: "req_rl" },
            error: {
              title: "Too Many Requests",
              detail: "workspace rate limited",
              status: 429,
              type: "https://unkey.com/docs/errors/user/too_many_requests/workspace_rate_limited",
            },
          }),
        );
      });
      try {
        const logger = recordingLogger();
        const { app } = appWith({ rootKey: "root_key_x", baseUrl: stub.baseUrl, logger, onServiceError: "open", ...GENEROUS });
        const res = await request(app).get("/").set("X-API-Key", "sk_random_guess");
        expect(res.status).toBe(503);
        expect(res.headers["retry-after"]).toBe("4");
        expect(res.body).toEqual({ code: "SERVICE_UNAVAILABLE" });
        expect(received).toBe(1);
        expect(logger.entries).toHaveLength(1);
        expect(logger.entries[0]!.message).toContain("answering 503");
        expect(logger.entries[0]!.message).not.toContain("unauthenticated");
      } finally {
        await stub.close();
      }
    });
  });

  describe("staleIfError", () => {
    it("serves the last VALID answer while the service is down, up to the age limit", async () => {
      vi.useFakeTimers({ toFake: ["Date"] });
      const key = await fx.createKey({ name: "stale" });
      const logger = recordingLogger();
      const { app } = appWith(local({ cache: false, staleIfError: 60_000, retry: false, logger }));
      const first = await request(app).get("/").set("X-API-Key", key);
      expect(first.status).toBe(200);

      fx.svc.service.setUnavailable(true);
      const stale = await request(app).get("/").set("X-API-Key", key);
      expect(stale.status).toBe(200);
      expect(stale.body.keyId).toBe(first.body.keyId);
      expect(logger.entries[0]).toMatchObject({ level: "warn", message: expect.stringContaining("staleIfError") });

      vi.setSystemTime(Date.now() + 60_001);
      expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(503);
    });

    it("never serves a stale answer for a key with credits", async () => {
      const key = await fx.createKey({ credits: { remaining: 10 } });
      const { app } = appWith(local({ staleIfError: 60_000, retry: false }));
      expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
      fx.svc.service.setUnavailable(true);
      expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(503);
    });

    it("invalidate(key) forgets the stale answer", async () => {
      const key = await fx.createKey();
      const { app, auth } = appWith(local({ staleIfError: 60_000, retry: false }));
      expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
      auth.invalidate(key);
      fx.svc.service.setUnavailable(true);
      expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(503);
    });

    // A later answer that is not a reusable VALID must make the stale answer go away: otherwise a
    // disabled (deleted, expired, …) key passes again as soon as the service is down.
    const CHANGES: Array<{
      name: string;
      input?: () => Record<string, unknown>;
      permissions?: string;
      change: (k: { key: string; keyId: string }) => Promise<unknown> | void;
      then: number;
    }> = [
      { name: "disabled (DISABLED)", change: ({ keyId }) => fx.client.keys.updateKey({ keyId, enabled: false }), then: 401 },
      { name: "deleted (NOT_FOUND)", change: ({ keyId }) => fx.client.keys.deleteKey({ keyId }), then: 401 },
      { name: "expired (EXPIRED)", input: () => ({ expires: clock + 60_000 }), change: () => void (clock += 120_000), then: 401 },
      {
        name: "permission removed (INSUFFICIENT_PERMISSIONS)",
        input: () => ({ permissions: ["docs.read"] }),
        permissions: "docs.read",
        change: ({ keyId }) => fx.client.keys.removePermissions({ keyId, permissions: ["docs.read"] }),
        then: 403,
      },
      { name: "now has credits", change: ({ keyId }) => fx.client.keys.updateCredits({ keyId, operation: "set", value: 10 }), then: 200 },
      {
        name: "now has a rate limit",
        change: ({ keyId }) =>
          fx.client.keys.updateKey({ keyId, ratelimits: [{ name: "requests", limit: 100, duration: 60_000, autoApply: true }] }),
        then: 200,
      },
    ];
    const CACHES = [
      { cacheName: "cache off", cache: false as const },
      { cacheName: "cache on (nothing stored)", cache: { ttl: 0, negativeTtl: 0 } },
    ];

    describe.each(CACHES)("$cacheName", ({ cache }) => {
      it.each(CHANGES)("key $name: the stale answer is dropped", async ({ input, permissions, change, then }) => {
        const created = await fx.createKeyWithId(input?.() ?? {});
        const { app } = appWith(local({ cache, staleIfError: 600_000, retry: false, ...(permissions ? { permissions } : {}) }));
        expect((await request(app).get("/").set("X-API-Key", created.key)).status).toBe(200);
        await change(created);
        expect((await request(app).get("/").set("X-API-Key", created.key)).status).toBe(then);
        fx.svc.service.setUnavailable(true);
        const down = await request(app).get("/").set("X-API-Key", created.key);
        expect(down.status).toBe(503);
        expect(down.body).toEqual({ code: "SERVICE_UNAVAILABLE" });
      });
    });

    it.each([
      { name: "disabled", change: (keyId: string) => fx.client.keys.updateKey({ keyId, enabled: false }), then: 401 },
      { name: "given credits", change: (keyId: string) => fx.client.keys.updateCredits({ keyId, operation: "set", value: 10 }), then: 200 },
    ])("a key $name, seen with one request shape, loses its stale answers for every shape", async ({ change, then }) => {
      const { key, keyId } = await fx.createKeyWithId({ permissions: ["docs.read"] });
      // One apiKeyAuth() whose request shape depends on the path: no query, a query, or a cost.
      const path = (req: { url?: string }) => new URL(req.url ?? "/", "http://x").pathname;
      const auth = apiKeyAuth(
        local({
          cache: false,
          staleIfError: 600_000,
          retry: false,
          permissions: (req) => (path(req) === "/read" ? "docs.read" : undefined),
          cost: (req) => (path(req) === "/charged" ? 1 : undefined),
        }),
      );
      const app = express().get(["/", "/read", "/charged"], auth, (_q, r) => r.send("ok"));
      expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
      expect((await request(app).get("/read").set("X-API-Key", key)).status).toBe(200);
      await change(keyId);
      // Seen with a shape whose answers are never kept (cost), yet it clears what the others kept.
      expect((await request(app).get("/charged").set("X-API-Key", key)).status).toBe(then);
      fx.svc.service.setUnavailable(true);
      expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(503);
      expect((await request(app).get("/read").set("X-API-Key", key)).status).toBe(503);
    });
  });
});

describe("the log line of a network failure names the service's URL and the cause", () => {
  /** An https:// URL to a plain HTTP server: the TLS handshake fails. */
  async function plainHttpAsHttps(): Promise<{ url: string; close: () => Promise<void> }> {
    const stub = await startStub((_req, res) => res.end("not TLS"));
    return { url: stub.baseUrl.replace(/^http:/, "https:"), close: stub.close };
  }

  it.each([
    ["Express (undici's pool)", "express"],
    ["keyguard/web (fetch)", "web"],
  ] as const)("%s: connection refused, then a TLS failure", async (_name, adapter) => {
    const refused = await refusedUrl("/prefix");
    const tls = await plainHttpAsHttps();
    try {
      for (const [baseUrl, cause] of [
        [refused, /^ECONNREFUSED$/],
        [tls.url, /SSL|TLS|EPROTO/],
      ] as const) {
        const logger = recordingLogger();
        const options = { rootKey: "root_key_secret_x", baseUrl, logger, retry: false as const, ...GENEROUS };
        let status: number;
        if (adapter === "express") {
          const app = express5().get("/", apiKeyAuth(options), (_q, r) => r.send("ok"));
          status = (await request(app).get("/").set("X-API-Key", "sk_caller_secret")).status;
        } else {
          const answer = await webApiKeyAuth(options)(new Request("http://app.test/", { headers: { "x-api-key": "sk_caller_secret" } }));
          status = answer instanceof Response ? answer.status : 200;
        }
        expect(status).toBe(503);
        expect(logger.entries).toHaveLength(1);
        const { fields, message } = logger.entries[0]!;
        expect(message).toBe("apiKeyAuth: key service unavailable; answering 503");
        expect(fields).toMatchObject({ code: "KEY_SERVICE_NETWORK_ERROR", url: `${baseUrl}/v2/keys.verifyKey` });
        expect(fields.cause).toMatch(cause);
        expect(JSON.stringify(logger.entries)).not.toMatch(/secret/);
      }
    } finally {
      await tls.close();
    }
  });
});
