// The cache against the real local service: credit and rate-limit decisions stay with the service
// (never more requests through than it allows), plain keys are verified once, invalidation works.
// Every scenario runs on Express 5 and Express 4.
import type { IncomingMessage, ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import request from "supertest";
import { createClient } from "keyguard/client";
import { apiKeyAuth, silentLogger, type ApiKeyAuthOptions } from "keyguard";
import { countingClient, EXPRESS_VERSIONS, startService, startStub, type ServiceFixture } from "./helpers";
import { GENEROUS } from "../support/time-limits";

let fx: ServiceFixture;
beforeAll(async () => {
  fx = await startService();
});
afterAll(() => fx.close());

describe.each(EXPRESS_VERSIONS)("$name", ({ express }) => {
  function counted(options: Partial<ApiKeyAuthOptions> = {}) {
    const { client, calls } = countingClient(fx.svc);
    let reached = 0;
    const auth = apiKeyAuth({ client, logger: silentLogger, ...GENEROUS, ...options });
    const app = express().get("/", auth, (_req, res) => {
      reached++;
      res.send("ok");
    });
    return { app, auth, calls, reached: () => reached };
  }

  async function burst(app: Parameters<typeof request>[0], key: string, n: number) {
    const responses = await Promise.all(Array.from({ length: n }, () => request(app).get("/").set("X-API-Key", key)));
    return responses.map((r) => r.status);
  }

  describe("credits and rate limits stay with the service", () => {
    it("a key with 5 credits: of 20 concurrent requests exactly 5 reach the handler (cache on)", async () => {
      const key = await fx.createKey({ credits: { remaining: 5 } });
      const { app, reached, calls } = counted();
      const responses = await Promise.all(Array.from({ length: 20 }, () => request(app).get("/").set("X-API-Key", key)));
      const statuses = responses.map((r) => r.status);
      const others = responses.filter((r) => r.status !== 200 && r.status !== 429).map((r) => [r.status, r.body]);
      expect(others).toEqual([]);
      expect(reached()).toBe(5);
      expect(statuses.filter((s) => s === 200)).toHaveLength(5);
      expect(statuses.filter((s) => s === 429)).toHaveLength(15);
      expect(calls.count).toBe(20);
    });

    it("the same key sequentially: 5 pass, then USAGE_EXCEEDED", async () => {
      const key = await fx.createKey({ credits: { remaining: 5 } });
      const { app, reached } = counted();
      const codes: string[] = [];
      for (let i = 0; i < 8; i++) {
        const res = await request(app).get("/").set("X-API-Key", key);
        codes.push(res.status === 200 ? "ok" : res.body.code);
      }
      expect(reached()).toBe(5);
      expect(codes).toEqual(["ok", "ok", "ok", "ok", "ok", "USAGE_EXCEEDED", "USAGE_EXCEEDED", "USAGE_EXCEEDED"]);
    });

    it("a key limited to 3 per minute: of 10 concurrent requests exactly 3 pass, with RateLimit headers", async () => {
      const key = await fx.createKey({ ratelimits: [{ name: "requests", limit: 3, duration: 60_000, autoApply: true }] });
      const { app, reached } = counted();
      const statuses = await burst(app, key, 10);
      expect(reached()).toBe(3);
      expect(statuses.filter((s) => s === 429)).toHaveLength(7);
      const after = await request(app).get("/").set("X-API-Key", key);
      expect(after.status).toBe(429);
      expect(after.headers["ratelimit-policy"]).toBe('"requests";q=3;w=60');
    });

    it("passing requests carry RateLimit headers too", async () => {
      const key = await fx.createKey({ ratelimits: [{ name: "requests", limit: 3, duration: 60_000, autoApply: true }] });
      const { app } = counted();
      const res = await request(app).get("/").set("X-API-Key", key);
      expect(res.status).toBe(200);
      expect(res.headers["ratelimit"]).toMatch(/^"requests";r=2;t=\d+$/);
      const off = counted({ rateLimitHeaders: false });
      const quiet = await request(off.app).get("/").set("X-API-Key", key);
      expect(quiet.headers["ratelimit"]).toBeUndefined();
    });

    it("a cost option bypasses the cache: every request is charged by the service", async () => {
      const key = await fx.createKey({ credits: { remaining: 10 } });
      const { app, calls, reached } = counted({ cost: 3 });
      await burst(app, key, 5);
      expect(calls.count).toBe(5);
      expect(reached()).toBe(3);
    });
  });

  describe("keys whose answers are charged are not joined", () => {
    /**
     * A stub service that holds verifyKey calls until `size` are waiting, then answers them all
     * (VALID with credits). Calls that joined another would never arrive, and the held one would
     * time out.
     */
    async function barrierStub(size: number) {
      const held: ServerResponse[] = [];
      let maxWaiting = 0;
      let received = 0;
      const answer = (res: ServerResponse) => {
        res.setHeader("Content-Type", "application/json");
        res.end(JSON.stringify({ meta: { requestId: "req_b" }, data: { valid: true, code: "VALID", keyId: "key_b", credits: 100 } }));
      };
      const stub = await startStub((_req: IncomingMessage, res: ServerResponse) => {
        received++;
        if (size <= 1) return answer(res);
        held.push(res);
        maxWaiting = Math.max(maxWaiting, held.length);
        if (held.length >= size) held.splice(0).forEach(answer);
      });
      return {
        stub,
        stats: () => ({ received, maxWaiting }),
        setSize: (n: number) => void (size = n),
      };
    }

    it("after one charged answer, a burst for the key reaches the service in parallel", async () => {
      const { stub, stats, setSize } = await barrierStub(1);
      try {
        const client = createClient({ rootKey: "root_x", baseUrl: stub.baseUrl, logger: silentLogger, retry: false, ...GENEROUS });
        const app = express().get("/", apiKeyAuth({ client, logger: silentLogger, ...GENEROUS }), (_q, r) => r.send("ok"));
        expect((await request(app).get("/").set("X-API-Key", "sk_charged")).status).toBe(200);
        setSize(4);
        expect(await burst(app, "sk_charged", 4)).toEqual([200, 200, 200, 200]);
        expect(stats()).toEqual({ received: 5, maxWaiting: 4 });
      } finally {
        await stub.close();
      }
    });
  });

  describe("plain keys are cached", () => {
    it("verifies a key once for many requests, concurrent or not", async () => {
      const key = await fx.createKey();
      const { app, calls, reached } = counted();
      await burst(app, key, 10);
      for (let i = 0; i < 5; i++) expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
      expect(reached()).toBe(15);
      expect(calls.count).toBe(1);
    });

    it("caches per permission query", async () => {
      const key = await fx.createKey({ permissions: ["docs.read"] });
      const { client, calls } = countingClient(fx.svc);
      const app = express()
        .get("/read", apiKeyAuth({ client, logger: silentLogger, ...GENEROUS, permissions: "docs.read" }), (_q, r) => r.send("ok"))
        .get("/write", apiKeyAuth({ client, logger: silentLogger, ...GENEROUS, permissions: "docs.write" }), (_q, r) => r.send("ok"));
      expect((await request(app).get("/read").set("X-API-Key", key)).status).toBe(200);
      expect((await request(app).get("/write").set("X-API-Key", key)).status).toBe(403);
      expect((await request(app).get("/write").set("X-API-Key", key)).status).toBe(403);
      expect(calls.count).toBe(3);
    });

    it("remembers unknown keys briefly (negative cache)", async () => {
      const { app, calls } = counted();
      for (let i = 0; i < 3; i++) expect((await request(app).get("/").set("X-API-Key", "sk_nope_nope")).status).toBe(401);
      expect(calls.count).toBe(1);
    });

    it("cache: false verifies every request", async () => {
      const key = await fx.createKey();
      const { app, calls } = counted({ cache: false });
      for (let i = 0; i < 3; i++) await request(app).get("/").set("X-API-Key", key);
      expect(calls.count).toBe(3);
    });

    it("ratelimits and tags (fixed or per request) reach the service, and such requests bypass the cache", async () => {
      const key = await fx.createKey();
      const bodies: Array<Record<string, unknown>> = [];
      const client = createClient({
        rootKey: fx.svc.rootKey,
        baseUrl: fx.svc.baseUrl,
        logger: silentLogger,
        fetch: (input, init) => {
          bodies.push(JSON.parse(String(init?.body)) as Record<string, unknown>);
          return fetch(input, init);
        },
      });
      let reached = 0;
      const auth = apiKeyAuth({
        client,
        logger: silentLogger,
        ...GENEROUS,
        ratelimits: [{ name: "search", limit: 2, duration: 60_000 }],
        tags: (req: IncomingMessage) => [`path:${new URL(req.url ?? "/", "http://x").pathname}`],
      });
      const app = express().get("/search", auth, (_req, res) => {
        reached++;
        res.send("ok");
      });
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await request(app).get("/search").set("X-API-Key", key)).status);
      expect(statuses).toEqual([200, 200, 429, 429]);
      expect(reached).toBe(2);
      expect(bodies).toHaveLength(4); // every request asked the service: none came from the cache
      for (const body of bodies) {
        expect(body).toMatchObject({ ratelimits: [{ name: "search", limit: 2, duration: 60_000 }], tags: ["path:/search"] });
        expect(body).not.toHaveProperty("credits");
      }
    });

    it("a cached answer is served without a call and still honours hideCredentials and req.apiKey", async () => {
      const key = await fx.createKey();
      const { client, calls } = countingClient(fx.svc);
      const auth = apiKeyAuth({ client, logger: silentLogger, ...GENEROUS, hideCredentials: true });
      const app = express().get("/", auth, (req, res) => {
        res.json({ auth: req.headers.authorization ?? null, keyId: req.apiKey?.keyId ?? null, raw: req.rawHeaders });
      });
      const first = await request(app).get("/").set("Authorization", `Bearer ${key}`);
      const second = await request(app).get("/").set("Authorization", `Bearer ${key}`);
      expect(calls.count).toBe(1);
      for (const res of [first, second]) {
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ auth: null, keyId: expect.stringMatching(/^key_/) });
        expect(JSON.stringify(res.body)).not.toContain(key);
      }
    });

    it("invalidate(key) makes the next request ask the service again; clear() forgets all", async () => {
      const key = await fx.createKey();
      const created = await fx.client.keys.whoami({ key });
      const { app, auth, calls } = counted();
      expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
      await fx.client.keys.deleteKey({ keyId: created.keyId });
      expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200); // cached
      auth.invalidate(key);
      expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(401);
      expect(calls.count).toBe(2);
      auth.clear();
      expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(401);
      expect(calls.count).toBe(3);
    });
  });
});
