// The key service announces key changes itself: a local service given `invalidate` (a redisStore on
// the fleet's Redis) makes every apiKeyAuth() on that Redis forget a key changed through its HTTP
// API, with no code in the app and no call through keyguard's client.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import express from "express";
import { createClient } from "keyguard/client";
import { apiKeyAuth, silentLogger } from "keyguard";
import { LocalServiceConfigError } from "keyguard/server";
import { redisStore, type RedisStore } from "keyguard/redis";
import { makeCall } from "../server/helpers";
import { startLocalUnderTest } from "../support/store-under-test";
import { countingProxy, eventually, listen, REDIS_URL, skipWithoutRedis, uniquePrefix } from "./support";
import { GENEROUS } from "../support/time-limits";

const skip = await skipWithoutRedis("test/fleet/service-publishes.test.ts (the key service announcing key changes on Redis)");

describe.skipIf(skip)("a key service that publishes its key changes", () => {
  const prefix = uniquePrefix("svcpub");
  const closers: Array<() => Promise<void>> = [];
  let call: ReturnType<typeof makeCall>;
  let apiId: string;
  let apps: Array<{ status(key: string): Promise<number> }>;
  let calls: () => number;

  beforeAll(async () => {
    const publisher = await redisStore({ url: REDIS_URL, prefix, logger: silentLogger });
    closers.push(() => publisher.close());
    const svc = await startLocalUnderTest({ logger: silentLogger, invalidate: publisher });
    closers.push(() => svc.close());
    call = makeCall(svc.baseUrl, svc.rootKey);
    apiId = svc.apiId;
    const proxy = await countingProxy(svc.baseUrl);
    closers.push(() => proxy.close());
    calls = () => proxy.verifyCalls;
    const client = createClient({ rootKey: svc.rootKey, baseUrl: proxy.baseUrl, logger: silentLogger, retry: false });
    apps = [];
    for (let i = 0; i < 3; i++) {
      const store: RedisStore = await redisStore({ url: REDIS_URL, prefix, logger: silentLogger });
      await store.ready;
      const app = express().get("/", apiKeyAuth({ client, store, logger: silentLogger, ...GENEROUS }), (_req, res) => {
        res.send("ok");
      });
      const server = await listen(app);
      closers.push(async () => {
        await server.close();
        await store.close();
      });
      apps.push({ status: async (key) => (await fetch(`${server.url}/`, { headers: { "X-API-Key": key } })).status });
    }
  });
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
  });

  async function cachedKey(): Promise<{ key: string; keyId: string }> {
    const created = await call("keys.createKey", { apiId });
    expect(created.status).toBe(200);
    const { key, keyId } = created.body.data as { key: string; keyId: string };
    for (const app of apps) expect(await app.status(key)).toBe(200);
    // Remembered now: asking again costs the service nothing.
    const before = calls();
    for (const app of apps) expect(await app.status(key)).toBe(200);
    expect(calls()).toBe(before);
    return { key, keyId };
  }

  it("a key disabled through the service's HTTP API is refused by every app", async () => {
    const { key, keyId } = await cachedKey();
    expect((await call("keys.updateKey", { keyId, enabled: false })).status).toBe(200);
    for (const app of apps) expect(await eventually(async () => (await app.status(key)) === 401)).toBe(true);
  });

  it("a key deleted through the service's HTTP API is refused by every app", async () => {
    const { key, keyId } = await cachedKey();
    expect((await call("keys.deleteKey", { keyId })).status).toBe(200);
    for (const app of apps) expect(await eventually(async () => (await app.status(key)) === 401)).toBe(true);
  });

  it("deleting a permission makes every app forget every key", async () => {
    const { key } = await cachedKey();
    const perm = await call("permissions.createPermission", { name: "docs.read", slug: `docs.read.${Date.now()}` });
    expect(perm.status).toBe(200);
    expect((await call("permissions.deletePermission", { permission: perm.body.data.permissionId })).status).toBe(200);
    // Everything remembered is gone: the key still passes, and the fleet asks the service again
    // (once: the first app's answer is shared with the others through Redis).
    expect(
      await eventually(async () => {
        const before = calls();
        return (await apps[0]!.status(key)) === 200 && calls() > before;
      }),
    ).toBe(true);
    for (const app of apps) expect(await app.status(key)).toBe(200);
  });

  it("reads and verifications announce nothing", async () => {
    const { key, keyId } = await cachedKey();
    expect((await call("keys.getKey", { keyId })).status).toBe(200);
    const before = calls();
    for (const app of apps) expect(await app.status(key)).toBe(200);
    expect(calls()).toBe(before);
  });
});

describe("the invalidate option", () => {
  it("must have an invalidate method", async () => {
    for (const bad of [42, "redis://x", {}, { invalidate: "no" }, null]) {
      await expect(startLocalUnderTest({ logger: silentLogger, invalidate: bad as never })).rejects.toThrow(LocalServiceConfigError);
    }
  });
});
