// Two deployments on databases 1 and 2 of one Redis, with the same key prefix: Redis's
// publish/subscribe ignores the database, so without the number in the channel's name a change in
// one deployment would empty the other's caches. Each service announces on its database; each
// app's redisStore() hears only its own.
import { randomBytes } from "node:crypto";
import express from "express";
import { Redis } from "ioredis";
import request from "supertest";
import { afterAll, describe, expect, it } from "vitest";
import { apiKeyAuth, silentLogger } from "keyguard";
import { keyHash } from "../../../src/protocol/key-hash";
import { redisStore, type RedisStore } from "keyguard/redis";
import { createClient } from "keyguard/client";
import { startLocalKeyService, type RunningLocalKeyService } from "keyguard/server";
import { REDIS_URL, postgresRedisSkipReason } from "../../support/postgres-redis";
import { GENEROUS } from "../../support/time-limits";

const skip = await postgresRedisSkipReason("invalidations on two Redis databases");

function onDatabase(db: number): string {
  const url = new URL(REDIS_URL);
  url.pathname = `/${db}`;
  return url.toString();
}

const prefix = `kgdb${randomBytes(4).toString("hex")}:`;
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  for (const db of [1, 2]) {
    const redis = new Redis(onDatabase(db));
    try {
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
    } finally {
      redis.disconnect();
    }
  }
});

interface Deployment {
  running: RunningLocalKeyService;
  store: RedisStore;
  key: string;
  app: express.Express;
}

async function deployment(db: number): Promise<Deployment> {
  const publisher = await redisStore({ url: onDatabase(db), prefix, logger: silentLogger });
  closers.push(() => publisher.close());
  const running = await startLocalKeyService({ invalidate: publisher, logger: silentLogger });
  closers.push(() => running.close());
  const store = await redisStore({ url: onDatabase(db), prefix, logger: silentLogger });
  closers.push(() => store.close());
  await Promise.all([publisher.ready, store.ready]);
  const client = createClient({ rootKey: running.rootKey, baseUrl: running.baseUrl, ...GENEROUS });
  const { key } = await client.keys.createKey({ apiId: running.apiId });
  const app = express();
  app.get("/", apiKeyAuth({ rootKey: running.rootKey, baseUrl: running.baseUrl, ...GENEROUS, store, logger: silentLogger }), (_q, r) => {
    r.send("ok");
  });
  return { running, store, key, app };
}

describe.skipIf(skip !== undefined)("Redis databases keep deployments' invalidations apart", () => {
  it("the channel's name carries the database number (0 keeps the name it had)", async () => {
    const [zero, one] = await Promise.all([
      redisStore({ url: onDatabase(0), prefix, logger: silentLogger }),
      redisStore({ url: onDatabase(1), prefix, logger: silentLogger }),
    ]);
    closers.push(
      () => zero.close(),
      () => one.close(),
    );
    expect([zero.channel, one.channel]).toEqual([`${prefix}invalidate`, `${prefix}invalidate:1`]);
  });

  it("a change in the deployment on db 1 empties its apps' caches, not those of the deployment on db 2", async () => {
    const [a, b] = await Promise.all([deployment(1), deployment(2)]);
    expect(a.store.channel).not.toBe(b.store.channel);
    for (const d of [a, b]) await request(d.app).get("/").set("Authorization", `Bearer ${d.key}`).expect(200);
    const refA = { keyHash: keyHash(a.key), query: "" };
    const refB = { keyHash: keyHash(b.key), query: "" };
    expect(a.store.peek(refA)).toMatchObject({ valid: true });
    expect(b.store.peek(refB)).toMatchObject({ valid: true });

    // Deleting a permission may change any key: deployment 1 tells its apps to forget everything.
    const admin = createClient({ rootKey: a.running.rootKey, baseUrl: a.running.baseUrl, ...GENEROUS });
    const { permissionId } = await admin.permissions.createPermission({ name: "p", slug: "p" });
    await admin.permissions.deletePermission({ permission: permissionId });
    await expect.poll(() => a.store.peek(refA), { timeout: 30_000 }).toBeUndefined();
    // Both stores subscribe on one Redis: a message on a shared channel reaches them in the same
    // round; one more round trip through Redis makes sure b would have heard it by now.
    await b.store.invalidate({ v: 1, kind: "keyId", keyId: "key_nothing" });
    expect(b.store.peek(refB)).toMatchObject({ valid: true });
  });
});
