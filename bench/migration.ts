// The `migration` group of `npm run bench`: what the first request of a key still at the old key
// service costs with apiKeyAuth({ migrateFrom }), and that its later requests make no call to the
// old service. Two key services in this process (the old one and keyguard's, memory stores, port 0)
// and one Express app on loopback; each service's calls counted by operation through its client.
// Credits keys, so every request is verified (none answered from the cache): the added latency of
// a first request is its time minus the median time of a later request of the same keys.

import type { AddressInfo } from "node:net";
import express from "express";
import { apiKeyAuth, silentLogger } from "keyguard";
import { createClient, type KeyServiceClient } from "keyguard/client";
import { startLocalKeyService, type RunningLocalKeyService } from "keyguard/server";

/** Keys moved, one first request each, one after another. */
const KEYS = 300;
/** Later requests per key. */
const LATER = 3;

export interface MigrationBench {
  keys: number;
  /** ms: a first request (import included), p50 and p99. */
  first: { p50: number; p99: number };
  /** ms: a later request of the same keys (verified at keyguard's service only). */
  later: { p50: number; p99: number };
  /** ms: a first request's time minus the later requests' median, p50 and p99. */
  added: { p50: number; p99: number };
  /** Calls to each service per first request, by operation. */
  firstCalls: { old: Record<string, number>; keyguard: Record<string, number> };
  /** Calls to the old service during every later request: 0 is the goal. */
  laterOldCalls: number;
  statuses: Record<string, number>;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
const round = (ms: number) => Math.round(ms * 100) / 100;

function counted(svc: RunningLocalKeyService): { client: KeyServiceClient; calls: Record<string, number> } {
  const calls: Record<string, number> = {};
  const client = createClient({
    rootKey: svc.rootKey,
    baseUrl: svc.baseUrl,
    logger: silentLogger,
    fetch: (input, init) => {
      const op = String(input instanceof Request ? input.url : input).split("/v2/")[1]!;
      calls[op] = (calls[op] ?? 0) + 1;
      return fetch(input, init);
    },
  });
  return { client, calls };
}

const total = (calls: Record<string, number>) => Object.values(calls).reduce((a, b) => a + b, 0);
const perKey = (calls: Record<string, number>, n: number) =>
  Object.fromEntries(Object.entries(calls).map(([op, count]) => [op, Math.round((count / n) * 100) / 100]));

export async function benchMigration(): Promise<MigrationBench> {
  const [old, here] = await Promise.all([startLocalKeyService({ logger: silentLogger }), startLocalKeyService({ logger: silentLogger })]);
  const oldSide = counted(old);
  const hereSide = counted(here);
  const server = express()
    .get(
      "/",
      apiKeyAuth({
        client: hereSide.client,
        logger: silentLogger,
        migrateFrom: {
          client: oldSide.client,
          apiId: old.apiId,
          intoApiId: here.apiId,
          migrationId: (await here.service.createKeyMigration({ algorithm: "sha256" })).migrationId,
        },
      }),
      (_req, res) => {
        res.send("ok");
      },
    )
    .listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const maker = createClient({ rootKey: old.rootKey, baseUrl: old.baseUrl, logger: silentLogger });
  try {
    const keys: string[] = [];
    for (let i = 0; i < KEYS; i++) keys.push((await maker.keys.createKey({ apiId: old.apiId, credits: { remaining: 1000 } })).key);
    const statuses: Record<string, number> = {};
    const timed = async (key: string) => {
      const started = performance.now();
      const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
      await res.arrayBuffer();
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      return performance.now() - started;
    };
    // Warm-up: connections and code paths, on a key of keyguard's own.
    const own = (await hereSide.client.keys.createKey({ apiId: here.apiId, credits: { remaining: 1000 } })).key;
    for (let i = 0; i < 50; i++) await timed(own);
    for (const calls of [oldSide.calls, hereSide.calls]) for (const k of Object.keys(calls)) delete calls[k];

    const first: number[] = [];
    for (const key of keys) first.push(await timed(key));
    const firstCalls = { old: perKey(oldSide.calls, KEYS), keyguard: perKey(hereSide.calls, KEYS) };
    const oldBefore = total(oldSide.calls);
    const later: number[] = [];
    for (let round = 0; round < LATER; round++) for (const key of keys) later.push(await timed(key));
    const laterOldCalls = total(oldSide.calls) - oldBefore;

    first.sort((a, b) => a - b);
    later.sort((a, b) => a - b);
    const base = pct(later, 50);
    return {
      keys: KEYS,
      first: { p50: round(pct(first, 50)), p99: round(pct(first, 99)) },
      later: { p50: round(base), p99: round(pct(later, 99)) },
      added: { p50: round(pct(first, 50) - base), p99: round(pct(first, 99) - base) },
      firstCalls,
      laterOldCalls,
      statuses,
    };
  } finally {
    await new Promise((r) => server.close(r));
    await Promise.all([maker.close(), oldSide.client.close(), hereSide.client.close()]);
    await Promise.all([old.close(), here.close()]);
  }
}
