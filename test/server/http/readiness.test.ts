// GET /v2/readiness beside /v2/liveness: 200 while the store answers; on PostgreSQL + Redis, 503
// with Retry-After while Redis (or PostgreSQL) is away (a TCP proxy in front of it stopped), 200
// again once it is back; 503 once the service is shutting down. Liveness stays 200 throughout.
import { afterAll, describe, expect, it } from "vitest";
import { createLocalKeyService, startLocalKeyService } from "../../../src/server";
import { silentLogger } from "../../../src/logger";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";
import { startTcpProxy } from "../../support/tcp-proxy";
import request from "supertest";

const get = (baseUrl: string, name: string) => fetch(`${baseUrl}/v2/${name}`);

describe("readiness on a store in the process", () => {
  it("answers 200 with the liveness envelope; HEAD too; POST is 405", async () => {
    const svc = await startLocalKeyService({ logger: silentLogger });
    try {
      const res = await get(svc.baseUrl, "readiness");
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ meta: { requestId: expect.any(String) }, data: { message: "OK" } });
      expect((await fetch(`${svc.baseUrl}/v2/readiness`, { method: "HEAD" })).status).toBe(200);
      const post = await fetch(`${svc.baseUrl}/v2/readiness`, { method: "POST" });
      expect(post.status).toBe(405);
      expect(post.headers.get("allow")).toBe("GET, HEAD");
    } finally {
      await svc.close();
    }
  });

  it("answers 503 with Retry-After once the service is closing, while liveness answers 200", async () => {
    const svc = await createLocalKeyService({ logger: silentLogger });
    expect((await request(svc.app).get("/v2/readiness")).status).toBe(200);
    await svc.close();
    const res = await request(svc.app).get("/v2/readiness");
    expect(res.status).toBe(503);
    expect(res.headers["retry-after"]).toBe("1");
    expect(res.body.error.detail).toMatch(/shutting down/);
    expect((await request(svc.app).get("/v2/liveness")).status).toBe(200);
  });
});

const skip = await postgresRedisSkipReason("readiness on PostgreSQL + Redis");

describe.skipIf(skip !== undefined)("readiness on PostgreSQL + Redis", () => {
  const ns = isolatedNamespace();
  afterAll(() => ns.drop());

  it("503 while Redis or PostgreSQL is away, 200 once it is back; the reason is not in the answer", async () => {
    const redisProxy = await startTcpProxy(Number(new URL(REDIS_URL).port || 6379));
    const pgProxy = await startTcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
    const redis = new URL(REDIS_URL);
    redis.port = String(redisProxy.port);
    const postgres = new URL(POSTGRES_URL);
    postgres.port = String(pgProxy.port);
    const svc = await startLocalKeyService({ postgres: postgres.href, redis: redis.href, postgresSchema: ns.schema, logger: silentLogger });
    try {
      expect((await get(svc.baseUrl, "readiness")).status).toBe(200);
      for (const proxy of [redisProxy, pgProxy]) {
        await proxy.stop();
        const res = await get(svc.baseUrl, "readiness");
        expect(res.status).toBe(503);
        expect(res.headers.get("retry-after")).toBe("1");
        const text = await res.text();
        expect(text).toMatch(/storage is unavailable/);
        expect(text).not.toMatch(/127\.0\.0\.1|redis|postgres/i);
        expect((await get(svc.baseUrl, "liveness")).status).toBe(200);
        await proxy.start();
        let status = 0;
        for (let i = 0; i < 100 && status !== 200; i++) {
          status = (await get(svc.baseUrl, "readiness")).status;
          if (status !== 200) await new Promise((r) => setTimeout(r, 100));
        }
        expect(status).toBe(200);
      }
    } finally {
      await svc.close();
      await redisProxy.stop();
      await pgProxy.stop();
    }
  });
});
