// apiKeyAuth({ migrateFrom }) across a fleet: two Express apps sharing one redisStore() prefix, in
// front of keyguard's service, with a second key service on port 0 as the old one. Twenty
// concurrent first requests of a credits key spread over both apps: the key is imported once, the
// old service charges nothing, and keyguard's service charges each request once (docs/migration.md).
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type KeyServiceClient } from "keyguard/client";
import { apiKeyAuth, getApiKey, silentLogger } from "keyguard";
import { redisStore } from "keyguard/redis";
import { startService, type ServiceFixture } from "../middleware/helpers";
import { GENEROUS } from "../support/time-limits";
import { listen, REDIS_URL, removePrefixes, skipWithoutRedis, uniquePrefix } from "./support";

const skip = await skipWithoutRedis("test/fleet/lazy-migration.test.ts (lazy migration across a fleet on Redis)");

let old: ServiceFixture;
let here: ServiceFixture;
beforeAll(async () => {
  if (skip) return;
  [old, here] = await Promise.all([startService(), startService()]);
});
afterAll(async () => {
  if (skip) return;
  await Promise.all([old.close(), here.close()]);
  await removePrefixes();
});

function counted(fx: ServiceFixture): { client: KeyServiceClient; calls: Record<string, number> } {
  const calls: Record<string, number> = {};
  const client = createClient({
    rootKey: fx.svc.rootKey,
    baseUrl: fx.svc.baseUrl,
    retry: false,
    logger: silentLogger,
    ...GENEROUS,
    fetch: (input, init) => {
      const op = String(input instanceof Request ? input.url : input).split("/v2/")[1]!;
      calls[op] = (calls[op] ?? 0) + 1;
      return fetch(input, init);
    },
  });
  return { client, calls };
}

describe.skipIf(skip)("lazy migration on two instances sharing redisStore()", () => {
  it("20 concurrent first requests of a credits key import it once and charge each request once, at keyguard's service", async () => {
    const { migrationId } = await here.svc.service.createKeyMigration({ algorithm: "sha256" });
    const { key, keyId } = await old.createKeyWithId({ name: "fleet caller", credits: { remaining: 100 } });
    const oldSide = counted(old);
    const hereSide = counted(here);
    const prefix = uniquePrefix("migrate");
    const apps = await Promise.all(
      [0, 1].map(async () => {
        const store = await redisStore({ url: REDIS_URL, prefix, logger: silentLogger, timeout: GENEROUS.timeout });
        await store.ready;
        const server = await listen(
          express().get(
            "/",
            apiKeyAuth({
              client: hereSide.client,
              store,
              logger: silentLogger,
              ...GENEROUS,
              migrateFrom: { client: oldSide.client, apiId: old.svc.apiId, intoApiId: here.svc.apiId, migrationId },
            }),
            (req, res) => {
              res.json({ credits: getApiKey(req)?.credits });
            },
          ),
        );
        return { server, store };
      }),
    );
    try {
      const answers = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const res = await fetch(apps[i % 2]!.server.url, { headers: { authorization: `Bearer ${key}` } });
          return { status: res.status, credits: ((await res.json()) as { credits?: number }).credits };
        }),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
      // Each request charged once: the balances seen are 99 down to 80, each once.
      expect(answers.map((a) => a.credits).sort((a, b) => a! - b!)).toEqual(Array.from({ length: 20 }, (_, i) => 80 + i));
      // One key at keyguard's service, holding what is left; the old one charged nothing.
      const keys = await here.client.apis.listKeys({ apiId: here.svc.apiId });
      expect(keys.filter((k) => k.name === "fleet caller")).toHaveLength(1);
      expect((await here.client.keys.whoami({ key })).credits?.remaining).toBe(80);
      expect((await old.client.keys.getKey({ keyId })).credits?.remaining).toBe(100);
      // One import per instance at most was tried (the second refused by the service), each after one free check there.
      expect(hereSide.calls["keys.migrateKeys"]).toBeGreaterThanOrEqual(1);
      expect(hereSide.calls["keys.migrateKeys"]).toBeLessThanOrEqual(2);
      expect(oldSide.calls["keys.verifyKey"]).toBe(hereSide.calls["keys.migrateKeys"]);
      // Then no call to the old service.
      const before = { ...oldSide.calls };
      for (const app of apps) expect((await fetch(app.server.url, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
      expect(oldSide.calls).toEqual(before);
    } finally {
      for (const app of apps) {
        await app.server.close();
        await app.store.close();
      }
    }
  });
});
