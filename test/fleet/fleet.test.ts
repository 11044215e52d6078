// apiKeyAuth across a fleet on the test Redis (the fleet tests of fleet-suite.ts, revoke-during-verify
// 1,000 times), and Redis going away and coming back (a TCP proxy in front of it cut and restored).
import { afterAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { keyHash } from "keyguard";
import { recordingLogger } from "../middleware/helpers";
import { describeFleet, fleetContext, type FleetRedis } from "./fleet-suite";
import { eventually, REDIS_URL, redisProxy, removePrefixes, skipWithoutRedis, uniquePrefix } from "./support";

const skip = await skipWithoutRedis("test/fleet/fleet.test.ts (apiKeyAuth across a fleet on Redis)");
afterAll(async () => {
  if (!skip) await removePrefixes();
});

/** The test Redis as the fleet sees it. */
const plainRedis = (): FleetRedis => ({
  where: () => ({ url: REDIS_URL }),
  async contents(prefix) {
    const redis = new Redis(REDIS_URL);
    try {
      const keys = await redis.keys(`${prefix}*`);
      return await Promise.all(
        keys.map(async (k): Promise<[string, string]> => [
          k,
          (await redis.type(k)) === "string" ? ((await redis.get(k)) ?? "") : (await redis.smembers(k)).join(" "),
        ]),
      );
    } finally {
      await redis.quit();
    }
  },
});

describeFleet("one Redis", plainRedis, { skip, raceRounds: 1000 });

describe.skipIf(skip)("Redis going away and coming back", () => {
  // Instances on redisStore()'s default per-command limit (250 ms): these tests are about Redis
  // failing; a command past the limit is a miss, answered by the key service, whatever the machine.
  const { ctx, instance, heard } = fleetContext(plainRedis, { skip });

  it(
    "requests are answered (never a 5xx), one throttled warning, invalidations are applied here and sent later, the memory tier is forgotten on reconnect",
    { timeout: 60_000 },
    async () => {
      const tcp = await redisProxy();
      const prefix = uniquePrefix("down");
      const logger = recordingLogger();
      const a = await instance(prefix, { url: tcp.url, logger, redisTimeout: 250 });
      const b = await instance(prefix, { url: tcp.url, redisTimeout: 250 });
      await Promise.all([a.store.ready, b.store.ready]);
      try {
        const key = await ctx.fx.createKey();
        const other = await ctx.fx.createKey();
        expect(await a.status(key)).toBe(200);
        expect(await b.status(key)).toBe(200);

        await tcp.cut();
        // Kept answers, and new keys verified by the service directly: all served.
        const statuses = await Promise.all([key, other, "sk_unknown_key_0001"].flatMap((k) => [a.status(k), b.status(k), a.status(k)]));
        expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 401, 401, 401]);
        // Revoked while Redis is away: applied on `a` at once.
        const before = ctx.proxy.verifyCalls;
        await a.auth.invalidate(key);
        expect(await a.status(key)).toBe(200);
        expect(ctx.proxy.verifyCalls - before).toBe(1);
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
        const calls = ctx.proxy.verifyCalls;
        expect(await b.status(other)).toBe(200);
        expect(ctx.proxy.verifyCalls - calls).toBe(1);
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
      // redisStore()'s default limit: a command past it is a miss (the service answers), so no answer
      // below depends on the machine's speed.
      const app = await instance(prefix, { url: tcp.url, logger, redisTimeout: 250 });
      await app.store.ready;
      try {
        const key = await ctx.fx.createKey();
        expect(await app.status(key)).toBe(200);
        tcp.stall();
        const fresh = await ctx.fx.createKey();
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

  it("a store closed while it subscribes again after a reconnect leaves no unhandled rejection; once subscribed it forgets again", async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => void rejections.push(reason);
    process.on("unhandledRejection", onRejection);
    const tcp = await redisProxy();
    try {
      // Subscribed again after a reconnect: the memory tier is forgotten when the connection is
      // ready and again once the subscription is answered.
      const again = await instance(uniquePrefix("resub"), { url: tcp.url, redisTimeout: 250 });
      await again.store.ready;
      let forgotten = 0;
      const stop = again.store.subscribe((m) => void (m.kind === "all" && forgotten++));
      await tcp.cut();
      await tcp.restore();
      expect(await eventually(() => forgotten === 2, 15_000)).toBe(true);
      stop();
      await again.close();

      // Closed before the subscription is answered: nothing is left unhandled.
      const app = await instance(uniquePrefix("resub-closed"), { url: tcp.url, redisTimeout: 250 });
      await app.store.ready;
      const ready = heard(app.store, (m) => m.kind === "all");
      await tcp.cut();
      await tcp.restore();
      await ready;
      tcp.stall(); // the SUBSCRIBE sent on "ready" is never answered
      await app.close();
      await tcp.close(); // the connection ends (a stalled peer never acknowledges its close)
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      process.off("unhandledRejection", onRejection);
      await tcp.close();
    }
    expect(rejections).toEqual([]);
  });

  it("a store whose Redis never answers still serves, from the service", async () => {
    const tcp = await redisProxy();
    await tcp.cut();
    const app = await instance(uniquePrefix("never"), { url: tcp.url, redisTimeout: 250 });
    try {
      const key = await ctx.fx.createKey();
      const before = ctx.proxy.verifyCalls;
      expect(await app.status(key)).toBe(200);
      expect(await app.status(key)).toBe(200);
      expect(ctx.proxy.verifyCalls - before).toBe(1); // the memory tier still works
      expect(await app.status("sk_unknown_key_0002")).toBe(401);
    } finally {
      await app.close();
      await tcp.close();
    }
  });
});
