// apiKeyAuth() on a plain node:http server (Connect-style `(req, res, next)`), no Express.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import request from "supertest";
import { apiKeyAuth, getApiKey, requirePermissions, silentLogger } from "keyguard";
import { startService, type ServiceFixture } from "./helpers";

let fx: ServiceFixture;
beforeAll(async () => {
  fx = await startService();
});
afterAll(() => fx.close());

type Handler = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/** A minimal Connect-style chain. */
function chain(...handlers: Handler[]) {
  return createServer((req, res) => {
    let i = 0;
    const next = (err?: unknown) => {
      if (err !== undefined) {
        res.statusCode = 500;
        res.end("error");
        return;
      }
      const h = handlers[i++];
      if (h) h(req, res, next);
    };
    next();
  });
}

it("protects a plain node:http server and exposes the key through getApiKey", async () => {
  const key = await fx.createKey({ name: "plain-http", permissions: ["docs.read"] });
  const server = chain(
    apiKeyAuth({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, logger: silentLogger }),
    requirePermissions("docs.read"),
    (req, res) => {
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify({ name: getApiKey(req)?.name }));
    },
  );
  const ok = await request(server).get("/").set("Authorization", `Bearer ${key}`);
  expect(ok.status).toBe(200);
  expect(ok.body).toEqual({ name: "plain-http" });

  const missing = await request(server).get("/");
  expect(missing.status).toBe(401);
  expect(missing.headers["www-authenticate"]).toBe('Bearer realm="api"');
  expect(missing.headers["content-type"]).toBe("application/problem+json; charset=utf-8");
  expect(missing.headers["cache-control"]).toBe("no-store");
  expect(missing.body).toMatchObject({ code: "MISSING_KEY", status: 401, title: "Unauthorized" });
});

it("misuse without Express: calling apiKeyAuth(req, res, next) passes a ConfigError to next", async () => {
  const server = chain(apiKeyAuth as unknown as Handler, (_req, res) => res.end("reached"));
  const res = await request(server).get("/");
  expect(res.status).toBe(500);
  expect(res.text).toBe("error");
});
