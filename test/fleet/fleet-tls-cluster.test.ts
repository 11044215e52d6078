// The fleet tests (fleet-suite.ts) on Redis as it is deployed: a Redis speaking TLS only (the CA
// given as a file), a Redis Cluster of 3 masters with a replica each, and one of 3 masters
// speaking TLS only, all started here from the machine's redis-server and stopped after. The cluster carries the store's keys in one hash
// slot and the invalidations over classic pub/sub; when the node of a store's subscriber dies, the
// subscriber moves to another node.
import { afterAll, describe, expect, it, onTestFinished } from "vitest";
import type { Cluster, Redis } from "ioredis";
import { ConfigError, silentLogger } from "keyguard";
import { redisStore } from "keyguard/redis";
import { Redis as RedisClient } from "ioredis";
import { encodeInvalidation } from "../../src/protocol/invalidation";
import { uniquePrefix } from "./support";
import { redisServersSkipReason, startRedisCluster, startTlsRedis, type RedisCluster } from "../support/redis-servers";
import { describeFleet, type FleetRedis } from "./fleet-suite";

const skip = (await redisServersSkipReason("test/fleet/fleet-tls-cluster.test.ts")) !== undefined;
const tls = skip ? undefined : await startTlsRedis();
const cluster = skip ? undefined : await startRedisCluster({ replicas: 1 }).catch((err: unknown) => (tls?.stop(), Promise.reject(err)));
const tlsCluster = skip
  ? undefined
  : await startRedisCluster({ replicas: 0, tls: true }).catch((err: unknown) => (tls?.stop(), cluster?.stop(), Promise.reject(err)));
afterAll(() => {
  tls?.stop();
  cluster?.stop();
  tlsCluster?.stop();
});

async function contents(nodes: Redis[], prefix: string): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  for (const redis of nodes) {
    for (const k of await redis.keys(`${prefix}*`)) {
      out.push([k, (await redis.type(k)) === "string" ? ((await redis.get(k)) ?? "") : (await redis.smembers(k)).join(" ")]);
    }
  }
  return out;
}

const overTls = (): FleetRedis => ({
  where: () => ({ url: tls!.url, caFile: tls!.caFile }),
  async contents(prefix) {
    const redis = tls!.client();
    try {
      return await contents([redis], prefix);
    } finally {
      redis.disconnect();
    }
  },
});

const onCluster = (which: () => RedisCluster): FleetRedis => ({
  where: () => ({ url: which().url, cluster: true, ...(which().caFile !== undefined && { caFile: which().caFile }) }),
  async contents(prefix) {
    const client: Cluster = which().client();
    try {
      await new Promise((resolve) => client.once("ready", resolve));
      return await contents(client.nodes("master"), prefix);
    } finally {
      client.disconnect();
    }
  },
});

describeFleet("one Redis over TLS", overTls, { skip, raceRounds: 100 });
describeFleet("a Redis Cluster of 3 masters and 3 replicas", () => onCluster(() => cluster!), { skip, raceRounds: 100 });
describeFleet("a Redis Cluster of 3 masters over TLS", () => onCluster(() => tlsCluster!), { skip, raceRounds: 50 });

describe.skipIf(skip)("redisStore on Redis as deployed: options", () => {
  it("on a cluster every key is under the prefix in braces (one hash slot), and the channel too", async () => {
    const store = await redisStore({ url: cluster!.url, cluster: true, prefix: "kgtest:slot:", logger: silentLogger });
    try {
      expect(store.prefix).toBe("{kgtest:slot:}");
      expect(store.channel).toBe("{kgtest:slot:}invalidate");
      await store.ready;
    } finally {
      await store.close();
    }
    const tagged = await redisStore({ url: cluster!.url, cluster: true, prefix: "app:{kg}:", logger: silentLogger });
    expect(tagged.prefix).toBe("app:{kg}:");
    await tagged.close();
  });

  it("takes an ioredis Cluster as client: braces around the prefix, and invalidations reach another store", async () => {
    const template = cluster!.client();
    const prefix = uniquePrefix("client");
    const a = await redisStore({ client: template, prefix, logger: silentLogger });
    const b = await redisStore({ url: cluster!.url, cluster: true, prefix, logger: silentLogger });
    try {
      expect(a.prefix).toBe(`{${prefix}}`);
      await Promise.all([a.ready, b.ready]);
      const keyHash = `${"b".repeat(43)}=`;
      const heard = new Promise<void>((resolve) => b.subscribe((m) => m.kind === "key" && m.keyHash === keyHash && resolve()));
      await a.invalidate({ v: 1, kind: "key", keyHash });
      await heard;
    } finally {
      await a.close();
      await b.close();
      template.disconnect();
    }
  });

  it("a missing CA file, a CA file for redis://, an unknown cluster value, a client with a url: ConfigError naming the option", async () => {
    const cases = [
      [{ url: tls!.url, caFile: "/nonexistent/ca.pem" }, "caFile", /cannot be read \(ENOENT\)/],
      [{ url: "redis://127.0.0.1:6379", caFile: tls!.caFile }, "caFile", /rediss:\/\//],
      [{ url: cluster!.url, cluster: 1 }, "cluster", /true or false/],
      [{ url: "redis://127.0.0.1:6379/2", cluster: true }, "url", /database 0 only/],
      [{ client: { duplicate: () => undefined }, caFile: tls!.caFile }, "caFile", /either client or caFile/],
    ] as const;
    for (const [options, option, message] of cases) {
      const err = await redisStore({ ...options, logger: silentLogger } as never).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).option).toBe(option);
      expect((err as Error).message).toMatch(message);
    }
  });
});

describe.skipIf(skip)("redisStore on a cluster whose subscriber's node dies", () => {
  it("the subscriber moves to another node, forgets the memory tier, and hears later invalidations", { timeout: 90_000 }, async () => {
    // A cluster of its own: the other tests' cluster keeps all its nodes, whatever order tests run in.
    const own = await startRedisCluster({ replicas: 1 });
    onTestFinished(() => own.stop());
    const store = await redisStore({ url: own.url, cluster: true, prefix: uniquePrefix("hop"), logger: silentLogger });
    const heard: string[] = [];
    store.subscribe((m) => heard.push(m.kind === "key" ? `key ${m.keyHash}` : m.kind));
    try {
      await store.ready;
      // The node holding the store's subscription (the only pub/sub connection of this cluster).
      let subscriberNode: number | undefined;
      for (const port of own.ports) {
        const node = new RedisClient({ host: "127.0.0.1", port });
        const list = (await node.call("CLIENT", "LIST", "TYPE", "pubsub")) as string;
        node.disconnect();
        if (list.trim() !== "") subscriberNode = port;
      }
      expect(subscriberNode).toBeDefined();
      own.kill(subscriberNode!);
      await own.healed();
      // Subscribed again elsewhere: the memory tier is forgotten (it may have missed invalidations).
      for (let i = 0; i < 100 && !heard.includes("all"); i++) await new Promise((r) => setTimeout(r, 100));
      expect(heard).toContain("all");

      // An invalidation published by anyone on the cluster reaches it.
      const publisher = own.client();
      try {
        const keyHash = `${"a".repeat(43)}=`;
        for (let i = 0; i < 100 && !heard.includes(`key ${keyHash}`); i++) {
          await publisher.publish(store.channel, encodeInvalidation({ v: 1, kind: "key", keyHash }));
          await new Promise((r) => setTimeout(r, 100));
        }
        expect(heard).toContain(`key ${keyHash}`);
        expect(heard.filter((m) => m === "all").length).toBeLessThanOrEqual(2);
      } finally {
        publisher.disconnect();
      }
    } finally {
      await store.close();
    }
  });
});
