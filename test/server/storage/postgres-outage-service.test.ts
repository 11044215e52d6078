// The service on PostgreSQL + Redis, each behind a TCP proxy the test stops and starts: an outage
// answers 503 service_unavailable (never a 500), logs one line naming the server (never the
// URL's password), and the service recovers by itself.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalKeyService, type RunningLocalKeyService } from "keyguard/server";
import type { Logger } from "keyguard";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";
import { startTcpProxy, type TcpProxy } from "../../support/tcp-proxy";
import { makeCall, type Call, type CallResult } from "../helpers";

const skip = await postgresRedisSkipReason("the service through PostgreSQL and Redis outages");
const ROOT_KEY = `root_outage${Date.now()}_4f1c9e27b8a35d60e2b7c41f9a0d8e36`;

/** Retries `fn` until `ok` holds for its answer (the service recovering), at most ~15 s. */
async function eventually(fn: () => Promise<CallResult>, ok: (r: CallResult) => boolean): Promise<CallResult> {
  let last: CallResult | undefined;
  for (let i = 0; i < 150; i++) {
    last = await fn();
    if (ok(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  return last!;
}

describe.skipIf(skip !== undefined)("the service through PostgreSQL and Redis outages", () => {
  const ns = isolatedNamespace();
  const lines: string[] = [];
  const logger: Logger = {
    warn: (fields, msg) => lines.push(`${msg} ${JSON.stringify(fields)}`),
    error: (fields, msg) => lines.push(`${msg} ${JSON.stringify(fields)}`),
  };
  let pgProxy: TcpProxy;
  let redisProxy: TcpProxy;
  let service: RunningLocalKeyService;
  let call: Call;

  beforeAll(async () => {
    pgProxy = await startTcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
    redisProxy = await startTcpProxy(Number(new URL(REDIS_URL).port || 6379));
    const postgres = new URL(POSTGRES_URL);
    postgres.port = String(pgProxy.port);
    postgres.password = "s3cret-pw";
    const redis = new URL(REDIS_URL);
    redis.port = String(redisProxy.port);
    service = await startLocalKeyService({
      postgres: postgres.toString(),
      redis: redis.toString(),
      postgresSchema: ns.schema,
      rootKey: ROOT_KEY,
      logger,
    });
    call = makeCall(service.baseUrl, ROOT_KEY);
  });
  afterAll(async () => {
    await service?.close();
    await pgProxy?.stop();
    await redisProxy?.stop();
    await ns.drop();
  });

  const expect503 = (res: CallResult) => {
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(JSON.stringify(res.body)).toContain("service_unavailable");
  };

  it("PostgreSQL down: 503 to verifications and changes, one log line, then recovery", async () => {
    const created = await call("keys.createKey", { apiId: service.apiId, credits: { remaining: 5 } });
    expect(created.status).toBe(200);
    const { key } = created.body.data;
    lines.length = 0;
    await pgProxy.stop();
    for (let i = 0; i < 5; i++) {
      expect503(await call("keys.verifyKey", { key }));
      expect503(await call("keys.createKey", { apiId: service.apiId }));
    }
    const logged = lines.filter((l) => l.includes("PostgreSQL"));
    expect(logged.length).toBeGreaterThanOrEqual(1);
    expect(logged.length).toBeLessThanOrEqual(2); // one per kind: "connection lost" then "connection refused" at most
    expect(lines.join("\n")).not.toContain("s3cret-pw");
    await pgProxy.start();
    const back = await eventually(
      () => call("keys.verifyKey", { key }),
      (r) => r.status === 200,
    );
    expect(back.body.data).toMatchObject({ valid: true, code: "VALID", credits: 4 });
  });

  it("Redis down: 503 to keys with rate limits, keys without still verify, then recovery", async () => {
    const limited = (
      await call("keys.createKey", {
        apiId: service.apiId,
        ratelimits: [{ name: "requests", limit: 100, duration: 60_000, autoApply: true }],
      })
    ).body.data;
    const plain = (await call("keys.createKey", { apiId: service.apiId })).body.data;
    expect((await call("keys.verifyKey", { key: limited.key })).body.data.code).toBe("VALID");
    lines.length = 0;
    await redisProxy.stop();
    for (let i = 0; i < 5; i++) expect503(await call("keys.verifyKey", { key: limited.key }));
    expect((await call("keys.verifyKey", { key: plain.key })).body.data.code).toBe("VALID");
    const logged = lines.filter((l) => l.includes("Redis"));
    expect(logged.length).toBeGreaterThanOrEqual(1);
    expect(logged.length).toBeLessThanOrEqual(2);
    await redisProxy.start();
    const back = await eventually(
      () => call("keys.verifyKey", { key: limited.key }),
      (r) => r.status === 200,
    );
    expect(back.body.data.code).toBe("VALID");
  });
});
