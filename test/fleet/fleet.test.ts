// apiKeyAuth across a fleet: 4 app instances (Express on 127.0.0.1, port 0), each with its own
// redisStore on one real Redis (a unique key prefix), in front of one local key service behind a
// counting proxy. Shared answers, revocation on every instance, one service call per key per TTL,
// revoke-during-verify never resurrecting a key (1,000 times), and Redis going away and back.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import express from "express";
import { Redis } from "ioredis";
import { createClient, type KeyServiceClient } from "keyguard/client";
import { apiKeyAuth, keyHash, silentLogger, type ApiKeyAuthHandler, type InvalidationMessage } from "keyguard";
import { redisStore, type RedisStore } from "keyguard/redis";
import { startService, recordingLogger, type ServiceFixture } from "../middleware/helpers";
import { countingProxy, eventually, listen, REDIS_URL, redisProxy, removePrefixes, skipWithoutRedis, uniquePrefix } from "./support";

const skip = await skipWithoutRedis("test/fleet/fleet.test.ts (apiKeyAuth across a fleet on Redis)");

interface Instance {
  store: RedisStore;
  auth: ApiKeyAuthHandler;
  url: string;
  close(): Promise<void>;
  /** Status of GET / with the key. */
  status(key: string): Promise<number>;
}

let fx: ServiceFixture;
let proxy: Awaited<ReturnType<typeof countingProxy>>;
/** The verifying client of the apps (through the counting proxy). */
let client: KeyServiceClient;

async function instance(
  prefix: string,
  options: { url?: string; ttl?: number; logger?: ReturnType<typeof recordingLogger> } = {},
): Promise<Instance> {
  const store = await redisStore({ url: options.url ?? REDIS_URL, prefix, logger: options.logger ?? silentLogger });
  const auth = apiKeyAuth({ client, store, logger: silentLogger, ...(options.ttl === undefined ? {} : { cache: { ttl: options.ttl } }) });
  const app = express().get("/", auth, (_req, res) => {
    res.send("ok");
  });
  const server = await listen(app);
  return {
    store,
    auth,
    url: server.url,
    status: async (key) => (await fetch(`${server.url}/`, { headers: { "X-API-Key": key } })).status,
    close: async () => {
      await server.close();
      await store.close();
    },
  };
}

async function fleet(prefix: string, n = 4, options: Parameters<typeof instance>[1] = {}): Promise<Instance[]> {
  const all = await Promise.all(Array.from({ length: n }, () => instance(prefix, options)));
  // Every subscription is up before the test starts.
  await Promise.all(all.map((i) => i.store.ready));
  return all;
}

/** Resolves when `store` has applied an invalidation matching `match`. */
function heard(store: RedisStore, match: (m: InvalidationMessage) => boolean): Promise<void> {
  return new Promise((resolve) => {
    const stop = store.subscribe((m) => {
      if (match(m)) {
        stop();
        resolve();
      }
    });
  });
}

beforeAll(async () => {
  if (skip) return;
  fx = await startService();
  proxy = await countingProxy(fx.svc.baseUrl);
  client = createClient({ rootKey: fx.svc.rootKey, baseUrl: proxy.baseUrl, logger: silentLogger, retry: false });
});
afterAll(async () => {
  if (skip) return;
  await proxy.close();
  await fx.close();
  await removePrefixes();
});

describe.skipIf(skip)("a fleet of 4 on one Redis", () => {
  it("an answer asked by one instance serves the others (a new instance starts warm); nothing secret in Redis", async () => {
    const prefix = uniquePrefix("warm");
    const apps = await fleet(prefix);
    try {
      const key = await fx.createKey();
      const before = proxy.verifyCalls;
      expect(await apps[0]!.status(key)).toBe(200);
      for (const app of apps) expect(await app.status(key)).toBe(200);
      expect(proxy.verifyCalls - before).toBe(1);
      const late = await instance(prefix);
      await late.store.ready;
      expect(await late.status(key)).toBe(200);
      expect(proxy.verifyCalls - before).toBe(1);
      await late.close();

      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`${prefix}*`);
      const values = await Promise.all(
        keys.map(async (k) => ((await redis.type(k)) === "string" ? ((await redis.get(k)) ?? "") : (await redis.smembers(k)).join(" "))),
      );
      await redis.quit();
      expect(keys.some((k) => k.includes(keyHash(key)))).toBe(true);
      expect([...keys, ...values].join("\n")).not.toContain(key);
      expect([...keys, ...values].join("\n")).not.toContain(fx.svc.rootKey);
    } finally {
      await Promise.all(apps.map((a) => a.close()));
    }
  });

  it("a revocation made through one instance, or through keyguard's client, is seen by all 4", async () => {
    const prefix = uniquePrefix("revoke");
    const apps = await fleet(prefix);
    const admin = createClient({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, logger: silentLogger, invalidate: apps[3]!.store });
    try {
      // auth.invalidate(key) on instance 0 after disabling the key at the service.
      const { key, keyId } = await fx.createKeyWithId();
      for (const app of apps) expect(await app.status(key)).toBe(200);
      await fx.client.keys.updateKey({ keyId, enabled: false });
      for (const app of apps) expect(await app.status(key)).toBe(200); // still cached everywhere
      const everyone = Promise.all(apps.map((a) => heard(a.store, (m) => m.kind === "key" && m.keyHash === keyHash(key))));
      await apps[0]!.auth.invalidate(key);
      await everyone;
      for (const app of apps) expect(await app.status(key)).toBe(401);

      // keys.deleteKey through a client given the store: no extra code.
      const second = await fx.createKeyWithId();
      for (const app of apps) expect(await app.status(second.key)).toBe(200);
      const all = Promise.all(apps.map((a) => heard(a.store, (m) => m.kind === "keyId" && m.keyId === second.keyId)));
      await admin.keys.deleteKey({ keyId: second.keyId });
      await all;
      for (const app of apps) expect(await app.status(second.key)).toBe(401);

      // clear() on one instance empties every memory tier and Redis.
      const third = await fx.createKey();
      for (const app of apps) expect(await app.status(third)).toBe(200);
      const before = proxy.verifyCalls;
      const cleared = Promise.all(apps.map((a) => heard(a.store, (m) => m.kind === "all")));
      await apps[2]!.auth.clear();
      await cleared;
      expect(await apps[1]!.status(third)).toBe(200);
      expect(proxy.verifyCalls - before).toBe(1);
    } finally {
      await Promise.all(apps.map((a) => a.close()));
    }
  });

  it("one hot key costs the key service one call per TTL across the 4 instances", async () => {
    const apps = await fleet(uniquePrefix("hot"));
    try {
      const key = await fx.createKey();
      for (let round = 0; round < 5; round++) {
        const before = proxy.verifyCalls;
        // Every instance misses at once (as when the TTL ends everywhere), 10 requests each.
        const statuses = await Promise.all(apps.flatMap((app) => Array.from({ length: 10 }, () => app.status(key))));
        expect(statuses.every((s) => s === 200)).toBe(true);
        expect(proxy.verifyCalls - before).toBe(1);
        const cleared = Promise.all(apps.map((a) => heard(a.store, (m) => m.kind === "all")));
        await apps[round % 4]!.auth.clear();
        await cleared;
      }
    } finally {
      await Promise.all(apps.map((a) => a.close()));
    }
  });

  it(
    "revoke during verify, 1,000 times: a verification in flight before the revoke never puts the key back",
    { timeout: 300_000 },
    async () => {
      const apps = await fleet(uniquePrefix("race"));
      try {
        let resurrected = 0;
        for (let i = 0; i < 1000; i++) {
          const { key, keyId } = await fx.createKeyWithId();
          const verifying = apps[i % 4]!;
          const revoking = apps[(i + 1) % 4]!;
          // The service answers VALID, but the answer is held until the revoke is done.
          const answered = proxy.verifyAnswered;
          const release = proxy.holdAnswers();
          const inFlight = verifying.status(key);
          expect(await eventually(() => proxy.verifyAnswered > answered)).toBe(true);
          await fx.client.keys.deleteKey({ keyId });
          const everyone = Promise.all(apps.map((a) => heard(a.store, (m) => m.kind === "keyId" && m.keyId === keyId)));
          await (i % 2 === 0 ? revoking.auth.invalidateKeyId(keyId) : revoking.store.invalidate({ v: 1, kind: "keyId", keyId }));
          release();
          await inFlight; // 200 or 401: it started before the revoke
          await everyone;
          const after = await Promise.all(apps.map((a) => a.status(key)));
          if (after.some((s) => s !== 401)) resurrected++;
        }
        expect(resurrected).toBe(0);
      } finally {
        await Promise.all(apps.map((a) => a.close()));
      }
    },
  );
});

describe.skipIf(skip)("Redis going away and coming back", () => {
  it(
    "requests are answered (never a 5xx), one throttled warning, invalidations are applied here and sent later, the memory tier is forgotten on reconnect",
    { timeout: 60_000 },
    async () => {
      const tcp = await redisProxy();
      const prefix = uniquePrefix("down");
      const logger = recordingLogger();
      const a = await instance(prefix, { url: tcp.url, logger });
      const b = await instance(prefix, { url: tcp.url });
      await Promise.all([a.store.ready, b.store.ready]);
      try {
        const key = await fx.createKey();
        const other = await fx.createKey();
        expect(await a.status(key)).toBe(200);
        expect(await b.status(key)).toBe(200);

        await tcp.cut();
        // Kept answers, and new keys verified by the service directly: all served.
        const statuses = await Promise.all([key, other, "sk_unknown_key_0001"].flatMap((k) => [a.status(k), b.status(k), a.status(k)]));
        expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 401, 401, 401]);
        // Revoked while Redis is away: applied on `a` at once.
        const before = proxy.verifyCalls;
        await a.auth.invalidate(key);
        expect(await a.status(key)).toBe(200);
        expect(proxy.verifyCalls - before).toBe(1);
        const warnings = logger.entries.filter((e) => e.message.startsWith("keyguard/redis"));
        expect(warnings).toHaveLength(1);
        expect(JSON.stringify(warnings)).not.toContain(key);

        // Back: b's subscription reconnects and forgets its memory tier (b may miss a's message if it
        // is sent before b has subscribed again: that is why it forgets); a's pending invalidation
        // reaches Redis (its tombstone is there).
        const forgotten = heard(b.store, (m) => m.kind === "all");
        await tcp.restore();
        await forgotten;
        const redis = new Redis(REDIS_URL);
        try {
          expect(await eventually(async () => (await redis.exists(`${prefix}t:h:${keyHash(key)}`)) === 1, 15_000)).toBe(true);
        } finally {
          await redis.quit();
        }
        const calls = proxy.verifyCalls;
        expect(await b.status(other)).toBe(200);
        expect(proxy.verifyCalls - calls).toBe(1);
      } finally {
        await a.close();
        await b.close();
        await tcp.close();
      }
    },
  );

  it(
    "a Redis that stops answering (connections open): commands time out, requests are served, the invalidation is sent when it answers again",
    { timeout: 60_000 },
    async () => {
      const tcp = await redisProxy();
      const prefix = uniquePrefix("slow");
      const logger = recordingLogger();
      const app = await instance(prefix, { url: tcp.url, logger });
      await app.store.ready;
      try {
        const key = await fx.createKey();
        expect(await app.status(key)).toBe(200);
        tcp.stall();
        const fresh = await fx.createKey();
        expect(await Promise.all([app.status(fresh), app.status(key), app.status("sk_unknown_key_0003")])).toEqual([200, 200, 401]);
        await app.auth.invalidate(key); // resolves although Redis does not answer
        expect(logger.entries.filter((e) => e.message.startsWith("keyguard/redis"))).toHaveLength(1);
        tcp.unstall();
        const redis = new Redis(REDIS_URL);
        try {
          expect(await eventually(async () => (await redis.exists(`${prefix}t:h:${keyHash(key)}`)) === 1, 15_000)).toBe(true);
        } finally {
          await redis.quit();
        }
      } finally {
        await app.close();
        await tcp.close();
      }
    },
  );

  it("a store whose Redis never answers still serves, from the service", async () => {
    const tcp = await redisProxy();
    await tcp.cut();
    const app = await instance(uniquePrefix("never"), { url: tcp.url });
    try {
      const key = await fx.createKey();
      const before = proxy.verifyCalls;
      expect(await app.status(key)).toBe(200);
      expect(await app.status(key)).toBe(200);
      expect(proxy.verifyCalls - before).toBe(1); // the memory tier still works
      expect(await app.status("sk_unknown_key_0002")).toBe(401);
    } finally {
      await app.close();
      await tcp.close();
    }
  });
});
