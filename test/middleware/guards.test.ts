// Guards over plain verification results (no key service): what passes, what is denied and how.
import { describe, expect, it, vi } from "vitest";
import express, { type RequestHandler } from "express";
import request from "supertest";
import { ConfigError, requireAnyPermission, requireKey, requirePermissions, requireRoles, type VerifiedKey } from "keyguard";
import { GENEROUS } from "../support/time-limits";

const KEY: VerifiedKey = Object.freeze({
  valid: true,
  code: "VALID",
  keyId: "key_1",
  permissions: ["docs.read", "docs.write"],
  roles: ["editor"],
  meta: { plan: "pro" },
});

const as =
  (key: VerifiedKey | null): RequestHandler =>
  (req, _res, next) => {
    if (key) req.apiKey = key;
    next();
  };

async function status(guard: RequestHandler, key: VerifiedKey | null = KEY) {
  const app = express().get("/", as(key), guard, (_q, r) => r.send("ok"));
  return request(app).get("/");
}

describe("guards", () => {
  it("requirePermissions evaluates the query against the key's permissions", async () => {
    expect((await status(requirePermissions("docs.read AND docs.write"))).status).toBe(200);
    expect((await status(requirePermissions("admin OR (docs.read AND docs.write)"))).status).toBe(200);
    const denied = await status(requirePermissions("docs.read AND   admin"));
    expect(denied.status).toBe(403);
    // RFC 6750: scope is a space-separated list of tokens; the query stays in the detail.
    expect(denied.headers["www-authenticate"]).toBe('Bearer realm="api", error="insufficient_scope", scope="docs.read admin"');
    expect(denied.body).toMatchObject({
      code: "INSUFFICIENT_SCOPE",
      status: 403,
      title: "Forbidden",
      detail: "This request requires the permissions: docs.read AND admin.",
    });
    expect((await status(requirePermissions("docs.*"))).status).toBe(403);
  });

  it("requireAnyPermission needs one of the permissions", async () => {
    expect((await status(requireAnyPermission("admin", "docs.write"))).status).toBe(200);
    const denied = await status(requireAnyPermission("admin", "billing"));
    expect(denied.status).toBe(403);
    // "one of" cannot be said with scope tokens: no scope parameter.
    expect(denied.headers["www-authenticate"]).toBe('Bearer realm="api", error="insufficient_scope"');
    expect(denied.body.detail).toBe("This request requires one of the permissions: admin, billing.");
    const single = await status(requireAnyPermission("billing"));
    expect(single.headers["www-authenticate"]).toBe('Bearer realm="api", error="insufficient_scope", scope="billing"');
  });

  it("a permission query with OR gets no scope parameter", async () => {
    const denied = await status(requirePermissions("(admin OR billing) AND docs.read"));
    expect(denied.status).toBe(403);
    expect(denied.headers["www-authenticate"]).toBe('Bearer realm="api", error="insufficient_scope"');
    expect(denied.body.detail).toBe("This request requires the permissions: (admin OR billing) AND docs.read.");
  });

  it("requireRoles needs every role", async () => {
    expect((await status(requireRoles("editor"))).status).toBe(200);
    const denied = await status(requireRoles("editor", "admin"));
    expect(denied.status).toBe(403);
    expect(denied.headers["www-authenticate"]).toBe('Bearer realm="api", error="insufficient_scope"');
  });

  it("requireKey runs a sync or async predicate; its errors go to next(err)", async () => {
    expect((await status(requireKey((k) => k.meta?.plan === "pro"))).status).toBe(200);
    expect((await status(requireKey(async (k) => k.keyId === "key_2", { description: "key 2" }))).body.detail).toBe(
      "The API key does not meet: key 2.",
    );
    const app = express()
      .get(
        "/",
        as(KEY),
        requireKey(() => {
          throw new Error("predicate bug");
        }),
        (_q, r) => r.send("ok"),
      )
      .use(((_e, _q, r, _n) => r.status(500).send("app error")) as express.ErrorRequestHandler);
    expect((await request(app).get("/")).text).toBe("app error");
  });

  it("answers 401 when no key was verified", async () => {
    const res = await status(requireRoles("editor"), null);
    expect(res.status).toBe(401);
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="api"');
    expect(res.body.code).toBe("MISSING_KEY");
  });

  it("fail at creation on a bad query or arguments", () => {
    expect(() => requirePermissions("docs.read AND")).toThrow(ConfigError);
    expect(() => requirePermissions("docs.read AND")).toThrow(/requirePermissions: "docs.read AND" is not a valid permission query/);
    expect(() => requireAnyPermission()).toThrow(/at least one/);
    expect(() => requireAnyPermission("a OR b")).toThrow(/not a single permission/);
    expect(() => requireRoles()).toThrow(ConfigError);
    expect(() => requireKey("x" as never)).toThrow('requireKey: invalid option predicate = "x". Pass a function (key, req) => boolean.');
  });
});

describe('guards reach the conventions of the apiKeyAuth() that ran (Symbol.for("keyguard.responder"))', () => {
  // A stub key service answering every verification with VALID and the given roles.
  async function withStub<T>(run: (baseUrl: string) => Promise<T>): Promise<T> {
    const { startStub } = await import("./helpers");
    const stub = await startStub((_req, res) => {
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify({ meta: { requestId: "req_1" }, data: { valid: true, code: "VALID", keyId: "key_1", roles: ["viewer"] } }));
    });
    try {
      return await run(stub.baseUrl);
    } finally {
      await stub.close();
    }
  }

  it("a verified request, a request let through without a key, and a guard from another loaded copy of keyguard", async () => {
    const { apiKeyAuth, silentLogger } = await import("keyguard");
    vi.resetModules();
    // A second copy of the guards module (and of everything it imports): its own DEFAULT_RESPONDER.
    const other = await import("../../src/adapters/express/guards");
    expect(other.requireRoles).not.toBe(requireRoles);
    await withStub(async (baseUrl) => {
      const auth = apiKeyAuth({
        rootKey: "root",
        baseUrl,
        logger: silentLogger,
        ...GENEROUS,
        realm: "custom",
        optional: true,
        retry: false,
      });
      for (const guard of [requireRoles("admin"), other.requireRoles("admin")]) {
        const app = express().get("/", auth as RequestHandler, guard as RequestHandler, (_q, r) => r.send("ok"));
        const verified = await request(app).get("/").set("X-API-Key", "sk_any");
        expect(verified.status).toBe(403);
        expect(verified.headers["www-authenticate"]).toBe('Bearer realm="custom", error="insufficient_scope"');
        const anonymous = await request(app).get("/");
        expect(anonymous.status).toBe(401);
        expect(anonymous.headers["www-authenticate"]).toBe('Bearer realm="custom"');
      }
    });
    // The responder is not an enumerable property: JSON and spreads of req.apiKey do not carry it.
    await withStub(async (baseUrl) => {
      const auth = apiKeyAuth({ rootKey: "root", baseUrl, logger: silentLogger, ...GENEROUS, retry: false });
      const app = express().get("/", auth as RequestHandler, (req, res) =>
        res.json({
          keys: Object.getOwnPropertySymbols(req.apiKey!).length,
          spread: Object.getOwnPropertySymbols({ ...req.apiKey }).length,
          frozen: Object.isFrozen(req.apiKey),
          requestId: (req.apiKey as { requestId?: string }).requestId,
        }),
      );
      // The service's request id stays on the key, non-enumerable, as the client returns it.
      expect((await request(app).get("/").set("X-API-Key", "sk_any")).body).toEqual({
        keys: 1,
        spread: 0,
        frozen: true,
        requestId: "req_1",
      });
    });
  });

  it('without apiKeyAuth() before it, a guard answers with the defaults (realm "api")', async () => {
    const res = await status(requireRoles("admin"), null);
    expect(res.status).toBe(401);
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="api"');
  });
});
