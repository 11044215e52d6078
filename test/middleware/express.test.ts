// apiKeyAuth() features on Express 5 and Express 4 (one scenario list): req.apiKey, optional
// auth, hideCredentials, preflight, onDenied, passErrors, getKey, guards, misuse. Real local service.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import request from "supertest";
import type { ErrorRequestHandler, Response } from "express";
import {
  apiKeyAuth,
  getApiKey,
  isKeyguardError,
  requireAnyPermission,
  requireKey,
  requirePermissions,
  requireRoles,
  silentLogger,
  type ApiKeyAuthOptions,
} from "keyguard";
import { webApiKeyAuth, type WebApiKeyAuthOptions } from "keyguard/web";
import { EXPRESS_VERSIONS, startService, type ServiceFixture } from "./helpers";
import { GENEROUS } from "../support/time-limits";

let fx: ServiceFixture;
let plainKey: string;
let editorKey: string;

beforeAll(async () => {
  fx = await startService();
  await fx.client.permissions.createRole({ name: "editor", permissions: ["docs.read", "docs.write"] });
  plainKey = await fx.createKey({ name: "plain", meta: { plan: "free" } });
  editorKey = await fx.createKey({ name: "editor", roles: ["editor"], permissions: ["billing.read"] });
});
afterAll(() => fx.close());

const base = (extra: Partial<ApiKeyAuthOptions> = {}): ApiKeyAuthOptions => ({
  rootKey: fx.svc.rootKey,
  baseUrl: fx.svc.baseUrl,
  logger: silentLogger,
  ...GENEROUS,
  ...extra,
});

const errorHandler: ErrorRequestHandler = (err, _req, res, _next) => {
  res.status(isKeyguardError(err) ? err.status : 500).json({ handledBy: "app", code: err.code, name: err.name });
};

describe.each(EXPRESS_VERSIONS)("$name", ({ express }) => {
  it("sets req.apiKey and res.locals.apiKey to the frozen verification result, never the key", async () => {
    const app = express();
    app.get("/", apiKeyAuth(base()), (req, res) => {
      const key = getApiKey(req)!;
      res.json({
        apiKey: req.apiKey,
        same: res.locals.apiKey === req.apiKey && key === req.apiKey,
        frozen: Object.isFrozen(key) && Object.isFrozen(key.meta),
      });
    });
    const res = await request(app).get("/").set("Authorization", `Bearer ${plainKey}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      same: true,
      frozen: true,
      apiKey: { valid: true, code: "VALID", name: "plain", meta: { plan: "free" }, keyId: expect.stringMatching(/^key_/) },
    });
    expect(JSON.stringify(res.body)).not.toContain(plainKey);
  });

  it("req.apiKey.permissions and roles are [] for a key without any, and list them otherwise", async () => {
    const app = express();
    app.get("/", apiKeyAuth(base()), (req, res) => res.json({ permissions: req.apiKey!.permissions, roles: req.apiKey!.roles }));
    const plain = await request(app).get("/").set("Authorization", `Bearer ${plainKey}`);
    expect(plain.status).toBe(200);
    expect(plain.body).toEqual({ permissions: [], roles: [] });
    const editor = await request(app).get("/").set("Authorization", `Bearer ${editorKey}`);
    expect(editor.body.roles).toEqual(["editor"]);
    expect([...editor.body.permissions].sort()).toEqual(["billing.read", "docs.read", "docs.write"]);
  });

  it("req.apiKey stays set after a sub-app that verified it, can be reassigned by the app, and is per request", async () => {
    const app = express();
    const sub = express();
    sub.use(apiKeyAuth(base()));
    sub.get("/in", (req, _res, next) => next()); // falls through to the parent app
    app.use("/sub", sub);
    app.get("/sub/in", (req, res) => res.json({ keyId: req.apiKey?.keyId ?? null }));
    app.get("/open", (req, res) => {
      const before = req.apiKey ?? null;
      req.apiKey = { valid: true, code: "VALID", keyId: "key_set_by_app" } as NonNullable<typeof req.apiKey>;
      res.json({ before, after: req.apiKey?.keyId ?? null });
    });
    const verified = await request(app).get("/sub/in").set("Authorization", `Bearer ${plainKey}`);
    expect(verified.body.keyId).toMatch(/^key_/);
    // Another request on the same app, with no keyguard on its route: nothing carried over.
    expect((await request(app).get("/open")).body).toEqual({ before: null, after: "key_set_by_app" });
  });

  it("req.apiKey outlives an app's own res.locals copied anew, and reads back an app's assignment", async () => {
    const app = express();
    app.get(
      "/",
      apiKeyAuth(base()),
      (_req, res, next) => {
        // What an app may do with res.locals after the auth: a new object with the old members.
        res.locals = { ...res.locals, page: "home" };
        next();
      },
      (req, res) => {
        const seen = { keyId: req.apiKey?.keyId ?? null, viaGetter: getApiKey(req)?.keyId ?? null };
        req.apiKey = undefined;
        res.json({ ...seen, cleared: req.apiKey === undefined && getApiKey(req) === undefined });
      },
    );
    const first = await request(app).get("/").set("Authorization", `Bearer ${plainKey}`);
    expect(first.body).toEqual({ keyId: expect.stringMatching(/^key_/), viaGetter: first.body.keyId, cleared: true });
    const second = await request(app).get("/").set("Authorization", `Bearer ${editorKey}`);
    expect(second.body.keyId).toMatch(/^key_/);
    expect(second.body.keyId).not.toBe(first.body.keyId);
  });

  it("optional: no key passes without req.apiKey; an invalid key is still denied; a valid one is verified", async () => {
    const app = express();
    app.get("/", apiKeyAuth(base({ optional: true })), (req, res) => res.json({ keyId: req.apiKey?.keyId ?? null }));
    expect((await request(app).get("/")).body).toEqual({ keyId: null });
    expect((await request(app).get("/").set("X-API-Key", "sk_bogus_key")).status).toBe(401);
    expect((await request(app).get("/").set("X-API-Key", "")).status).toBe(400);
    expect((await request(app).get("/").set("X-API-Key", plainKey)).body.keyId).toMatch(/^key_/);
  });

  it("hideCredentials removes the key headers from headers and rawHeaders, keeping the rest", async () => {
    const app = express();
    app.get("/", apiKeyAuth(base({ hideCredentials: true })), (req, res) => res.json({ headers: req.headers, raw: req.rawHeaders }));
    const res = await request(app).get("/").set("Authorization", `Bearer ${plainKey}`).set("X-API-Key", plainKey).set("X-Other", "kept");
    expect(res.status).toBe(200);
    expect(res.body.headers.authorization).toBeUndefined();
    expect(res.body.headers["x-api-key"]).toBeUndefined();
    expect(res.body.headers["x-other"]).toBe("kept");
    expect(JSON.stringify(res.body)).not.toContain(plainKey);
    expect(res.body.raw).toContain("X-Other");
  });

  it("without hideCredentials the headers stay", async () => {
    const app = express();
    app.get("/", apiKeyAuth(base()), (req, res) => res.json({ auth: req.headers.authorization }));
    expect((await request(app).get("/").set("Authorization", `Bearer ${plainKey}`)).body.auth).toBe(`Bearer ${plainKey}`);
  });

  it("lets CORS preflights through by default; allowPreflight: false checks them", async () => {
    const reply = (_req: unknown, res: { sendStatus(n: number): void }) => res.sendStatus(204);
    const open = express();
    open.options("/", apiKeyAuth(base()), reply);
    const strict = express();
    strict.options("/", apiKeyAuth(base({ allowPreflight: false })), reply);
    expect((await request(open).options("/").set("Access-Control-Request-Method", "POST").set("Origin", "http://x.test")).status).toBe(204);
    expect((await request(open).options("/")).status).toBe(401);
    expect((await request(strict).options("/").set("Access-Control-Request-Method", "POST")).status).toBe(401);
  });

  it("onDenied answers denials itself", async () => {
    const app = express();
    app.get(
      "/",
      apiKeyAuth({ ...base(), onDenied: (err, _req, res: Response) => void res.status(418).json({ mine: err.code, status: err.status }) }),
      (_q, r) => r.send("ok"),
    );
    const res = await request(app).get("/");
    expect(res.status).toBe(418);
    expect(res.body).toEqual({ mine: "MISSING_KEY", status: 401 });
  });

  it("an async onDenied that rejects: its error goes to next(err) (no hang, no unhandled rejection)", async () => {
    const app = express();
    app.get(
      "/",
      apiKeyAuth(
        base({
          onDenied: async () => {
            throw Object.assign(new Error("onDenied bug"), { code: "ON_DENIED_BUG" });
          },
        }),
      ),
      (_q, r) => r.send("ok"),
    );
    let handled = 0;
    app.use(((err, _req, res, _next) => {
      handled++;
      res.status(500).json({ code: err.code });
    }) as ErrorRequestHandler);
    const res = await request(app).get("/").timeout(5000);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ code: "ON_DENIED_BUG" });
    expect(handled).toBe(1);
  });

  it("an onDenied that calls next(err) and then rejects: next is called once", async () => {
    const app = express();
    app.get(
      "/",
      apiKeyAuth(
        base({
          onDenied: async (err, _req, _res, next) => {
            next(err);
            throw new Error("after next");
          },
        }),
      ),
      (_q, r) => r.send("ok"),
    );
    let handled = 0;
    app.use(((err, _req, res, _next) => {
      handled++;
      res.status(err.status ?? 500).json({ code: err.code });
    }) as ErrorRequestHandler);
    const res = await request(app).get("/").timeout(5000);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ code: "MISSING_KEY" });
    expect(handled).toBe(1);
  });

  it("a handler that throws synchronously reaches the error handler once (verified and cached path)", async () => {
    const app = express();
    let handled = 0;
    app.get("/", apiKeyAuth(base()), () => {
      throw Object.assign(new Error("handler bug"), { code: "HANDLER_BUG" });
    });
    app.use(((err, _req, res, _next) => {
      handled++;
      res.status(500).json({ code: err.code });
    }) as ErrorRequestHandler);
    for (let i = 1; i <= 2; i++) {
      const res = await request(app).get("/").set("X-API-Key", plainKey);
      expect(res.body).toEqual({ code: "HANDLER_BUG" });
      expect(handled).toBe(i);
    }
  });

  it("headers already sent by an earlier handler: RateLimit headers are skipped and the route still runs", async () => {
    const limited = await fx.createKey({ ratelimits: [{ name: "requests", limit: 100, duration: 60_000, autoApply: true }] });
    const app = express();
    let handled = 0;
    app.get(
      "/",
      (_req, res, next) => {
        res.writeHead(200, { "Content-Type": "text/plain" });
        res.write("head;");
        next();
      },
      apiKeyAuth(base()),
      (req, res) => void res.end(`key=${req.apiKey?.keyId ?? "none"}`),
    );
    app.use(((_err, _req, res, _next) => {
      handled++;
      res.end("error");
    }) as ErrorRequestHandler);
    const res = await request(app).get("/").set("X-API-Key", limited);
    expect(res.text).toMatch(/^head;key=key_/);
    expect(handled).toBe(0);
  });

  it("passErrors hands the error (with status, headers, code, expose) to the app's error handler", async () => {
    const app = express();
    app.get("/", apiKeyAuth(base({ passErrors: true })), (_q, r) => r.send("ok"));
    app.use(errorHandler);
    const res = await request(app).get("/").set("X-API-Key", "sk_bogus_key");
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ handledBy: "app", code: "NOT_FOUND", name: "KeyRejectedError" });
  });

  it("HEAD denials carry status and headers without a body", async () => {
    const app = express();
    app.get("/", apiKeyAuth(base()), (_q, r) => r.send("ok"));
    const res = await request(app).head("/");
    expect(res.status).toBe(401);
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="api"');
    expect(res.text ?? "").toBe("");
  });

  it("custom header name, realm and getKey", async () => {
    const app = express();
    app.get("/h", apiKeyAuth(base({ header: "X-Token", realm: "docs" })), (_q, r) => r.send("ok"));
    app.get("/q", apiKeyAuth(base({ getKey: async (req) => new URL(req.url ?? "/", "http://x").searchParams.get("key") })), (_q, r) =>
      r.send("ok"),
    );
    expect((await request(app).get("/h").set("X-Token", plainKey)).status).toBe(200);
    const denied = await request(app).get("/h").set("X-API-Key", plainKey);
    expect(denied.status).toBe(401);
    expect(denied.headers["www-authenticate"]).toBe('Bearer realm="docs"');
    expect(denied.body.detail).toContain("X-Token");
    expect((await request(app).get(`/q?key=${plainKey}`)).status).toBe(200);
    expect((await request(app).get("/q").set("X-API-Key", plainKey)).status).toBe(401);
  });

  it("a getKey that throws goes to next(err)", async () => {
    const app = express();
    app.get(
      "/",
      apiKeyAuth(
        base({
          getKey: () => {
            throw Object.assign(new Error("boom"), { code: "APP_BUG" });
          },
        }),
      ),
      (_q, r) => r.send("ok"),
    );
    app.use(errorHandler);
    const res = await request(app).get("/");
    expect(res.status).toBe(500);
    expect(res.body.code).toBe("APP_BUG");
  });

  it("guards: permissions (via roles too), any permission, roles, predicates", async () => {
    const app = express();
    const auth = apiKeyAuth(base({ realm: "docs" }));
    app.get("/write", auth, requirePermissions("docs.write AND billing.read"), (_q, r) => r.send("ok"));
    app.get("/admin", auth, requirePermissions("admin"), (_q, r) => r.send("ok"));
    app.get("/any", auth, requireAnyPermission("nope", "docs.read"), (_q, r) => r.send("ok"));
    app.get("/role", auth, requireRoles("editor"), (_q, r) => r.send("ok"));
    app.get(
      "/pred",
      auth,
      requireKey((key) => key.meta?.plan === "pro", { description: "a pro plan" }),
      (_q, r) => r.send("ok"),
    );
    app.get("/unauth", requireRoles("editor"), (_q, r) => r.send("ok"));

    const get = (path: string, key: string) => request(app).get(path).set("X-API-Key", key);
    expect((await get("/write", editorKey)).status).toBe(200);
    expect((await get("/any", editorKey)).status).toBe(200);
    expect((await get("/role", editorKey)).status).toBe(200);

    const admin = await get("/admin", editorKey);
    expect(admin.status).toBe(403);
    expect(admin.headers["www-authenticate"]).toBe('Bearer realm="docs", error="insufficient_scope", scope="admin"');
    expect(admin.body).toMatchObject({ code: "INSUFFICIENT_SCOPE", status: 403 });

    const role = await get("/role", plainKey);
    expect(role.status).toBe(403);
    expect(role.body.detail).toContain("editor");
    const pred = await get("/pred", plainKey);
    expect(pred.status).toBe(403);
    expect(pred.body.detail).toContain("a pro plan");

    const unauth = await request(app).get("/unauth");
    expect(unauth.status).toBe(401);
    expect(unauth.headers["www-authenticate"]).toBe('Bearer realm="api"');
  });

  it("guards follow the conventions of the apiKeyAuth() that ran (passErrors here)", async () => {
    const app = express();
    app.get("/", apiKeyAuth(base({ passErrors: true })), requireRoles("auditor"), (_q, r) => r.send("ok"));
    app.use(errorHandler);
    const res = await request(app).get("/").set("X-API-Key", plainKey);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ handledBy: "app", code: "INSUFFICIENT_SCOPE", name: "InsufficientScopeError" });
  });

  it("a guard after optional auth answers a keyless request with that apiKeyAuth()'s realm and passErrors", async () => {
    const app = express();
    app.get("/", apiKeyAuth(base({ optional: true, realm: "docs" })), requireRoles("auditor"), (_q, r) => r.send("ok"));
    app.get("/errors", apiKeyAuth(base({ optional: true, passErrors: true })), requireRoles("auditor"), (_q, r) => r.send("ok"));
    app.use(errorHandler);
    const plain = await request(app).get("/");
    expect(plain.status).toBe(401);
    expect(plain.headers["www-authenticate"]).toBe('Bearer realm="docs"');
    const passed = await request(app).get("/errors");
    expect(passed.status).toBe(401);
    expect(passed.body).toMatchObject({ handledBy: "app", code: "MISSING_KEY" });
  });

  it("app.use(apiKeyAuth) without the call fails every request with a message saying so", async () => {
    const app = express();
    app.use(apiKeyAuth as never);
    app.get("/", (_q, r) => r.send("ok"));
    app.use(((err, _req, res, _next) => res.status(500).json({ code: err.code, message: err.message })) as ErrorRequestHandler);
    const res = await request(app).get("/");
    expect(res.status).toBe(500);
    expect(res.body.code).toBe("KEYGUARD_CONFIG_ERROR");
    expect(res.body.message).toContain("app.use(apiKeyAuth())");
  });
});

describe("keyguard/web", () => {
  it("result.apiKey.permissions and roles are [] for a key without any, the requestId kept", async () => {
    const auth = webApiKeyAuth(base() as WebApiKeyAuthOptions);
    const result = await auth(new Request("http://app.test/", { headers: { authorization: `Bearer ${plainKey}` } }));
    if (result instanceof Response) return expect.unreachable(`denied with ${result.status}`);
    expect(result.apiKey).toMatchObject({ valid: true, name: "plain", permissions: [], roles: [] });
    expect((result.apiKey as { requestId?: unknown }).requestId).toMatch(/^req_/);
    expect(Object.isFrozen(result.apiKey)).toBe(true);
  });
});
