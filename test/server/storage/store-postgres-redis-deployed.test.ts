// The store conformance suite on PostgreSQL + Redis as it is deployed: a Redis speaking TLS only
// (certificates made at start, the CA given as a file), a three-master Redis Cluster, and a
// three-master Redis Cluster speaking TLS only, all started here from the machine's redis-server
// and stopped after.
import { afterAll, describe, expect, it } from "vitest";
import { postgresStorage } from "../../../src/server/storage/postgres/store";
import { LocalServiceConfigError } from "../../../src/server/errors";
import { POSTGRES_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";
import { redisServersSkipReason, startRedisCluster, startTlsRedis } from "../../support/redis-servers";
import { describeStoreConformance } from "./store-conformance";

const SUITE = "store conformance: postgres + redis over TLS and on a Redis Cluster";
const skip = (await postgresRedisSkipReason(SUITE)) ?? (await redisServersSkipReason(SUITE));
const tls = skip === undefined ? await startTlsRedis() : undefined;
const cluster =
  skip === undefined ? await startRedisCluster({ replicas: 0 }).catch((err: unknown) => (tls?.stop(), Promise.reject(err))) : undefined;
const tlsCluster =
  skip === undefined
    ? await startRedisCluster({ replicas: 0, tls: true }).catch((err: unknown) => (tls?.stop(), cluster?.stop(), Promise.reject(err)))
    : undefined;
const onTls = isolatedNamespace();
const onCluster = isolatedNamespace();
const onTlsCluster = isolatedNamespace();
afterAll(async () => {
  tls?.stop();
  cluster?.stop();
  tlsCluster?.stop();
  if (skip === undefined) await Promise.all([onTls.drop(), onCluster.drop(), onTlsCluster.drop()]);
});

describeStoreConformance(
  "postgres + redis over TLS (rediss://, CA file)",
  () => postgresStorage({ postgres: POSTGRES_URL, redis: tls!.url, redisCaFile: tls!.caFile, schema: onTls.schema }),
  skip === undefined ? {} : { skip },
);

describeStoreConformance(
  "postgres + a Redis Cluster of 3 masters",
  () => postgresStorage({ postgres: POSTGRES_URL, redis: cluster!.url, redisCluster: true, schema: onCluster.schema }),
  skip === undefined ? {} : { skip },
);

describeStoreConformance(
  "postgres + a Redis Cluster of 3 masters over TLS",
  () =>
    postgresStorage({
      postgres: POSTGRES_URL,
      redis: tlsCluster!.url,
      redisCaFile: tlsCluster!.caFile,
      redisCluster: true,
      schema: onTlsCluster.schema,
    }),
  skip === undefined ? {} : { skip },
);

describe.skipIf(skip !== undefined)("postgres + redis as deployed: what is refused", () => {
  it("the counters of a cluster store are all in one hash slot, under the prefix in braces", async () => {
    const store = await postgresStorage({ postgres: POSTGRES_URL, redis: cluster!.url, redisCluster: true, schema: onCluster.schema });
    const client = cluster!.client();
    try {
      const now = Date.now();
      const checks = ["a/1000", "b/60000", "c/1000"].map((counter, i) => ({
        counter,
        limit: 5,
        duration: 1000,
        cost: 1,
        owner: `key_${i}`,
      }));
      expect((await store.direct.limit(checks, now)).passed).toBe(true);
      const slot = await client.cluster("KEYSLOT", `{keyguard:${onCluster.schema}:}`);
      for (const name of ["c:a/1000", "c:b/60000", "o:key_1"]) {
        const key = `{keyguard:${onCluster.schema}:}${name}`;
        expect(await client.exists(key)).toBe(1);
        expect(await client.cluster("KEYSLOT", key)).toBe(slot);
      }
    } finally {
      client.disconnect();
      await store.close();
    }
  });

  it("a TLS server whose certificate another CA signed is refused: StoreUnavailableError, no store", async () => {
    const err = await postgresStorage({
      postgres: POSTGRES_URL,
      redis: tls!.url,
      redisCaFile: tls!.otherCaFile,
      schema: onTls.schema,
      timeoutMs: 2000,
    }).catch((e: unknown) => e);
    expect((err as Error).name).toBe("StoreUnavailableError");
  });

  it("a missing CA file, a CA file for redis://, a cluster URL with a database: LocalServiceConfigError naming the option", async () => {
    const cases = [
      [{ redis: tls!.url, redisCaFile: "/nonexistent/ca.pem" }, "redisCaFile", /cannot be read \(ENOENT\)/],
      [{ redis: "redis://127.0.0.1:6379", redisCaFile: tls!.caFile }, "redisCaFile", /rediss:\/\//],
      [{ redis: tls!.url, redisCaFile: __filename }, "redisCaFile", /no PEM certificate/],
      [{ redis: "redis://127.0.0.1:6379/3", redisCluster: true }, "redis", /database 0 only/],
      [{ redis: "http://127.0.0.1:6379" }, "redis", /redis:\/\/ or rediss:\/\//],
      [{ redis: cluster!.url, redisCluster: "yes" }, "redisCluster", /true or false/],
    ] as const;
    for (const [options, option, message] of cases) {
      const err = await postgresStorage({ postgres: POSTGRES_URL, ...options } as never).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LocalServiceConfigError);
      expect((err as LocalServiceConfigError).option).toBe(option);
      expect((err as Error).message).toMatch(message);
    }
  });
});
