// The PostgreSQL + Redis store at scale, below the HTTP layer: fills a schema of its own with N
// keys (default 100k, env KEYS) through the store, then times the calls of the hot path one by
// one, and the throughput of concurrent credit spends from 1 and 3 store instances (3 pools, as 3
// service instances would have). Reports per-call p50/p99/max in ms and the size on disk.
// Needs PostgreSQL and Redis (env KEYGUARD_BENCH_POSTGRES_URL / KEYGUARD_BENCH_REDIS_URL, else
// the test defaults). Run: node scripts/build-bench.mjs && node bench/.build/store-postgres.mjs (KEYS=10000 for less).
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { Redis } from "ioredis";
import type { Storage } from "../src/server/storage/seam";
import type { KeyRecord } from "../src/server/records";
import { postgresStorage } from "../src/server/storage/postgres/store";
import { hashOf, idOf, probeKey, quantiles } from "./store-probe";
import { BENCH_POSTGRES_URL as POSTGRES, BENCH_REDIS_URL as REDIS } from "./scripts";

const N = Number(process.env.KEYS ?? 100_000);
const SAMPLES = 2000;
const schema = `kg_bench_${randomBytes(4).toString("hex")}`;
const open = () => postgresStorage({ postgres: POSTGRES, redis: REDIS, schema });

/** 100 keys per identity, whatever N. */
const IDENTITIES = Math.max(1, Math.floor(N / 100));
const keyOf = (i: number): KeyRecord => probeKey(i, IDENTITIES, 1_000_000_000);

async function time(name: string, fn: (i: number) => Promise<unknown>): Promise<void> {
  const wall: number[] = [];
  for (let s = 0; s < SAMPLES; s++) {
    const t = performance.now();
    await fn(Math.floor(Math.random() * N));
    wall.push(performance.now() - t);
  }
  console.log(`${name.padEnd(44)} wall ms: ${quantiles(wall)}`);
}

/** Calls per second of `fn` from `concurrency` callers spread over `stores`, for `ms`. */
async function throughput(
  name: string,
  stores: Storage[],
  concurrency: number,
  ms: number,
  fn: (s: Storage, i: number) => Promise<unknown>,
): Promise<void> {
  let calls = 0;
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, c) => {
      const s = stores[c % stores.length]!;
      while (performance.now() < end) {
        await fn(s, Math.floor(Math.random() * N));
        calls++;
      }
    }),
  );
  console.log(`${name.padEnd(44)} ${((calls * 1000) / ms).toFixed(0)} calls/s`);
}

const store = await open();
try {
  console.log(`PostgreSQL + Redis store, ${N.toLocaleString("en")} keys (schema ${schema})`);
  const t0 = performance.now();
  const BATCH = 500;
  const PARALLEL = 4;
  let next = 0;
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < N) {
        const from = next;
        next += BATCH;
        await store.transaction(async (tx) => {
          for (let i = from; i < Math.min(from + BATCH, N); i++) await tx.put("keys", keyOf(i));
        });
      }
    }),
  );
  const fillS = (performance.now() - t0) / 1000;
  console.log(`${"fill (put, 500 per transaction, 4 at once)".padEnd(44)} ${(N / fillS).toFixed(0)} keys/s`);
  await time("createKey-like transaction (get + put)", async () => {
    const i = N + Math.floor(Math.random() * 1e9);
    await store.transaction(async (tx) => {
      await tx.keyByHash(hashOf(i));
      await tx.put("keys", keyOf(i));
    });
  });
  await time("keyByHash", (i) => store.direct.keyByHash(hashOf(i)));
  await time("spendCredits", (i) => store.direct.spendCredits(idOf(i), 1, Date.now()));
  await time("limit (one 60 s window)", (i) =>
    store.direct.limit([{ counter: `rl_${i}/60000`, limit: 100, duration: 60_000, cost: 1, owner: idOf(i) }], Date.now()),
  );
  await time("list (a page of 100 from a cursor)", (i) => store.direct.list("keys", "ws_bench", { from: idOf(i), limit: 100 }));
  await time("find (the 100 keys of an identity)", (i) => store.direct.find("keys", "ws_bench", "identityId", `id_${i % IDENTITIES}`));
  const more = [await open(), await open()];
  await throughput("spendCredits, 32 callers, 1 store", [store], 32, 3000, (s, i) => s.direct.spendCredits(idOf(i), 1, Date.now()));
  await throughput("spendCredits, 32 callers, 3 stores", [store, ...more], 32, 3000, (s, i) =>
    s.direct.spendCredits(idOf(i), 1, Date.now()),
  );
  await throughput("keyByHash, 32 callers, 3 stores", [store, ...more], 32, 3000, (s, i) => s.direct.keyByHash(hashOf(i)));
  await Promise.all(more.map((s) => s.close()));
  const client = new pg.Client({ connectionString: POSTGRES });
  await client.connect();
  const size = await client.query<{ bytes: string }>(
    `SELECT sum(pg_total_relation_size(format('%I.%I', schemaname, tablename)))::bigint AS bytes FROM pg_tables WHERE schemaname = $1`,
    [schema],
  );
  console.log(`${"size on disk (tables + indexes)".padEnd(44)} ${(Number(size.rows[0]!.bytes) / 1024 / 1024).toFixed(1)} MiB`);
  await client.query(`DROP SCHEMA "${schema}" CASCADE`);
  await client.end();
} finally {
  await store.close();
  const redis = new Redis(REDIS);
  let cursor = "0";
  do {
    const [nextCursor, keys] = await redis.scan(cursor, "MATCH", `keyguard:${schema}:*`, "COUNT", 1000);
    cursor = nextCursor;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== "0");
  redis.disconnect();
}
