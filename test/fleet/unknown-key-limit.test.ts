// apiKeyAuth({ unknownKeyLimit }) across a fleet: two Express apps, each with its own redisStore()
// on one Redis prefix, in front of a real key service on port 0 (its verifyKey calls counted).
// Unknown keys spread over both instances trip the limit for both; the window's end lifts it on
// both; with Redis cut, each instance counts on its own (the store's outage behaviour: answers
// from memory) and no request fails for it.
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { apiKeyAuth, silentLogger } from "keyguard";
import { redisStore, type RedisStore } from "keyguard/redis";
import { countingClient, recordingLogger, startService, type ServiceFixture } from "../middleware/helpers";
import { GENEROUS } from "../support/time-limits";
import { listen, REDIS_URL, redisProxy, removePrefixes, skipWithoutRedis, uniquePrefix } from "./support";

const skip = await skipWithoutRedis("test/fleet/unknown-key-limit.test.ts (unknownKeyLimit across a fleet on Redis)");

let fx: ServiceFixture;
beforeAll(async () => {
  if (!skip) fx = await startService();
});
afterAll(async () => {
  if (skip) return;
  await fx.close();
  await removePrefixes();
});

let serial = 0;
const unknownKey = () => `sk_fleet_unknown${++serial}xxxxxxxxxxxxxxxx`;

interface App {
  store: RedisStore;
  status(key: string): Promise<number>;
  close(): Promise<void>;
}

/** `n` apps on one Redis prefix, sharing one counting client; `window` in ms. */
async function fleet(
  n: number,
  options: { prefix: string; max: number; window: number; url?: string; logger?: ReturnType<typeof recordingLogger> },
) {
  const { client, calls } = countingClient(fx.svc);
  const apps: App[] = [];
  for (let i = 0; i < n; i++) {
    const store = await redisStore({
      url: options.url ?? REDIS_URL,
      prefix: options.prefix,
      logger: options.logger ?? silentLogger,
      timeout: options.url === undefined ? GENEROUS.timeout : 250,
    });
    const auth = apiKeyAuth({
      client,
      store,
      logger: silentLogger,
      ...GENEROUS,
      unknownKeyLimit: { max: options.max, window: options.window },
    });
    const server = await listen(
      express().get("/", auth, (_req, res) => {
        res.send("ok");
      }),
    );
    apps.push({
      store,
      status: async (key) => (await fetch(server.url, { headers: { authorization: `Bearer ${key}` } })).status,
      close: async () => {
        await server.close();
        await store.close();
      },
    });
  }
  // Until a store's connection is up it counts in memory (as while Redis is away); the Redis cut later is up first too.
  await Promise.all(apps.map((a) => a.store.ready));
  return { apps, calls, close: () => Promise.all(apps.map((a) => a.close())) };
}

describe.skipIf(skip)("redisStore().count", () => {
  it("counts in a fixed window opened by the first addition, shared by two stores on one prefix; 0 only reads", async () => {
    const prefix = uniquePrefix("count");
    const [one, two] = await Promise.all(
      [0, 1].map(() => redisStore({ url: REDIS_URL, prefix, logger: silentLogger, timeout: GENEROUS.timeout })),
    );
    // Until a store's connection is up it counts in memory (as while Redis is away).
    await Promise.all([one!.ready, two!.ready]);
    try {
      expect(await one!.count("c", 0, 1000)).toEqual({ count: 0, resetMs: 0 });
      expect((await one!.count("c", 1, 1000)).count).toBe(1);
      const second = await two!.count("c", 1, 1000);
      expect(second.count).toBe(2);
      expect(second.resetMs).toBeGreaterThan(0);
      expect(second.resetMs).toBeLessThanOrEqual(1000);
      expect((await one!.count("c", 0, 1000)).count).toBe(2);
      expect((await one!.count("other", 0, 1000)).count).toBe(0);
      await expect.poll(async () => (await two!.count("c", 0, 1000)).count, { timeout: 30_000, interval: 100 }).toBe(0);
      expect((await one!.count("c", 1, 1000)).count).toBe(1);
    } finally {
      await Promise.all([one!.close(), two!.close()]);
    }
  });
});

describe.skipIf(skip)("unknownKeyLimit across a fleet on Redis", () => {
  it("unknown keys spread over two instances trip the limit for both, without further calls", async () => {
    const prefix = uniquePrefix("unknown-keys");
    const { apps, calls, close } = await fleet(2, { prefix, max: 4, window: 60_000 });
    const [a, b] = apps as [App, App];
    try {
      for (const app of [a, b, a, b]) expect(await app.status(unknownKey())).toBe(401);
      expect(calls.count).toBe(4);
      // Each instance saw 2 of the 4: neither could have blocked on its own count.
      expect(await b.status(unknownKey())).toBe(429);
      expect(await a.status(unknownKey())).toBe(429);
      expect(await a.status(unknownKey())).toBe(429);
      expect(calls.count).toBe(4);
      // The count is in Redis, under the store's prefix, named by the address (never a key).
      const redis = new Redis(REDIS_URL);
      try {
        const keys = await redis.keys(`${prefix}n:*`);
        expect(keys).toHaveLength(1);
        expect(keys[0]).toMatch(/unknown-keys:/);
        expect(Number(await redis.get(keys[0]!))).toBeGreaterThanOrEqual(4);
        expect(await redis.pttl(keys[0]!)).toBeGreaterThan(0);
      } finally {
        await redis.quit();
      }
    } finally {
      await close();
    }
  });

  it("when the window has passed, both instances call the service again", async () => {
    const { apps, calls, close } = await fleet(2, { prefix: uniquePrefix("unknown-window"), max: 2, window: 1000 });
    const [a, b] = apps as [App, App];
    try {
      expect(await a.status(unknownKey())).toBe(401);
      expect(await b.status(unknownKey())).toBe(401);
      expect(await a.status(unknownKey())).toBe(429);
      expect(await b.status(unknownKey())).toBe(429);
      const valid = await fx.createKey();
      const other = await fx.createKey();
      await expect.poll(() => a.status(valid), { timeout: 30_000, interval: 200 }).toBe(200);
      await expect.poll(() => b.status(other), { timeout: 30_000, interval: 200 }).toBe(200);
      expect(calls.count).toBe(4);
    } finally {
      await close();
    }
  });

  it("with Redis cut, each instance counts on its own and no request fails for it", async () => {
    const tcp = await redisProxy();
    const logger = recordingLogger();
    const { apps, calls, close } = await fleet(2, { prefix: uniquePrefix("unknown-down"), max: 2, window: 60_000, url: tcp.url, logger });
    const [a, b] = apps as [App, App];
    try {
      await tcp.cut();
      expect(await a.status(unknownKey())).toBe(401);
      expect(await a.status(unknownKey())).toBe(401);
      expect(await a.status(unknownKey())).toBe(429);
      // b counted nothing of a's: its own count starts at 0.
      expect(await b.status(unknownKey())).toBe(401);
      expect(calls.count).toBe(3);
      expect(logger.entries.some((e) => e.level === "warn" && /Redis is unreachable/.test(e.message))).toBe(true);
    } finally {
      await close();
      await tcp.close();
    }
  });
});
