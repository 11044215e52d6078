// The SQLite store at scale, below the HTTP layer: fills a data file with N keys (default 1M,
// env KEYS) through the store, then times the calls of the hot path and the paginated reads one
// by one. Reports per-call p50/p99/max in ms: every call runs synchronously on the event loop, so
// its time is how long it blocks it (WAL checkpoints run in a worker thread, not in these calls). Run: node scripts/build-bench.mjs && node bench/.build/store-sqlite.mjs (KEYS=100000 for less).
//
// BASELINE=<another checkout of keyguard> then compares the store calls of a verifyKey between
// that checkout's SQLite store and this one's, each on a file of its own filled alike: CPU per
// verifyKey in alternating rounds, medians and their ratio. E.g. before and after a change:
// git worktree add /tmp/kg-before main && BASELINE=/tmp/kg-before KEYS=100000 npx tsx bench/store-sqlite.ts
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import type { Storage } from "../src/server/storage/seam";
import type { KeyRecord } from "../src/server/records";
import { sqliteStorage, type SqliteStorage } from "../src/server/storage/sqlite/store";
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

const ROOT_HASH = "root_hash_bench";

/**
 * Fills `store` with the N keys and what their verifyKey reads: the root key, the 10 APIs, the
 * 1000 identities and the permission. Returns the put times of the keys.
 */
async function fill(store: Storage): Promise<number[]> {
  const batch = 5000;
  const putTimes: number[] = [];
  await store.transaction(async (tx) => {
    await tx.put("rootKeys", { id: "rk_bench", workspaceId: "ws_bench", hash: ROOT_HASH, permissions: ["api.*.verify_key"], createdAt: 1 });
    await tx.put("permissions", { id: "perm_1", workspaceId: "ws_bench", name: "read", slug: "read", createdAt: 1 });
    for (let a = 0; a < 10; a++) await tx.put("apis", { id: `api_${a}`, workspaceId: "ws_bench", name: `api ${a}`, createdAt: 1 });
    for (let d = 0; d < 1000; d++)
      await tx.put("identities", { id: `id_${d}`, workspaceId: "ws_bench", externalId: `user_${d}`, ratelimits: [], createdAt: 1 });
  });
  for (let from = 0; from < N; from += batch) {
    await store.transaction(async (tx) => {
      for (let i = from; i < Math.min(N, from + batch); i++) {
        const t = performance.now();
        await tx.put("keys", keyOf(i));
        putTimes.push(performance.now() - t);
      }
    });
  }
  return putTimes;
}

/**
 * The store calls a verifyKey of key i makes (src/local/service.ts, verify.ts, views.ts): the root
 * key, the key, its identity and permission and its API, one rate-limit counter and the credits.
 */
async function verifyCalls(store: Storage, i: number, now: number): Promise<void> {
  const tx = store.direct;
  if (!(await tx.rootKeyByHash(ROOT_HASH))) throw new Error("no root key");
  const key = await tx.keyByHash(hashOf(i));
  if (!key) throw new Error(`no key ${i}`);
  await Promise.all([
    tx.get("identities", key.identityId!),
    ...key.permissionIds.map((id) => tx.get("permissions", id)),
    tx.get("apis", key.apiId),
  ]);
  await tx.limit([{ counter: `rl_${i % 1000}/60000`, limit: 1e9, duration: 60_000, cost: 1, owner: key.id }], now);
  await tx.spendCredits(key.id, 1, now);
}

/**
 * CPU per verifyKey (its store calls), µs, in alternating rounds of `perRound` verifyKeys: medians.
 * The process's CPU: it includes the checkpoint worker threads of both stores.
 */
async function compare(stores: Array<{ name: string; store: Storage }>, rounds: number, perRound: number): Promise<void> {
  const cpu = stores.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    // Each round in the other order, so neither store always runs right after the other.
    const order = r % 2 === 0 ? [...stores.keys()] : [...stores.keys()].reverse();
    for (const s of order) {
      const { store } = stores[s]!;
      const c = process.cpuUsage();
      for (let k = 0; k < perRound; k++) await verifyCalls(store, Math.floor(Math.random() * N), Date.now());
      const d = process.cpuUsage(c);
      cpu[s]!.push((d.user + d.system) / perRound);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const [s, { name }] of stores.entries())
    console.log(
      `${name.padEnd(48)} CPU µs per verifyKey's store calls: median ${median(cpu[s]!).toFixed(1)} (${rounds} rounds of ${perRound})`,
    );
  if (stores.length === 2) console.log(`ratio ${stores[1]!.name} ÷ ${stores[0]!.name}: ${(median(cpu[1]!) / median(cpu[0]!)).toFixed(3)}`);
}

const store = await sqliteStorage(file);
let baseline: SqliteStorage | undefined;
try {
  const fill0 = performance.now();
  const putTimes = await fill(store);
  const fillS = (performance.now() - fill0) / 1000;
  console.log(`filled ${N} keys in ${fillS.toFixed(1)} s (${Math.round(N / fillS)} puts/s in transactions of 5000)`);
  stats("put (one key, inside a transaction)", putTimes);
  console.log(`file: ${(statSync(file).size / 1e6).toFixed(0)} MB`);
  // 20000: checkpoints run in the store's worker thread; 1000 (SQLite's default): on the event loop.
  console.log(`wal_autocheckpoint on the service's connection: ${JSON.stringify(await store.pragma("wal_autocheckpoint"))}`);

  await time("keyByHash", (i) => store.direct.keyByHash(hashOf(i)));
  await time("spendCredits (one UPDATE … RETURNING)", (i) => store.direct.spendCredits(keyOf(i).id, 1, Date.now()));
  await time("limit (one counter)", (i) =>
    store.direct.limit([{ counter: `rl_${i}/60000`, limit: 10, duration: 60_000, cost: 1 }], Date.now()),
  );
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
  await time("verifyKey's store calls (7: root key … credits)", (i) => verifyCalls(store, i, Date.now()));
  if (process.env.BASELINE) {
    const other = (await import(resolve(process.env.BASELINE, "src/local.ts"))) as { sqliteStorage: typeof sqliteStorage };
    baseline = await other.sqliteStorage(join(dir, "baseline.db"));
    await fill(baseline);
    await compare(
      [
        { name: `baseline (${process.env.BASELINE})`, store: baseline },
        { name: "this checkout", store },
      ],
      100,
      400,
    );
  }
} finally {
  await baseline?.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
