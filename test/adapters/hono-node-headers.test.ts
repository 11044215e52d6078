// keyguard/hono on @hono/node-server reads the key's headers as Node parsed them (`c.env.incoming`),
// never building the Request's Headers for a route that does not read them, and hashes a key once
// per connection, as the Node adapters do; elsewhere (no Node
// request lent: `app.request()`, Bun, Deno, Workers) it reads the Request's. Both decide alike.
import { request } from "node:http";
import { Hono, type MiddlewareHandler } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import { apiKeyAuth, type ApiKeyEnv } from "../../src/hono";
import { startService, type ServiceFixture } from "../middleware/helpers";
import { GENEROUS } from "../support/time-limits";
import { serveFetch } from "./serve-node";
import type { RunningApp } from "./conformance";

let fx: ServiceFixture;
const running: RunningApp[] = [];
beforeAll(async () => {
  fx = await startService();
});
afterAll(async () => {
  for (const app of running) await app.close();
  await fx.close();
});

/** An app whose first middleware counts every read of the Request's headers; the route reads none. */
function countingApp(): { app: Hono<ApiKeyEnv>; reads: () => number } {
  let reads = 0;
  const count: MiddlewareHandler<ApiKeyEnv> = (c, next) => {
    const request = c.req.raw;
    let proto: object | null = Object.getPrototypeOf(request) as object | null;
    let own: PropertyDescriptor | undefined;
    while (proto !== null && own === undefined) {
      own = Object.getOwnPropertyDescriptor(proto, "headers");
      proto = Object.getPrototypeOf(proto) as object | null;
    }
    Object.defineProperty(request, "headers", {
      get() {
        reads++;
        return own!.get!.call(request) as Headers;
      },
    });
    return next();
  };
  const app = new Hono<ApiKeyEnv>();
  app.use("*", count);
  app.use("*", apiKeyAuth({ client: fx.client, logger: silentLogger, ...GENEROUS }));
  app.get("/r", (c) => c.json({ keyId: c.get("apiKey")?.keyId ?? null }));
  return { app, reads: () => reads };
}

describe("keyguard/hono reads Node's headers where @hono/node-server lends them", () => {
  it("on @hono/node-server: admits and denies without reading the Request's headers", async () => {
    const { key, keyId } = await fx.createKeyWithId();
    const { app, reads } = countingApp();
    const served = await serveFetch(app.fetch);
    running.push(served);
    for (const headers of [{ authorization: `Bearer ${key}` }, { "x-api-key": key }] as Array<Record<string, string>>) {
      const res = await fetch(`${served.url}/r`, { headers });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ keyId });
    }
    // Another key on the same keep-alive connection: its own hash, its own key.
    const other = await fx.createKeyWithId();
    for (const [k, id] of [
      [other.key, other.keyId],
      [key, keyId],
    ] as const) {
      const res = await fetch(`${served.url}/r`, { headers: { authorization: `Bearer ${k}` } });
      expect(await res.json()).toEqual({ keyId: id });
    }
    expect((await fetch(`${served.url}/r`)).status).toBe(401);
    // Two Authorization lines: Node keeps one, and the repeat is still seen (from rawHeaders):
    // malformed credentials, as in the Express middleware.
    const twice = await new Promise<number>((resolve, reject) => {
      const req = request(`${served.url}/r`, { headers: ["Authorization", `Bearer ${key}`, "Authorization", `Bearer ${key}`] }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on("error", reject);
      req.end();
    });
    expect(twice).toBe(400);
    expect(reads()).toBe(0);
  });

  it("without a Node request (app.request): reads the Request's headers, and decides alike", async () => {
    const { key, keyId } = await fx.createKeyWithId();
    const { app, reads } = countingApp();
    const res = await app.request("/r", { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ keyId });
    expect((await app.request("/r")).status).toBe(401);
    expect(reads()).toBeGreaterThan(0);
  });
});
