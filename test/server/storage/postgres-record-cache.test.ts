// The PostgreSQL store's cache of rarely changing records (src/server/storage/postgres/record-cache.ts)
// against a real PostgreSQL and Redis: what it keeps, that a change through one store empties the
// other's copy through Redis, that a read overtaken by a change is not kept, and that nothing is
// served while its subscription is down.
import pg from "pg";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Storage } from "../../../src/server/storage/seam";
import type { ApiRecord, KeyRecord } from "../../../src/server/records";
import { postgresStorage } from "../../../src/server/storage/postgres/store";
import { RecordCache } from "../../../src/server/storage/postgres/record-cache";
import {
  POSTGRES_URL,
  REDIS_URL,
  isolatedNamespace,
  listenToRecords,
  postgresRedisSkipReason,
  type RecordsChannel,
} from "../../support/postgres-redis";
import { eventually, redisProxy } from "../../fleet/support";
import { keyRecord } from "../../support/records";

const skip = await postgresRedisSkipReason("the PostgreSQL store's record cache");

describe.skipIf(skip !== undefined)("the PostgreSQL store's record cache", () => {
  const ns = isolatedNamespace();
  /** Two instances keeping keys and identities too (`cacheKeys`, the default). */
  let a: Storage;
  let b: Storage;
  /** An instance keeping root keys, APIs, permissions and roles only (`cacheKeys: false`). */
  let plain: Storage;
  let uncached: Storage;
  let sql: pg.Client;
  let records: RecordsChannel;
  const nextMessage = () => records.nextMessage();

  beforeAll(async () => {
    const options = { postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema };
    a = await postgresStorage({ ...options, cacheKeys: true });
    b = await postgresStorage({ ...options, cacheKeys: true });
    plain = await postgresStorage({ ...options, cacheKeys: false });
    uncached = await postgresStorage({ ...options, recordCacheTtlMs: 0, preparedStatements: false });
    sql = new pg.Client({ connectionString: POSTGRES_URL });
    await sql.connect();
    records = await listenToRecords(ns.redisPrefix);
  });
  afterAll(async () => {
    records?.close();
    await sql?.end();
    await Promise.all([a, b, plain, uncached].map((s) => s?.close()));
    await ns.drop();
  });

  /**
   * The message heard here, and one PostgreSQL round trip more: the stores, in this process too,
   * got it on their own connection at the same moment and have handled it by then.
   */
  const delivered = async (heard: Promise<void>) => {
    await heard;
    await sql.query("SELECT 1");
  };
  const api = (name: string): ApiRecord => ({ id: "api_cached", workspaceId: "ws_cached", name, createdAt: 1 });
  /** Changes the API's row behind the stores' back: no store hears of it. */
  const renameBySql = (name: string) =>
    sql.query(`UPDATE "${ns.schema}".apis SET data = jsonb_set(data, '{name}', to_jsonb($1::text)) WHERE id = 'api_cached'`, [name]);

  it("keeps an API read outside a transaction; a change through another store empties it once announced", async () => {
    let heard = nextMessage();
    await a.transaction((tx) => tx.put("apis", api("first")));
    await delivered(heard);
    expect((await b.direct.get("apis", "api_cached"))?.name).toBe("first");
    await renameBySql("by hand");
    // Kept: the change made by hand is not seen by b, but is by a store without the cache (and
    // without prepared statements).
    expect((await b.direct.get("apis", "api_cached"))?.name).toBe("first");
    expect((await uncached.direct.get("apis", "api_cached"))?.name).toBe("by hand");
    // Inside a transaction, never from the cache.
    expect(await b.transaction(async (tx) => (await tx.get("apis", "api_cached"))?.name)).toBe("by hand");

    heard = nextMessage();
    await a.transaction((tx) => tx.put("apis", api("second")));
    // The store that made the change forgets at once, the other once the message arrived.
    expect((await a.direct.get("apis", "api_cached"))?.name).toBe("second");
    await delivered(heard);
    expect((await b.direct.get("apis", "api_cached"))?.name).toBe("second");
  });

  it("keeps a meta value read outside a transaction when asked (cached), an absent one too; a change through another store empties it once announced", async () => {
    const name = `webhooks.ws_meta_${Date.now()}`;
    const cached = { cached: true };
    const setBySql = (value: string) =>
      sql.query(`INSERT INTO "${ns.schema}".meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`, [
        name,
        value,
      ]);
    // Absent, and kept so: a value written by hand is not seen by b's cached read, but is by its
    // plain read, inside a transaction and by a store without the cache.
    expect(await b.direct.getMeta(name, cached)).toBeUndefined();
    await setBySql("by hand");
    expect(await b.direct.getMeta(name, cached)).toBeUndefined();
    expect(await b.direct.getMeta(name)).toBe("by hand");
    expect(await uncached.direct.getMeta(name, cached)).toBe("by hand");
    expect(await b.transaction((tx) => tx.getMeta(name, cached))).toBe("by hand");

    // Written in a transaction through a: announced once committed.
    let heard = nextMessage();
    await a.transaction((tx) => tx.setMeta(name, "first"));
    expect(await a.direct.getMeta(name, cached)).toBe("first");
    await delivered(heard);
    expect(await b.direct.getMeta(name, cached)).toBe("first");
    await setBySql("by hand again");
    expect(await b.direct.getMeta(name, cached)).toBe("first");

    // Written outside a transaction: announced too.
    heard = nextMessage();
    await a.direct.setMeta(name, "second");
    await delivered(heard);
    expect(await b.direct.getMeta(name, cached)).toBe("second");
  });

  describe("with cacheKeys", () => {
    const key = (over: Partial<KeyRecord> = {}): KeyRecord => keyRecord({ workspaceId: "ws_cached", apiId: "api_cached", ...over });
    /** Changes a key's row behind the stores' back: no store hears of it. */
    const renameKeyBySql = (id: string, name: string) =>
      sql.query(`UPDATE "${ns.schema}".keys SET data = jsonb_set(data, '{name}', to_jsonb($2::text)) WHERE id = $1`, [id, name]);

    it("keeps a key found by hash or id; a change or a deletion through another store empties it once announced", async () => {
      const k = key({ name: "first" });
      await a.transaction((tx) => tx.put("keys", k));
      expect((await b.direct.keyByHash(k.hash))?.name).toBe("first");
      expect((await b.direct.get("keys", k.id))?.name).toBe("first");
      await renameKeyBySql(k.id, "by hand");
      expect((await b.direct.keyByHash(k.hash))?.name).toBe("first");
      expect((await b.direct.get("keys", k.id))?.name).toBe("first");
      // Without the option, keys are read every time.
      expect((await plain.direct.keyByHash(k.hash))?.name).toBe("by hand");
      expect(await b.transaction(async (tx) => (await tx.keyByHash(k.hash))?.name)).toBe("by hand");

      let heard = nextMessage();
      await a.transaction((tx) => tx.put("keys", { ...k, name: "disabled", enabled: false }));
      await delivered(heard);
      expect(await b.direct.keyByHash(k.hash)).toMatchObject({ name: "disabled", enabled: false });

      heard = nextMessage();
      await a.direct.delete("keys", k.id);
      await delivered(heard);
      expect(await b.direct.keyByHash(k.hash)).toBeUndefined();
    });

    it("keeps a key with credits by its hash only: read by its id, each charge is seen at once", async () => {
      const k = key({ credits: { remaining: 10, lastRefillAt: 1 } });
      await a.transaction((tx) => tx.put("keys", k));
      expect((await b.direct.keyByHash(k.hash))?.credits?.remaining).toBe(10);
      expect((await b.direct.get("keys", k.id))?.credits?.remaining).toBe(10);
      expect(await a.direct.spendCredits(k.id, 3, 2, undefined)).toMatchObject({ ok: true, remaining: 7 });
      // The copy kept by hash lags (keys.verifyKey takes the balance from the charge) …
      expect((await b.direct.keyByHash(k.hash))?.credits?.remaining).toBe(10);
      // … the key read by its id does not, and the charges stay exact on every instance.
      expect((await b.direct.get("keys", k.id))?.credits?.remaining).toBe(7);
      expect(await b.direct.spendCredits(k.id, 7, 3, undefined)).toMatchObject({ ok: true, remaining: 0 });
      expect(await a.direct.spendCredits(k.id, 1, 4, undefined)).toMatchObject({ ok: false, remaining: 0 });
    });

    it("a key created sends no message; an identity written or deleted is announced, and its deletion empties the keys it leaves", async () => {
      const identity = { id: `id_cached_${Date.now()}`, workspaceId: "ws_cached", externalId: "user_cached", ratelimits: [], createdAt: 1 };
      // An identity written is announced (identities are kept with keys): heard before counting.
      const written = nextMessage();
      await a.transaction((tx) => tx.put("identities", identity));
      await delivered(written);
      const k = key({ identityId: identity.id });
      const before = records.heard;
      await a.transaction((tx) => tx.put("keys", k));
      expect((await b.direct.keyByHash(k.hash))?.identityId).toBe(identity.id);
      // Messages arrive in order: when the identity's deletion's is heard, a message of the key's
      // creation would have come first.
      const heard = nextMessage();
      await a.transaction((tx) => tx.delete("identities", identity.id));
      await delivered(heard);
      expect(records.heard - before).toBe(1);
      expect((await b.direct.keyByHash(k.hash))?.identityId).toBeUndefined();
    });
  });

  it("gives each caller a copy of its own", async () => {
    const own: ApiRecord = { id: "api_copied", workspaceId: "ws_cached", name: "kept", createdAt: 1 };
    const heard = nextMessage();
    await a.transaction((tx) => tx.put("apis", own));
    await delivered(heard);
    const first = (await b.direct.get("apis", "api_copied"))!;
    first.name = "changed by the caller";
    expect((await b.direct.get("apis", "api_copied"))?.name).toBe("kept");
  });

  it("a read that began before an emptying is not kept", async () => {
    const subscriber = new Redis(REDIS_URL, { lazyConnect: true });
    const publisher = new Redis(REDIS_URL);
    const cache = new RecordCache({ ttlMs: 60_000, size: 10, keys: false }, subscriber, publisher, `${ns.redisPrefix}unit:`);
    await cache.start();
    try {
      let loads = 0;
      let release!: (r: { v: number }) => void;
      const slow = cache.read("apis", "x", () => {
        loads++;
        return new Promise<{ v: number }>((resolve) => (release = resolve));
      });
      // An emptying from another instance arrives while the read is in flight.
      await publisher.publish(`${ns.redisPrefix}unit:records`, "another instance");
      await new Promise((resolve) => setTimeout(resolve, 50));
      release({ v: 1 });
      expect(await slow).toEqual({ v: 1 });
      const load = async () => {
        loads++;
        return { v: 2 };
      };
      expect(await cache.read("apis", "x", load)).toEqual({ v: 2 });
      expect(await cache.read("apis", "x", load)).toEqual({ v: 2 });
      expect(loads).toBe(2);
    } finally {
      cache.close();
      publisher.disconnect();
    }
  });

  it("serves nothing from the cache while its subscription is down", async () => {
    const subscriber = new Redis(REDIS_URL, { lazyConnect: true });
    const publisher = new Redis(REDIS_URL);
    const cache = new RecordCache({ ttlMs: 60_000, size: 10, keys: false }, subscriber, publisher, `${ns.redisPrefix}down:`);
    await cache.start();
    try {
      let loads = 0;
      const load = async () => ({ v: ++loads });
      expect(await cache.read("roles", "r", load)).toEqual({ v: 1 });
      expect(await cache.read("roles", "r", load)).toEqual({ v: 1 });
      const closed = new Promise((resolve) => subscriber.once("close", resolve));
      subscriber.disconnect();
      await closed;
      expect(await cache.read("roles", "r", load)).toEqual({ v: 2 });
      expect(await cache.read("roles", "r", load)).toEqual({ v: 3 });
    } finally {
      cache.close();
      publisher.disconnect();
    }
  });

  it("a subscription cut again while it is made after a reconnect leaves no unhandled rejection; the cache serves once subscribed", async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => void rejections.push(reason);
    process.on("unhandledRejection", onRejection);
    const tcp = await redisProxy();
    const store = await postgresStorage({ postgres: POSTGRES_URL, redis: tcp.url, schema: ns.schema });
    try {
      await a.transaction((tx) => tx.put("apis", { ...api("flapping"), id: "api_flapping" }));
      await tcp.cut();
      tcp.dropOn("subscribe");
      await tcp.restore();
      expect(await eventually(() => tcp.dropped >= 2, 15_000)).toBe(true);
      tcp.dropOn(undefined);
      // Served from the cache again: a change made behind its back is not seen.
      let round = 0;
      const cached = async () => {
        round++;
        const first = (await store.direct.get("apis", "api_flapping"))?.name;
        await sql.query(`UPDATE "${ns.schema}".apis SET data = jsonb_set(data, '{name}', to_jsonb($1::text)) WHERE id = 'api_flapping'`, [
          `round ${round}`,
        ]);
        return (await store.direct.get("apis", "api_flapping"))?.name === first;
      };
      expect(await eventually(cached, 15_000)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      process.off("unhandledRejection", onRejection);
      await store.close();
      await tcp.close();
    }
    expect(rejections).toEqual([]);
  });
});
