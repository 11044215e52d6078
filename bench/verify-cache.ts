// How soon a key revoked through one service instance is refused by the others (the fleet
// goal: <= 25 ms p99 from the revocation's answer). 3 local key services on one
// PostgreSQL + Redis, each in a process of its own (bench/storage-service.ts) with the record cache
// as by default (keys kept). Each round: a key created, verified on all 3 (so each keeps it),
// deleted through one (in turn), and from the moment the deletion is answered, each of the other
// two is asked until it answers NOT_FOUND; the time to that answer (a loopback HTTP call included)
// is one sample. Prints p50 / p99 / max, how many answers were still VALID, and the latency of one
// verifyKey on the same instances just before (on a busy machine the samples are mostly that call).
// Env: VERIFY_CACHE_ROUNDS (default 200), KEYGUARD_BENCH_POSTGRES_URL, KEYGUARD_BENCH_REDIS_URL.
// Run: npm run bench:verify-cache

import { fork, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { loadavg } from "node:os";
import pg from "pg";
import { Pool } from "undici";
import type { ChildReply, StoreConfig } from "./storage-keys";
import { BENCH_POSTGRES_URL as POSTGRES, BENCH_REDIS_URL as REDIS, FROM_SOURCE_NOTE, benchScript } from "./scripts";

const ROUNDS = Number(process.env.VERIFY_CACHE_ROUNDS ?? 200);
const LOOPBACK = /^http:\/\/127\.0\.0\.1:\d+$/;

interface Instance {
  child: ChildProcess;
  pool: Pool;
  rootKey: string;
  apiId: string;
}

async function start(config: StoreConfig, rootKey?: string): Promise<Instance> {
  const script = benchScript("storage-service");
  const child = fork(script.file, [], {
    execArgv: script.execArgv,
    env: { ...process.env, BENCH_STORAGE: JSON.stringify({ ...config, rootKey }) },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const ready = await new Promise<ChildReply>((resolve, reject) => {
    child.once("message", resolve);
    child.once("exit", (code) => reject(new Error(`bench verify-cache: a service exited (${String(code)}) before it was ready`)));
  });
  if (ready.cmd !== "ready") throw new Error(`bench verify-cache: a service failed: ${JSON.stringify(ready)}`);
  if (!LOOPBACK.test(ready.url)) throw new Error(`bench verify-cache: refusing a non-loopback service ${ready.url}`);
  return { child, pool: new Pool(ready.url, { connections: 2 }), rootKey: ready.rootKey, apiId: ready.apiId };
}

async function call(instance: Instance, op: string, body: object): Promise<{ status: number; data: Record<string, unknown> }> {
  const res = await instance.pool.request({
    method: "POST",
    path: `/v2/${op}`,
    headers: { authorization: `Bearer ${instance.rootKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await res.body.json()) as { data: Record<string, unknown> };
  return { status: res.statusCode, data: json.data };
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;

async function main(): Promise<void> {
  if (FROM_SOURCE_NOTE) console.warn(FROM_SOURCE_NOTE);
  const schema = `kg_verifycache_${randomBytes(4).toString("hex")}`;
  const config: StoreConfig = { backend: "postgres", postgres: POSTGRES, redis: REDIS, schema };
  const first = await start(config);
  const instances = [first, await start(config, first.rootKey), await start(config, first.rootKey)];
  console.log(`verify-cache bench: 3 instances on PostgreSQL + Redis, ${ROUNDS} revocations; load average ${loadavg()[0]!.toFixed(1)}`);
  const samples: number[] = [];
  /** One verifyKey of the same key on the same instances just before: what a refusal's sample holds besides the wait. */
  const calls: number[] = [];
  let stale = 0;
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const via = round % 3;
      const created = await call(instances[0]!, "keys.createKey", { apiId: first.apiId });
      const { key, keyId } = created.data as { key: string; keyId: string };
      for (const [n, i] of instances.entries()) {
        const t = performance.now();
        if ((await call(i, "keys.verifyKey", { key })).data.code !== "VALID") throw new Error("not VALID before");
        if (n !== via) calls.push(performance.now() - t);
      }
      const deleted = await call(instances[via]!, "keys.deleteKey", { keyId });
      if (deleted.status !== 200) throw new Error(`deleteKey answered ${deleted.status}`);
      const answered = performance.now();
      await Promise.all(
        instances
          .filter((_, i) => i !== via)
          .map(async (instance) => {
            for (;;) {
              const code = (await call(instance, "keys.verifyKey", { key })).data.code;
              if (code === "NOT_FOUND") break;
              stale++;
            }
            samples.push(performance.now() - answered);
          }),
      );
    }
  } finally {
    await Promise.all(
      instances.map(async (i) => {
        await i.pool.close();
        const exited = new Promise((resolve) => i.child.once("exit", resolve));
        i.child.disconnect();
        await exited;
      }),
    );
    const sql = new pg.Client({ connectionString: POSTGRES });
    await sql.connect();
    await sql.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => sql.end());
  }
  samples.sort((a, b) => a - b);
  const p99 = quantile(samples, 0.99);
  console.log(
    `revoked key refused by the other instances, from the revocation's answer (one loopback verifyKey included): ` +
      `p50 ${quantile(samples, 0.5).toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, max ${samples.at(-1)!.toFixed(2)} ms ` +
      `(${samples.length} samples; ${stale} answers still VALID after the answer)`,
  );
  calls.sort((a, b) => a - b);
  console.log(
    `one verifyKey of a kept key on the same instances just before the revocation: p50 ${quantile(calls, 0.5).toFixed(2)} ms, p99 ${quantile(calls, 0.99).toFixed(2)} ms`,
  );
  console.log(`goal: a revoked key refused on every instance within 25 ms p99: ${p99 <= 25 ? "met" : "not met"} (${p99.toFixed(2)} ms)`);
  console.log(`load average at end: ${loadavg()[0]!.toFixed(1)}`);
}

await main();
