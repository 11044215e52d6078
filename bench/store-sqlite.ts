// The SQLite store at scale, below the HTTP layer: fills a data file with N keys (default 1M,
// env KEYS) through the store, then times the calls of the hot path and the paginated reads one
// by one. Reports per-call p50/p99/max in ms: every call runs synchronously on the event loop, so
// its time is how long it blocks it (WAL checkpoints run in a worker thread, not in these calls). Run: npx tsx bench/store-sqlite.ts (KEYS=100000 for less).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import type { KeyRecord } from "../src/local/storage";
import { sqliteStore } from "../src/local/stores/sqlite";
import { hashOf, probeKey, quantiles } from "./store-probe";

const N = Number(process.env.KEYS ?? 1_000_000);
const SAMPLES = 5000;
const dir = mkdtempSync(join(tmpdir(), "keyguard-bench-sqlite-"));
const file = join(dir, "keys.db");

const keyOf = (i: number): KeyRecord => probeKey(i, 1000, 1_000_000);

function stats(name: string, wall: number[], cpu?: number[]): void {
  console.log(`${name.padEnd(48)} wall ms: ${quantiles(wall)}${cpu ? ` | cpu ms: ${quantiles(cpu)}` : ""}`);
}

/**
 * Wall time includes waits for a core on a busy machine; CPU time (this process) does not, and
 * is what a synchronous call costs the event loop when the machine is not overloaded.
 */
async function time(name: string, fn: (i: number) => Promise<unknown>): Promise<void> {
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let s = 0; s < SAMPLES; s++) {
    const c = process.cpuUsage();
    const t = performance.now();
    await fn(Math.floor(Math.random() * N));
    wall.push(performance.now() - t);
    const d = process.cpuUsage(c);
    cpu.push((d.user + d.system) / 1000);
  }
  stats(name, wall, cpu);
}

const store = await sqliteStore(file);
try {
  const fill = performance.now();
  const batch = 5000;
  const putTimes: number[] = [];
  for (let from = 0; from < N; from += batch) {
    await store.transaction(async (tx) => {
      for (let i = from; i < Math.min(N, from + batch); i++) {
        const t = performance.now();
        await tx.put("keys", keyOf(i));
        putTimes.push(performance.now() - t);
      }
    });
  }
  const fillS = (performance.now() - fill) / 1000;
  console.log(`filled ${N} keys in ${fillS.toFixed(1)} s (${Math.round(N / fillS)} puts/s in transactions of ${batch})`);
  stats("put (one key, inside a transaction)", putTimes);
  console.log(`file: ${(statSync(file).size / 1e6).toFixed(0)} MB`);
  // 20000: checkpoints run in the store's worker thread; 1000 (SQLite's default): on the event loop.
  console.log(`wal_autocheckpoint on the service's connection: ${JSON.stringify(await store.pragma("wal_autocheckpoint"))}`);

  await time("keyByHash", (i) => store.direct.keyByHash(hashOf(i)));
  await time("spendCredits (one UPDATE … RETURNING)", (i) => store.direct.spendCredits(keyOf(i).id, 1, Date.now()));
  await time("limit (one counter)", (i) => store.direct.limit([{ counter: `rl_${i}/60000`, limit: 10, duration: 60_000, cost: 1 }], Date.now()));
  await time("createKey-sized transaction (get + put)", (i) =>
    store.transaction(async (tx) => {
      await tx.get("apis", "api_1");
      await tx.put("keys", { ...keyOf(N + i), id: `key_new_${randomBytes(6).toString("hex")}`, hash: randomBytes(32).toString("base64") });
    }),
  );
  await time("list keys of an API, page of 100 from a cursor", (i) =>
    store.direct.list("keys", "ws_bench", { from: keyOf(i).id, limit: 100, where: { field: "apiId", value: "api_3" } }),
  );
  await time("find keys of an identity (~N/1000)", (i) => store.direct.find("keys", "ws_bench", "identityId", `id_${i % 1000}`));
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
