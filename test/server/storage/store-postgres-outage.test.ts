// The PostgreSQL + Redis store through a TCP proxy the test stops and starts: an outage of either
// server is a StoreUnavailableError (naming the server, never the URL's password), and the store
// recovers by itself when the server is back.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Storage } from "../../../src/server/storage/seam";
import { StoreUnavailableError } from "../../../src/server/errors";
import { postgresStorage } from "../../../src/server/storage/postgres/store";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";
import { startTcpProxy, type TcpProxy } from "../../support/tcp-proxy";
import { keyRecord } from "../../support/records";

const skip = await postgresRedisSkipReason("postgres + redis store outages");

/** The URL with the proxy's port and a password that must never show in an error. */
function through(url: string, proxy: TcpProxy): string {
  const u = new URL(url);
  u.port = String(proxy.port);
  u.password = "s3cret-pw";
  if (!u.username) u.username = "default";
  return u.toString();
}

/** Retries `fn` until it resolves (the store reconnecting), at most ~15 s. */
async function eventually<T>(fn: () => Promise<T>): Promise<T> {
  let last: unknown;
  for (let i = 0; i < 150; i++) {
    try {
      return await fn();
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw last;
}

describe.skipIf(skip !== undefined)("postgres + redis store outages", () => {
  const ns = isolatedNamespace();
  let pgProxy: TcpProxy;
  let redisProxy: TcpProxy;
  let store: Storage;
  const key = keyRecord({
    id: "key_outage",
    workspaceId: "ws_outage",
    apiId: "api_outage",
    hash: "hash_outage",
    start: "sk_abcd",
    credits: { remaining: 3, lastRefillAt: 0 },
  });
  const check = { counter: "rl_outage/60000", limit: 100, duration: 60_000, cost: 1 };

  /** A store on both proxies. */
  const open = () => {
    // Redis without a password rejects AUTH with one: keep the Redis URL password-free.
    const redisUrl = new URL(REDIS_URL);
    redisUrl.port = String(redisProxy.port);
    return postgresStorage({
      postgres: through(POSTGRES_URL, pgProxy),
      redis: redisUrl.toString(),
      schema: ns.schema,
      redisPrefix: ns.redisPrefix,
      timeoutMs: 1000,
    });
  };

  beforeAll(async () => {
    pgProxy = await startTcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
    redisProxy = await startTcpProxy(Number(new URL(REDIS_URL).port || 6379));
    store = await open();
    await store.transaction((tx) => tx.put("keys", key));
  });
  afterAll(async () => {
    await store?.close();
    await pgProxy?.stop();
    await redisProxy?.stop();
    await ns.drop();
  });

  it("PostgreSQL down: reads, spends and transactions fail with StoreUnavailableError; back: they work again", async () => {
    // A store of its own: its record cache listens from its start. The shared store's may still be
    // subscribing again after an earlier test's Redis outage, and keeps nothing until it is.
    const own = await eventually(open);
    try {
      const remaining = (await own.transaction((tx) => tx.get("keys", key.id)))!.credits!.remaining!;
      expect((await own.direct.keyByHash(key.hash))?.id).toBe(key.id);
      await pgProxy.stop();
      // The key found just before is kept (cacheKeys, for the record cache's TTL): found without
      // PostgreSQL; its charge is not.
      expect((await own.direct.keyByHash(key.hash))?.id).toBe(key.id);
      for (const call of [
        () => own.direct.keyByHash("no such hash"),
        () => own.direct.spendCredits(key.id, 1, 10),
        () => own.transaction((tx) => tx.get("keys", key.id)),
      ]) {
        const err = await call().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(StoreUnavailableError);
        expect((err as Error).message).toMatch(/^PostgreSQL at 127\.0\.0\.1:\d+ is unavailable: /);
        expect((err as Error).message).not.toContain("s3cret-pw");
      }
      // Lookups made together share one statement: each of them fails.
      const together = await Promise.allSettled(["no such hash", "nor this one", "no such hash"].map((h) => own.direct.keyByHash(h)));
      expect(together.map((r) => r.status === "rejected" && r.reason instanceof StoreUnavailableError)).toEqual([true, true, true]);
      // Nothing was charged while it was down.
      await pgProxy.start();
      expect(await eventually(() => own.direct.spendCredits(key.id, 1, 10))).toEqual({ ok: true, remaining: remaining - 1 });
      // Another connection this outage broke may fail once more before the pool replaces it.
      expect((await eventually(() => own.transaction((tx) => tx.get("keys", key.id))))?.credits?.remaining).toBe(remaining - 1);
    } finally {
      await pgProxy.start();
      await own.close();
    }
  });

  it("PostgreSQL cut in the middle of a transaction: StoreUnavailableError, nothing kept, then recovery", async () => {
    const err = await store
      .transaction(async (tx) => {
        const k = (await tx.get("keys", key.id))!;
        await tx.put("keys", { ...k, name: "half-done" });
        await pgProxy.stop();
        await tx.put("keys", { ...k, name: "never" });
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(StoreUnavailableError);
    await pgProxy.start();
    const got = await eventually(() => store.direct.get("keys", key.id));
    expect(got?.name).toBeUndefined();
  });

  it("Redis down: limits fail with StoreUnavailableError; back: they work again", async () => {
    // A counter of this test's own; Redis answering again after any earlier test's outage.
    const check = { counter: "rl_outage_down/60000", limit: 100, duration: 60_000, cost: 1 };
    expect((await eventually(() => store.direct.limit([check], 1000))).passed).toBe(true);
    await redisProxy.stop();
    const err = await store.direct.limit([check], 1000).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as Error).message).toMatch(/^Redis at 127\.0\.0\.1:\d+ is unavailable: /);
    await expect(store.direct.dropCounters({ owner: "key_x" })).rejects.toBeInstanceOf(StoreUnavailableError);
    // PostgreSQL calls are unaffected.
    expect((await store.direct.get("keys", key.id))?.id).toBe(key.id);
    await redisProxy.start();
    const after = await eventually(() => store.direct.limit([check], 1000));
    expect(after.states[0]!.remaining).toBe(98);
  });

  /** 1,500 lookups of unknown keys, 20 every 20 ms: how each settled, and how long after it was asked. */
  const lookupsAllAlong = async () => {
    const settled: Array<Promise<{ err: unknown; ms: number }>> = [];
    for (let round = 0; round < 75; round++) {
      for (let i = 0; i < 20; i++) {
        const asked = performance.now();
        settled.push(
          store.direct.keyByHash(`no such key ${round}.${i}`).then(
            () => ({ err: undefined, ms: performance.now() - asked }),
            (err: unknown) => ({ err, ms: performance.now() - asked }),
          ),
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return Promise.all(settled);
  };

  it("a server that hangs fails calls after the timeout instead of holding them; resumed, it serves again", async () => {
    // Both servers answering (after any earlier test's outage) before they hang.
    expect((await eventually(() => store.direct.get("keys", key.id)))?.id).toBe(key.id);
    await eventually(() => store.direct.limit([check], 1000));
    pgProxy.hang();
    redisProxy.hang();
    const lookups = lookupsAllAlong();
    const pgErr = await store.direct.get("keys", key.id).then(
      () => undefined,
      (e: unknown) => e,
    );
    // Keys looked up all along the hang, more than one statement takes (they share statements):
    // each fails within its statement's timeout, plus one statement ahead of it and the wait for a
    // pool connection (1 s each here; half a second more for a busy machine), not behind a queue
    // of the ones asked before it (which took the last of them 5.7 s when batches left one by one).
    const settled = await lookups;
    expect(settled.filter((r) => !(r.err instanceof StoreUnavailableError))).toEqual([]);
    expect(Math.max(...settled.map((r) => r.ms))).toBeLessThan(3.5 * 1000);
    const redisErr = await store.direct.limit([check], 1000).then(
      () => undefined,
      (e: unknown) => e,
    );
    pgProxy.resume();
    redisProxy.resume();
    expect(pgErr).toBeInstanceOf(StoreUnavailableError);
    expect((pgErr as Error).message).toMatch(/is unavailable: timed out$/);
    expect(redisErr).toBeInstanceOf(StoreUnavailableError);
    expect((redisErr as Error).message).toMatch(/is unavailable: timed out$/);
    expect((await eventually(() => store.direct.get("keys", key.id)))?.id).toBe(key.id);
    expect((await eventually(() => store.direct.limit([check], 1000))).passed).toBe(true);
  });

  it("a start with PostgreSQL or Redis unreachable fails with StoreUnavailableError, password hidden", async () => {
    await pgProxy.stop();
    const pgErr = await postgresStorage({
      postgres: through(POSTGRES_URL, pgProxy),
      redis: REDIS_URL,
      schema: ns.schema,
      timeoutMs: 1000,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    await pgProxy.start();
    expect(pgErr).toBeInstanceOf(StoreUnavailableError);
    expect((pgErr as Error).message).not.toContain("s3cret-pw");
    await redisProxy.stop();
    const redisUrl = new URL(REDIS_URL);
    redisUrl.port = String(redisProxy.port);
    const redisErr = await postgresStorage({ postgres: POSTGRES_URL, redis: redisUrl.toString(), schema: ns.schema, timeoutMs: 1000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    await redisProxy.start();
    expect(redisErr).toBeInstanceOf(StoreUnavailableError);
    expect((redisErr as Error).message).toMatch(/^Redis at /);
  });
});
