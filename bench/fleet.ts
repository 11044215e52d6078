// The fleet section of `npm run bench`: 4 app processes, each with apiKeyAuth() on its own
// redisStore, one Redis (loopback, a unique key prefix), one local key service behind a counting
// proxy. Measures how fast an invalidation reaches all 4 (p50/p99 over bounded rounds) and how
// many verifyKey calls one hot key costs the service per TTL across the 4.

import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { silentLogger } from "keyguard";
import { redisStore } from "keyguard/redis";
import { countingProxy, REDIS_URL, redisReachable, removePrefixes, uniquePrefix } from "../test/fleet/support";
import { load } from "./load";
import type { FleetAppConfig } from "./fleet-app";
import { benchScript } from "./scripts";

const INSTANCES = 4;
const ROUNDS = 200;
const TTL_MS = 1000;
const LOAD_SECONDS = 5;

export interface FleetResult {
  instances: number;
  propagation: { rounds: number; p50Ms: number; p99Ms: number; maxMs: number };
  hotKey: { ttlMs: number; seconds: number; requests: number; serviceCalls: number; callsPerTtl: number; statuses: Record<string, number> };
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

export async function benchFleet(
  service: { baseUrl: string; rootKey: string; apiId: string },
  children: ChildProcess[],
): Promise<FleetResult | string> {
  if (!(await redisReachable())) return `skipped: Redis is not reachable at ${REDIS_URL}`;
  const proxy = await countingProxy(service.baseUrl);
  const prefix = uniquePrefix("bench");
  const config: FleetAppConfig = { baseUrl: proxy.baseUrl, rootKey: service.rootKey, redisUrl: REDIS_URL, prefix, ttl: TTL_MS };
  const seen = new Map<string, number[]>();
  const urls: string[] = [];
  for (let i = 0; i < INSTANCES; i++) {
    const script = benchScript("fleet-app");
    const child = spawn(process.execPath, [...script.execArgv, script.file], {
      env: { ...process.env, BENCH_FLEET: JSON.stringify(config) },
      stdio: ["ignore", "pipe", "inherit"],
    });
    children.push(child);
    const lines = createInterface({ input: child.stdout! });
    const [first] = (await once(lines, "line")) as [string];
    urls.push((JSON.parse(first) as { url: string }).url);
    lines.on("line", (line) => {
      const { keyId, at } = JSON.parse(line) as { keyId: string; at: number };
      seen.set(keyId, [...(seen.get(keyId) ?? []), at]);
    });
  }
  const publisher = await redisStore({ url: REDIS_URL, prefix, logger: silentLogger });
  await publisher.ready;
  try {
    // Propagation: from the call to invalidate() until the last of the 4 has applied it.
    const latencies: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const keyId = `key_bench_${round}`;
      const started = performance.timeOrigin + performance.now();
      await publisher.invalidate({ v: 1, kind: "keyId", keyId });
      const until = Date.now() + 5000;
      while ((seen.get(keyId)?.length ?? 0) < INSTANCES && Date.now() < until) await new Promise((r) => setTimeout(r, 2));
      const times = seen.get(keyId) ?? [];
      latencies.push(times.length < INSTANCES ? Infinity : Math.max(...times) - started);
    }
    latencies.sort((a, b) => a - b);

    // One hot key: 4 instances under load; the service's verifyKey calls per TTL across them.
    const created = await fetch(`${service.baseUrl}/v2/keys.createKey`, {
      method: "POST",
      headers: { authorization: `Bearer ${service.rootKey}`, "content-type": "application/json" },
      body: JSON.stringify({ apiId: service.apiId, name: "bench-fleet-hot" }),
    });
    const { data } = (await created.json()) as { data: { key: string } };
    const before = proxy.verifyCalls;
    const runs = await Promise.all(
      urls.map((url) =>
        load({ url: `${url}/r`, duration: LOAD_SECONDS, connections: 5, headers: { authorization: `Bearer ${data.key}` } }),
      ),
    );
    const calls = proxy.verifyCalls - before;
    const statuses: Record<string, number> = {};
    for (const r of runs) for (const [code, n] of Object.entries(r.statuses)) statuses[code] = (statuses[code] ?? 0) + n;
    return {
      instances: INSTANCES,
      propagation: {
        rounds: ROUNDS,
        p50Ms: Number(quantile(latencies, 0.5).toFixed(2)),
        p99Ms: Number(quantile(latencies, 0.99).toFixed(2)),
        maxMs: Number(latencies.at(-1)!.toFixed(2)),
      },
      hotKey: {
        ttlMs: TTL_MS,
        seconds: LOAD_SECONDS,
        requests: runs.reduce((n, r) => n + r.requests, 0),
        serviceCalls: calls,
        callsPerTtl: Number((calls / ((LOAD_SECONDS * 1000) / TTL_MS)).toFixed(2)),
        statuses,
      },
    };
  } finally {
    await publisher.close();
    await proxy.close();
    for (const child of children) child.kill();
    await removePrefixes();
  }
}
