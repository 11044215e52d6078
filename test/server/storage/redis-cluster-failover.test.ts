// A Redis Cluster master killed (SIGKILL) during a verifyKey load on the PostgreSQL + Redis store:
// its replica takes over, and meanwhile every answer is a 200 or a 503 with Retry-After (never a
// 500); once the cluster has healed, verifications succeed again, and the credits spent are
// exactly the VALID answers given. The cluster (3 masters, 1 replica each) is started here from
// the machine's redis-server on spare loopback ports and stopped after.
import { afterAll, describe, expect, it } from "vitest";
import { startLocalKeyService } from "../../../src/server";
import { silentLogger } from "../../../src/logger";
import { POSTGRES_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";
import { redisServersSkipReason, startRedisCluster, type RedisCluster } from "../../support/redis-servers";
import { makeCall } from "../helpers";

const SUITE = "failover of a Redis Cluster master under load";
const skip = (await postgresRedisSkipReason(SUITE)) ?? (await redisServersSkipReason(SUITE));
const CREDITS = 1_000_000;
const WORKERS = 4;
/** Bounds of the load: it stops by itself. */
const MAX_REQUESTS = 20_000;
const MAX_LOAD_MS = 60_000;
/** Answers in a row that must be 200 once the cluster has healed. */
const AFTER_HEAL = 100;

let cluster: RedisCluster | undefined;
afterAll(() => cluster?.stop());

describe.skipIf(skip !== undefined)(SUITE, () => {
  const ns = isolatedNamespace();
  afterAll(() => ns.drop());

  it("503 with Retry-After while the replica takes over, 200 after, exact credits", { timeout: 120_000 }, async () => {
    cluster = await startRedisCluster({ masters: 3, replicas: 1 });
    const svc = await startLocalKeyService({
      postgres: POSTGRES_URL,
      redis: cluster.url,
      redisCluster: true,
      postgresSchema: ns.schema,
      logger: silentLogger,
    });
    try {
      const call = makeCall(svc.baseUrl, svc.rootKey);
      // A rate limit that never refuses here: every verification runs the counter script in Redis,
      // then spends a credit in PostgreSQL.
      const created = await call("keys.createKey", {
        apiId: svc.apiId,
        credits: { remaining: CREDITS },
        ratelimits: [{ name: "load", limit: 1_000_000, duration: 60_000, autoApply: true }],
      });
      expect(created.status).toBe(200);
      const { key, keyId } = created.body.data as { key: string; keyId: string };

      let valid = 0;
      let unavailable = 0;
      let requests = 0;
      const others: string[] = [];
      let healedAt: number | undefined = undefined;
      let okSinceHeal = 0;
      const start = Date.now();
      const worker = async () => {
        while (requests < MAX_REQUESTS && Date.now() - start < MAX_LOAD_MS && okSinceHeal < AFTER_HEAL) {
          requests++;
          const res = await call("keys.verifyKey", { key });
          if (res.status === 200 && res.body.data.code === "VALID") {
            valid++;
            if (healedAt !== undefined) okSinceHeal++;
          } else if (res.status === 503) {
            unavailable++;
            if (res.headers.get("retry-after") === null) others.push("503 without Retry-After");
            if (healedAt !== undefined) okSinceHeal = 0;
          } else others.push(`${res.status} ${JSON.stringify(res.body)}`);
        }
      };
      const load = Promise.all(Array.from({ length: WORKERS }, worker));

      // The master serving the counters' slot is killed once the load runs.
      while (valid < 200) await new Promise((r) => setTimeout(r, 10));
      const master = await cluster.masterOf(`{keyguard:${ns.schema}:}c:x`);
      cluster.kill(master);
      const killedAt = Date.now();
      await cluster.healed();
      healedAt = Date.now();
      await load;

      console.log(
        `[failover] ${requests} verifications: ${valid} VALID, ${unavailable} answered 503; ` +
          `the replica took over ${healedAt - killedAt} ms after the kill`,
      );
      expect(others).toEqual([]);
      expect(okSinceHeal).toBeGreaterThanOrEqual(AFTER_HEAL);
      const got = await call("keys.getKey", { keyId });
      expect(got.body.data.credits.remaining).toBe(CREDITS - valid);
    } finally {
      await svc.close();
    }
  });
});
