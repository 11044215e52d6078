// The `checksum` group of `npm run bench`: 100,000 random keys of the checksummed format (their
// checksums fail) through apiKeyAuth() in the apps process, against a key service of its own with
// metrics on, which counts every verifyKey call it gets. Alternating rounds with a valid cached key
// of each format on the same app: the garbage keys' throughput against the hot path's, the calls
// they caused, and what checking a good key's checksum on every request costs the hot path.

import { createClient } from "keyguard/client";
import { load, median, type LoadResult } from "./load";
import type { AppsConfig, ServiceInfo } from "./servers";

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
/** Garbage keys in all, in ROUNDS runs; the valid key gets as many requests. */
const GARBAGE_KEYS = 100_000;
const ROUNDS = 4;

/** A random key shaped like the checksummed format (`sk_kg0` + 28 base58 digits): its checksum fails but for 1 in 58^6. */
function garbageKey(): string {
  let digits = "";
  for (let i = 0; i < 28; i++) digits += BASE58[Math.floor(Math.random() * 58)];
  return `sk_kg0${digits}`;
}

type Start = <T>(mode: string, env: Record<string, string>, core?: number) => Promise<T>;

export interface ChecksumBench {
  garbageKeys: number;
  /** verifyKey calls the service counted during the garbage runs. */
  serviceCalls: number;
  garbageRps: number;
  /** A valid cached key of the checksummed format (its checksum checked on every request). */
  cachedRps: number;
  /** A valid cached key of the plain format (not checked). */
  plainRps: number;
  /** Median over rounds of garbage ÷ cached throughput. */
  ratio: number;
  /** Median over rounds of cached checksummed ÷ cached plain throughput. */
  checkedRatio: number;
  garbageStatuses: Record<string, number>;
}

/** verifyKey requests the service answered so far (keyguard_requests_total, every status). */
async function verifyCalls(service: ServiceInfo): Promise<number> {
  const text = await (await fetch(`${service.baseUrl}/metrics`)).text();
  let total = 0;
  for (const m of text.matchAll(/^keyguard_requests_total\{[^}]*operation="keys\.verifyKey"[^}]*\} (\d+)$/gm)) total += Number(m[1]);
  return total;
}

export async function benchChecksum(start: Start, config: AppsConfig): Promise<ChecksumBench> {
  const service = await start<ServiceInfo>("service", { BENCH_METRICS: "1" }, 0);
  const created = await fetch(`${service.baseUrl}/v2/apis.createApi`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${service.rootKey}` },
    body: JSON.stringify({ name: "bench-checksummed", keyFormat: "checksummed" }),
  });
  const { apiId } = ((await created.json()) as { data: { apiId: string } }).data;
  const client = createClient({ rootKey: service.rootKey, baseUrl: service.baseUrl, retry: false });
  const valid = (await client.keys.createKey({ apiId, prefix: "sk" })).key;
  const plain = (await client.keys.createKey({ apiId: service.apiId, prefix: "sk" })).key;
  const apps = await start<Record<string, string>>(
    "apps",
    { BENCH_CONFIG: JSON.stringify({ ...config, baseUrl: service.baseUrl, rootKey: service.rootKey }) },
    1,
  );
  const url = `${apps.keyguard}/r`;
  const amount = GARBAGE_KEYS / ROUNDS;
  const cached = () => load({ url, amount, headers: { authorization: `Bearer ${valid}` } });
  const cachedPlain = () => load({ url, amount, headers: { authorization: `Bearer ${plain}` } });
  const garbage = () => load({ url, amount, keyPerRequest: garbageKey });
  // Warm-up: the valid key's answer kept, both paths compiled.
  await load({ url, amount: 2000, headers: { authorization: `Bearer ${valid}` } });
  await load({ url, amount: 2000, headers: { authorization: `Bearer ${plain}` } });
  await load({ url, amount: 2000, keyPerRequest: garbageKey });

  const runs: { garbage: LoadResult[]; cached: LoadResult[]; plain: LoadResult[] } = { garbage: [], cached: [], plain: [] };
  let serviceCalls = 0;
  const statuses: Record<string, number> = {};
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 1) {
      runs.cached.push(await cached());
      runs.plain.push(await cachedPlain());
    }
    const before = await verifyCalls(service);
    const g = await garbage();
    serviceCalls += (await verifyCalls(service)) - before;
    runs.garbage.push(g);
    for (const [code, n] of Object.entries(g.statuses)) statuses[code] = (statuses[code] ?? 0) + n;
    if (round % 2 === 0) {
      runs.plain.push(await cachedPlain());
      runs.cached.push(await cached());
    }
  }
  for (const r of [...runs.cached, ...runs.plain]) {
    if (Object.keys(r.statuses).some((code) => code !== "200") || r.errors > 0)
      throw new Error(`bench: a valid cached key got ${JSON.stringify(r.statuses)} (${r.errors} errors)`);
  }
  const rps = (rs: LoadResult[]) => Math.round(median(rs.map((r) => r.rps)));
  return {
    garbageKeys: runs.garbage.reduce((n, r) => n + r.requests, 0),
    serviceCalls,
    garbageRps: rps(runs.garbage),
    cachedRps: rps(runs.cached),
    plainRps: rps(runs.plain),
    ratio: median(runs.garbage.map((r, i) => r.rps / runs.cached[i]!.rps)),
    checkedRatio: median(runs.cached.map((r, i) => r.rps / runs.plain[i]!.rps)),
    garbageStatuses: statuses,
  };
}
