// The fleet tests, on any Redis a test names: 4 apiKeyAuth() app instances (Express on 127.0.0.1,
// port 0), each with its own redisStore on that Redis (a unique key prefix), in front of one local
// key service behind a counting proxy. Shared answers, revocation on every instance, one service
// call per key per TTL, revoke-during-verify never resurrecting a key.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import express from "express";
import { createClient, type KeyServiceClient } from "keyguard/client";
import { apiKeyAuth, keyHash, silentLogger, type ApiKeyAuthHandler, type InvalidationMessage } from "keyguard";
import { redisStore, type RedisStore, type RedisStoreOptions } from "keyguard/redis";
import { startService, type recordingLogger, type ServiceFixture } from "../middleware/helpers";
import { countingProxy, eventually, listen, uniquePrefix } from "./support";
import { GENEROUS } from "../support/time-limits";

/** A Redis the fleet runs on: how a store reaches it, and a look at what it holds. */
export interface FleetRedis {
  /** The store options saying where Redis is (url, caFile, cluster). */
  where(): Pick<RedisStoreOptions, "url" | "caFile" | "cluster">;
  /** Every key under `prefix`, with its value (a string, or a set's members joined by spaces). */
  contents(prefix: string): Promise<Array<[string, string]>>;
}

export interface Instance {
  store: RedisStore;
  auth: ApiKeyAuthHandler;
  url: string;
  close(): Promise<void>;
  /** Status of GET / with the key. */
  status(key: string): Promise<number>;
}

/** The service, its counting proxy and the apps' client, for the tests of one file. */
export function fleetContext(redis: () => FleetRedis, options: { skip: boolean }) {
  const ctx = {} as {
    fx: ServiceFixture;
    proxy: Awaited<ReturnType<typeof countingProxy>>;
    client: KeyServiceClient;
  };
  beforeAll(async () => {
    if (options.skip) return;
    ctx.fx = await startService();
    ctx.proxy = await countingProxy(ctx.fx.svc.baseUrl);
    ctx.client = createClient({ rootKey: ctx.fx.svc.rootKey, baseUrl: ctx.proxy.baseUrl, logger: silentLogger, retry: false, ...GENEROUS });
  });
  afterAll(async () => {
    if (options.skip) return;
    await ctx.proxy?.close();
    await ctx.fx?.close();
  });

  async function instance(
    prefix: string,
    options: {
      url?: string;
      ttl?: number;
      logger?: ReturnType<typeof recordingLogger>;
      /** redisStore()'s per-command limit, ms; default generous, for the tests not about Redis timing out. */
      redisTimeout?: number;
    } = {},
  ): Promise<Instance> {
    const where = options.url === undefined ? redis().where() : { url: options.url };
    // Redis's per-command limit generous too (its default is 250 ms): beside CPU-bound processes a
    // lookup past it counts as a miss, and the answer is asked of the key service a second time.
    const store = await redisStore({
      ...where,
      prefix,
      logger: options.logger ?? silentLogger,
      timeout: options.redisTimeout ?? GENEROUS.timeout,
    });
    const auth = apiKeyAuth({
      client: ctx.client,
      store,
      logger: silentLogger,
      ...GENEROUS,
      ...(options.ttl === undefined ? {} : { cache: { ttl: options.ttl } }),
    });
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

  return { ctx, instance, fleet, heard };
}

/** The fleet tests on `redis`; `raceRounds` revoke-during-verify rounds. */
export function describeFleet(name: string, redis: () => FleetRedis, options: { skip: boolean; raceRounds: number }): void {
  describe.skipIf(options.skip)(`a fleet of 4 on ${name}`, () => {
    const { ctx, instance, fleet, heard } = fleetContext(redis, options);

    it("an answer asked by one instance serves the others (a new instance starts warm); nothing secret in Redis", async () => {
      const prefix = uniquePrefix("warm");
      const apps = await fleet(prefix);
      try {
        const key = await ctx.fx.createKey();
        const before = ctx.proxy.verifyCalls;
        expect(await apps[0]!.status(key)).toBe(200);
        for (const app of apps) expect(await app.status(key)).toBe(200);
        expect(ctx.proxy.verifyCalls - before).toBe(1);
        const late = await instance(prefix);
        await late.store.ready;
        expect(await late.status(key)).toBe(200);
        expect(ctx.proxy.verifyCalls - before).toBe(1);
        await late.close();

        const held = await redis().contents(apps[0]!.store.prefix);
        const keys = held.map(([k]) => k);
        const values = held.map(([, v]) => v);
        expect(keys.some((k) => k.includes(keyHash(key)))).toBe(true);
        expect([...keys, ...values].join("\n")).not.toContain(key);
        expect([...keys, ...values].join("\n")).not.toContain(ctx.fx.svc.rootKey);
      } finally {
        await Promise.all(apps.map((a) => a.close()));
      }
    });

    it("a revocation made through one instance, or through keyguard's client, is seen by all 4", async () => {
      const prefix = uniquePrefix("revoke");
      const apps = await fleet(prefix);
      const admin = createClient({
        rootKey: ctx.fx.svc.rootKey,
        baseUrl: ctx.fx.svc.baseUrl,
        logger: silentLogger,
        invalidate: apps[3]!.store,
      });
      try {
        // auth.invalidate(key) on instance 0 after disabling the key at the service.
        const { key, keyId } = await ctx.fx.createKeyWithId();
        for (const app of apps) expect(await app.status(key)).toBe(200);
        await ctx.fx.client.keys.updateKey({ keyId, enabled: false });
        for (const app of apps) expect(await app.status(key)).toBe(200); // still cached everywhere
        const everyone = Promise.all(apps.map((a) => heard(a.store, (m) => m.kind === "key" && m.keyHash === keyHash(key))));
        await apps[0]!.auth.invalidate(key);
        await everyone;
        for (const app of apps) expect(await app.status(key)).toBe(401);

        // keys.deleteKey through a client given the store: no extra code.
        const second = await ctx.fx.createKeyWithId();
        for (const app of apps) expect(await app.status(second.key)).toBe(200);
        const all = Promise.all(apps.map((a) => heard(a.store, (m) => m.kind === "keyId" && m.keyId === second.keyId)));
        await admin.keys.deleteKey({ keyId: second.keyId });
        await all;
        for (const app of apps) expect(await app.status(second.key)).toBe(401);

        // clear() on one instance empties every memory tier and Redis.
        const third = await ctx.fx.createKey();
        for (const app of apps) expect(await app.status(third)).toBe(200);
        const before = ctx.proxy.verifyCalls;
        const cleared = Promise.all(apps.map((a) => heard(a.store, (m) => m.kind === "all")));
        await apps[2]!.auth.clear();
        await cleared;
        expect(await apps[1]!.status(third)).toBe(200);
        expect(ctx.proxy.verifyCalls - before).toBe(1);
      } finally {
        await Promise.all(apps.map((a) => a.close()));
      }
    });

    it("one hot key costs the key service one call per TTL across the 4 instances", async () => {
      const apps = await fleet(uniquePrefix("hot"));
      try {
        const key = await ctx.fx.createKey();
        for (let round = 0; round < 5; round++) {
          const before = ctx.proxy.verifyCalls;
          // Every instance misses at once (as when the TTL ends everywhere), 10 requests each.
          const statuses = await Promise.all(apps.flatMap((app) => Array.from({ length: 10 }, () => app.status(key))));
          expect(statuses.every((s) => s === 200)).toBe(true);
          expect(ctx.proxy.verifyCalls - before).toBe(1);
          const cleared = Promise.all(apps.map((a) => heard(a.store, (m) => m.kind === "all")));
          await apps[round % 4]!.auth.clear();
          await cleared;
        }
      } finally {
        await Promise.all(apps.map((a) => a.close()));
      }
    });

    it(
      `revoke during verify, ${options.raceRounds} times: a verification in flight before the revoke never puts the key back`,
      { timeout: 300_000 },
      async () => {
        const apps = await fleet(uniquePrefix("race"));
        try {
          let resurrected = 0;
          for (let i = 0; i < options.raceRounds; i++) {
            const { key, keyId } = await ctx.fx.createKeyWithId();
            const verifying = apps[i % 4]!;
            const revoking = apps[(i + 1) % 4]!;
            // The service answers VALID, but the answer is held until the revoke is done.
            const answered = ctx.proxy.verifyAnswered;
            const release = ctx.proxy.holdAnswers();
            const inFlight = verifying.status(key);
            expect(await eventually(() => ctx.proxy.verifyAnswered > answered)).toBe(true);
            await ctx.fx.client.keys.deleteKey({ keyId });
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
}
