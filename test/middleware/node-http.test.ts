// apiKeyAuth() on a plain node:http server (Connect-style `(req, res, next)`), no Express; and
// next() called exactly once whatever the handlers after it do.
import { createServer, IncomingMessage, type ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import request from "supertest";
import { apiKeyAuth, getApiKey, requireKey, requirePermissions, silentLogger } from "keyguard";
import { recordingLogger, startService, type ServiceFixture } from "./helpers";
import { GENEROUS } from "../support/time-limits";

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
    apiKeyAuth({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, ...GENEROUS, logger: silentLogger }),
    requirePermissions("docs.read"),
    (req, res) => {
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify({ name: getApiKey(req)?.name, own: Object.hasOwn(req, "apiKey") }));
    },
  );
  const ok = await request(server).get("/").set("Authorization", `Bearer ${key}`);
  expect(ok.status).toBe(200);
  // A request Node made keeps a plain property; Node's own prototype is never touched.
  expect(ok.body).toEqual({ name: "plain-http", own: true });
  expect(Object.getOwnPropertyDescriptor(IncomingMessage.prototype, "apiKey")).toBeUndefined();

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

describe("next() is called exactly once", () => {
  type Layer = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

  /**
   * A chain that counts each layer's next() calls and, like a hand-written chain, lets a
   * throwing handler's error propagate through next() (only the outermost call is caught).
   */
  function countingChain(layers: Layer[], downstream: (req: IncomingMessage, res: ServerResponse) => void) {
    const seen = { nextCalls: layers.map(() => 0), errors: [] as unknown[], escaped: [] as unknown[] };
    const server = createServer((req, res) => {
      const run = (i: number): void => {
        if (i === layers.length) return downstream(req, res);
        layers[i]!(req, res, (err?: unknown) => {
          seen.nextCalls[i]!++;
          if (err !== undefined) {
            seen.errors.push(err);
            if (!res.writableEnded) res.end("error");
            return;
          }
          run(i + 1);
        });
      };
      try {
        run(0);
      } catch (e) {
        seen.escaped.push(e);
      }
    });
    const reset = () => {
      seen.nextCalls.fill(0);
      seen.errors.length = 0;
      seen.escaped.length = 0;
    };
    return { server, seen, reset };
  }

  const bug = new Error("downstream bug");
  const answerThenThrow = (_req: IncomingMessage, res: ServerResponse) => {
    res.end("done");
    throw bug;
  };

  it("a downstream handler that throws synchronously: never a second next(err), on the verified and the cached path", async () => {
    const key = await fx.createKey({ name: "once" });
    const logger = recordingLogger();
    const auth = apiKeyAuth({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, ...GENEROUS, logger });
    const { server, seen, reset } = countingChain([auth as Layer], answerThenThrow);

    // Verified (async path): the error cannot reach the caller of auth(); it is logged, not re-passed.
    const first = await request(server).get("/").set("X-API-Key", key);
    expect(first.text).toBe("done");
    expect(seen.nextCalls).toEqual([1]);
    expect(seen.errors).toEqual([]);
    expect(logger.entries).toHaveLength(1);
    expect(logger.entries[0]).toMatchObject({ level: "error", fields: { error: "Error" } });
    expect(JSON.stringify(logger.entries)).not.toContain(key);

    // Cached (sync path): the error propagates to whoever called auth(), as from any sync middleware.
    reset();
    const second = await request(server).get("/").set("X-API-Key", key);
    expect(second.text).toBe("done");
    expect(seen.nextCalls).toEqual([1]);
    expect(seen.errors).toEqual([]);
    expect(seen.escaped).toEqual([bug]);
  });

  it("guards: a sync or async check, then a throwing downstream handler: next() once, no unhandled rejection", async () => {
    const key = await fx.createKey({ name: "guarded", permissions: ["docs.read"] });
    for (const guard of [requirePermissions("docs.read"), requireKey(async () => true)]) {
      const logger = recordingLogger();
      const auth = apiKeyAuth({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, ...GENEROUS, logger });
      const { server, seen } = countingChain([auth as Layer, guard as Layer], answerThenThrow);
      expect((await request(server).get("/").set("X-API-Key", key)).text).toBe("done");
      expect(seen.nextCalls).toEqual([1, 1]);
      expect(seen.errors).toEqual([]);
      // Reached the handler from a promise (the verification or the async check): logged once.
      expect(logger.entries.map((e) => e.level)).toEqual(["error"]);
    }
  });

  it("RateLimit headers are skipped, not an error, when an earlier handler already sent the headers", async () => {
    const key = await fx.createKey({ ratelimits: [{ name: "requests", limit: 100, duration: 60_000, autoApply: true }] });
    const auth = apiKeyAuth({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, ...GENEROUS, logger: silentLogger });
    const streaming: Layer = (_req, res, next) => {
      res.writeHead(200, { "Content-Type": "text/plain" });
      res.write("head;");
      next();
    };
    const { server, seen } = countingChain([streaming, auth as Layer], (req, res) => res.end(`key=${getApiKey(req)?.keyId ?? "none"}`));
    const res = await request(server).get("/").set("X-API-Key", key);
    expect(res.text).toMatch(/^head;key=key_/);
    expect(res.headers["ratelimit"]).toBeUndefined();
    expect(seen.nextCalls).toEqual([1, 1]);
    expect(seen.errors).toEqual([]);
  });
});
