// CORS preflights: only a credential-free OPTIONS with Origin and Access-Control-Request-Method
// passes unauthenticated; anything carrying a key takes the normal path. Express 5 and 4.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import request from "supertest";
import { apiKeyAuth, requireRoles, silentLogger, type ApiKeyAuthOptions } from "keyguard";
import { EXPRESS_VERSIONS, startService, type ServiceFixture } from "./helpers";
import { GENEROUS } from "../support/time-limits";

let fx: ServiceFixture;
let key: string;
beforeAll(async () => {
  fx = await startService();
  key = await fx.createKey({ name: "preflight" });
});
afterAll(() => fx.close());

const base = (extra: Partial<ApiKeyAuthOptions> = {}): ApiKeyAuthOptions => ({
  rootKey: fx.svc.rootKey,
  baseUrl: fx.svc.baseUrl,
  logger: silentLogger,
  ...GENEROUS,
  ...extra,
});

describe.each(EXPRESS_VERSIONS)("$name", ({ express }) => {
  function app(options: Partial<ApiKeyAuthOptions> = {}) {
    const a = express();
    a.use("/api", apiKeyAuth(base(options)));
    const answer = (req: { method: string; apiKey?: { keyId?: string } }, res: { json(b: unknown): void }) =>
      res.json({ method: req.method, keyId: req.apiKey?.keyId ?? null });
    a.all("/api/purge", answer);
    a.use("/api/rpc", answer);
    a.options("/api/guarded", requireRoles("admin"), answer);
    return a;
  }
  const preflight = (a: ReturnType<typeof app>, path: string) =>
    request(a).options(path).set("Origin", "https://app.example").set("Access-Control-Request-Method", "DELETE");

  it.each(["/api/purge", "/api/rpc"])("a real preflight (no credentials) passes to %s without a key", async (path) => {
    const res = await preflight(app(), path);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ method: "OPTIONS", keyId: null });
  });

  it.each(["/api/purge", "/api/rpc"])("a preflight-looking request with a bogus key is verified: 401 at %s", async (path) => {
    const a = app();
    const viaHeader = await preflight(a, path).set("X-API-Key", "sk_bogus_key");
    expect(viaHeader.status).toBe(401);
    expect(viaHeader.headers["www-authenticate"]).toBe('Bearer realm="api", error="invalid_token"');
    const viaBearer = await preflight(a, path).set("Authorization", "Bearer sk_bogus_key");
    expect(viaBearer.status).toBe(401);
  });

  it("a preflight-looking request with a valid key is authenticated (verified, then from the cache)", async () => {
    const a = app();
    for (let i = 0; i < 2; i++) {
      const res = await preflight(a, "/api/purge").set("Authorization", `Bearer ${key}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ method: "OPTIONS", keyId: expect.stringMatching(/^key_/) });
    }
  });

  it("any Authorization header (another scheme, malformed) means credentials: the normal path", async () => {
    const a = app();
    expect((await preflight(a, "/api/purge").set("Authorization", "Basic dXNlcjpwYXNz")).status).toBe(401);
    expect((await preflight(a, "/api/purge").set("Authorization", "Bearer")).status).toBe(400);
  });

  it("OPTIONS without Origin is not a preflight: 401", async () => {
    const res = await request(app()).options("/api/purge").set("Access-Control-Request-Method", "DELETE");
    expect(res.status).toBe(401);
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="api"');
  });

  it("OPTIONS without Access-Control-Request-Method is not a preflight: 401", async () => {
    expect((await request(app()).options("/api/purge").set("Origin", "https://app.example")).status).toBe(401);
  });

  it("a guard denies a request that passed as a preflight (no verified key): 401", async () => {
    const res = await preflight(app(), "/api/guarded");
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("MISSING_KEY");
  });

  it("allowPreflight: false verifies preflights too", async () => {
    expect((await preflight(app({ allowPreflight: false }), "/api/purge")).status).toBe(401);
  });

  it("with getKey, a preflight passes only when getKey finds no key", async () => {
    const a = app({ getKey: (req) => (typeof req.headers["x-widget-key"] === "string" ? req.headers["x-widget-key"] : undefined) });
    expect((await preflight(a, "/api/purge")).status).toBe(200);
    expect((await preflight(a, "/api/purge").set("X-Widget-Key", "sk_bogus_key")).status).toBe(401);
    const ok = await preflight(a, "/api/purge").set("X-Widget-Key", key);
    expect(ok.body.keyId).toMatch(/^key_/);
  });
});
