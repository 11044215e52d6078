// The unit costs behind docs/scale.md that the other benchmarks do not print: bytes per
// verification event on disk (SQLite, PostgreSQL), verification events per second one PostgreSQL
// takes through the store, and Redis memory per answer kept by redisStore(). Every load is bounded
// (SCALE_EVENTS events, SCALE_ANSWERS answers); loopback only. Prints a table, writes
// bench/results/scale.json. Env: SCALE_EVENTS (default 200000), SCALE_ANSWERS (default 20000),
// KEYGUARD_BENCH_POSTGRES_URL, KEYGUARD_BENCH_REDIS_URL (else the local test servers).
// Run: npm run bench:scale

import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { keyHash } from "keyguard";
import { redisStore } from "keyguard/redis";
import { createClient } from "keyguard/client";
import { postgresStorage, sqliteStorage, startLocalKeyService, type Storage } from "keyguard/server";
import type { VerificationEvent } from "../src/server/records";
import { BENCH_DIR, BENCH_POSTGRES_URL as POSTGRES, BENCH_REDIS_URL as REDIS } from "./scripts";

const here = BENCH_DIR;
const EVENTS = Math.min(Number(process.env.SCALE_EVENTS ?? 200_000), 2_000_000);
const ANSWERS = Math.min(Number(process.env.SCALE_ANSWERS ?? 20_000), 200_000);
const BATCH = 1000;
for (const url of [POSTGRES, REDIS]) {
  if (!/^\w+:\/\/([^@/]*@)?(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\//.test(url))
    throw new Error(`bench: refusing a non-loopback server ${url}`);
}

/** Events as a service writes them: 1,000 keys of 10 APIs, a third with an identity, two tags each, mostly VALID. */
function events(count: number, start: number): VerificationEvent[] {
  const outcomes = ["VALID", "VALID", "VALID", "VALID", "VALID", "VALID", "RATE_LIMITED", "USAGE_EXCEEDED", "DISABLED", "EXPIRED"];
  return Array.from({ length: count }, (_, i) => {
    const n = start + i;
    const key = n % 1000;
    return {
      time: Date.now() - (EVENTS - n) * 10,
      workspaceId: "ws_bench",
      keySpaceId: `api_bench${key % 10}`,
      keyId: `key_bench${String(key).padStart(6, "0")}`,
      identityId: key % 3 === 0 ? `id_bench${key}` : "",
      externalId: key % 3 === 0 ? `user_${key}` : "",
      outcome: outcomes[n % outcomes.length]!,
      tags: [`path=/v1/items/${n % 50}`, "method=GET"],
      spentCredits: n % 4 === 0 ? 1 : 0,
      requestId: `req_${randomBytes(12).toString("hex")}`,
      region: "local",
    };
  });
}

/** Appends EVENTS events in batches; the wall time and this process's CPU time it took. */
async function append(store: Storage): Promise<{ seconds: number; cpuMs: number }> {
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  for (let done = 0; done < EVENTS; done += BATCH) await store.appendVerifications(events(Math.min(BATCH, EVENTS - done), done));
  const used = process.cpuUsage(cpu);
  return { seconds: (performance.now() - t0) / 1000, cpuMs: (used.user + used.system) / 1000 };
}

const fileBytes = (file: string) => [file, `${file}-wal`].reduce((sum, f) => sum + (existsSync(f) ? statSync(f).size : 0), 0);

async function sqliteEvents() {
  const dir = mkdtempSync(join(tmpdir(), "keyguard-scale-"));
  try {
    const file = join(dir, "keys.db");
    let store = await sqliteStorage(file);
    await store.close(); // the empty store's file, checkpointed
    const empty = fileBytes(file);
    store = await sqliteStorage(file);
    const took = await append(store);
    await store.close();
    return {
      bytesPerEvent: (fileBytes(file) - empty) / EVENTS,
      eventsPerSecond: EVENTS / took.seconds,
      cpuUsPerEvent: (took.cpuMs * 1000) / EVENTS,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function postgresEvents() {
  const schema = `kg_scale_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: POSTGRES });
  await admin.connect();
  const size = async () =>
    Number(
      (
        await admin.query<{ bytes: string }>(
          "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'",
          [schema],
        )
      ).rows[0]!.bytes,
    );
  try {
    const store = await postgresStorage({ postgres: POSTGRES, redis: REDIS, schema, redisPrefix: `${schema}:` });
    const empty = await size();
    const took = await append(store);
    await store.close();
    await admin.query(`VACUUM ANALYZE`);
    return {
      bytesPerEvent: ((await size()) - empty) / EVENTS,
      eventsPerSecond: EVENTS / took.seconds,
      cpuUsPerEvent: (took.cpuMs * 1000) / EVENTS,
    };
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}

const VERIFY_CALLS = Math.min(Number(process.env.SCALE_VERIFY_CALLS ?? 5000), 50_000);

/** CPU time (user + system) of the processes `pids`, ms, from /proc (clock ticks of 10 ms: measure long runs). */
function cpuOfPids(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // The process ended: its time is not counted.
    }
  }
  return ticks * 10;
}

/**
 * What a verifyKey costs PostgreSQL: the CPU time of the database backends serving the service's
 * own connections (found by their application_name; background writers and the WAL writer are not
 * counted) per call, for a plain key and a credits key, VERIFY_CALLS calls each with 8 in flight.
 */
async function postgresVerifyCosts() {
  const schema = `kg_scale_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: POSTGRES });
  await admin.connect();
  const storage = await postgresStorage({
    postgres: `${POSTGRES}${POSTGRES.includes("?") ? "&" : "?"}application_name=${schema}`,
    redis: REDIS,
    schema,
    redisPrefix: `${schema}:`,
  });
  const svc = await startLocalKeyService({ port: 0, storage });
  try {
    const client = createClient({ rootKey: svc.rootKey, baseUrl: svc.baseUrl, retry: false });
    const plain = (await client.keys.createKey({ apiId: svc.apiId })).key;
    const credits = (await client.keys.createKey({ apiId: svc.apiId, credits: { remaining: 1_000_000_000 } })).key;
    const calls = async (key: string, count: number) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next++ < count) {
            const { valid } = await client.keys.verifyKey({ key });
            if (!valid) throw new Error("bench: a verification failed");
          }
        }),
      );
    };
    const perCall = async (key: string) => {
      await calls(key, 200);
      const pids = (await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [schema])).rows.map(
        (r) => r.pid,
      );
      const before = cpuOfPids(pids);
      await calls(key, VERIFY_CALLS);
      return ((cpuOfPids(pids) - before) * 1000) / VERIFY_CALLS;
    };
    return { plainCpuUs: await perCall(plain), creditsCpuUs: await perCall(credits) };
  } finally {
    await svc.close();
    // The service does not close a store it was given.
    await storage.close();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}

/** Every Redis key under `prefix` (SCAN, bounded by the count the bench made). */
async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    found.push(...keys);
    cursor = next;
  } while (cursor !== "0" && found.length < ANSWERS * 10);
  return found;
}

/**
 * Redis memory per answer kept by redisStore(): ANSWERS answers settled, then MEMORY USAGE of every
 * key the store wrote under its prefix (answers and their indexes), over the number of answers.
 * Per key, so other clients of the same Redis do not disturb it.
 */
async function redisAnswers() {
  const prefix = `kg-scale-${randomBytes(4).toString("hex")}:`;
  const redis = new Redis(REDIS);
  const store = await redisStore({ url: REDIS, prefix, max: 10 });
  await store.ready;
  try {
    for (let i = 0; i < ANSWERS; i++) {
      const ref = { keyHash: keyHash(`sk_scale_${i}`), query: "" };
      const found = await store.lookup(ref, 0);
      if (found.ticket === undefined) throw new Error("bench: an answer was found before it was kept");
      store.settle(found.ticket, { valid: true, code: "VALID", keyId: `key_${i}`, enabled: true, permissions: ["docs.read"] }, 60_000);
    }
    // settle writes in the background: wait (bounded) until Redis holds every answer.
    const deadline = Date.now() + 30_000;
    let keys = await keysUnder(redis, prefix);
    while (keys.filter((k) => k.startsWith(`${prefix}a:`)).length < ANSWERS && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      keys = await keysUnder(redis, prefix);
    }
    const pipeline = redis.pipeline();
    for (const key of keys) pipeline.memory("USAGE", key);
    const sizes = ((await pipeline.exec()) ?? []).map(([, bytes]) => Number(bytes ?? 0));
    return { keys: keys.length, bytesPerAnswer: sizes.reduce((a, b) => a + b, 0) / ANSWERS };
  } finally {
    await store.close?.();
    const keys = await keysUnder(redis, prefix);
    for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000));
    redis.disconnect();
  }
}

interface StorageRow {
  backend: string;
  instances: number;
  keys: number;
  sizeBytes?: number;
  plain: { load: { cpuPerCallMicros: number } };
  credits: { load: { cpuPerCallMicros: number } };
}

/**
 * The model of docs/scale.md: for 1k, 100k and 1M verifications per second reaching the service,
 * what they need, from this run's unit costs and the service CPU per call of the last full storage
 * benchmark (bench/results/storage.json: PostgreSQL + Redis, one instance, its largest size).
 */
function model(units: {
  postgres: { bytesPerEvent: number; eventsPerSecond: number };
  redis: { bytesPerAnswer: number };
  verify: { plainCpuUs: number; creditsCpuUs: number };
}) {
  const file = `${here}results/storage.json`;
  if (!existsSync(file)) return { lines: ["(no bench/results/storage.json: run npm run bench:storage for the model)"], inputs: undefined };
  const storage = JSON.parse(readFileSync(file, "utf8")) as { date: string; rows: StorageRow[] };
  const pgRows = storage.rows.filter((r) => r.backend === "postgres" && r.instances === 1).sort((a, b) => b.keys - a.keys);
  const row = pgRows[0];
  if (row === undefined) return { lines: ["(bench/results/storage.json has no PostgreSQL row)"], inputs: undefined };
  const inputs = {
    storageRun: storage.date,
    serviceCpuUs: { plain: row.plain.load.cpuPerCallMicros, credits: row.credits.load.cpuPerCallMicros },
    postgresCpuUs: { plain: units.verify.plainCpuUs, credits: units.verify.creditsCpuUs },
    bytesPerKey: (row.sizeBytes ?? 0) / row.keys,
    bytesPerEvent: units.postgres.bytesPerEvent,
    eventsPerSecondOneStore: units.postgres.eventsPerSecond,
    redisBytesPerAnswer: units.redis.bytesPerAnswer,
  };
  const BUSY = 0.6; // plan cores to be 60 % busy
  const f = (n: number, d = 0) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
  const gb = (bytes: number) => (bytes >= 1e12 ? `${f(bytes / 1e12, 1)} TB` : `${f(bytes / 1e9, 1)} GB`);
  const lines = [
    `| verifications/s reaching the service | service cores (plain / credits) | PostgreSQL cores (plain / credits) | event writes: share of one store's measured rate | events per day on disk | Redis for 1M kept answers |`,
    "|---|---|---|---|---|---|",
  ];
  for (const rate of [1_000, 100_000, 1_000_000]) {
    const cores = (us: number) => f((rate * us) / 1e6 / BUSY, 1);
    lines.push(
      `| ${f(rate)} | ${cores(inputs.serviceCpuUs.plain)} / ${cores(inputs.serviceCpuUs.credits)} | ${cores(inputs.postgresCpuUs.plain)} / ${cores(inputs.postgresCpuUs.credits)} | ${f(rate / inputs.eventsPerSecondOneStore, 2)}× | ${gb(rate * 86_400 * inputs.bytesPerEvent)} | ${gb(1e6 * inputs.redisBytesPerAnswer)} |`,
    );
  }
  lines.push(
    "",
    `Inputs: service CPU per verifyKey ${inputs.serviceCpuUs.plain} / ${inputs.serviceCpuUs.credits} µs (storage run of ${storage.date.slice(0, 10)}, PostgreSQL, ${f(row.keys)} keys, one instance); ` +
      `PostgreSQL CPU ${f(inputs.postgresCpuUs.plain)} / ${f(inputs.postgresCpuUs.credits)} µs; ${f(inputs.bytesPerKey)} bytes per key and ${f(inputs.bytesPerEvent)} per event on disk; ` +
      `${f(inputs.eventsPerSecondOneStore)} events/s written by one store; ${f(inputs.redisBytesPerAnswer)} bytes of Redis per kept answer; cores planned ${BUSY * 100} % busy.`,
  );
  return { lines, inputs };
}

async function main() {
  const machine = `${cpus()[0]?.model ?? "unknown CPU"}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  process.stderr.write(`bench scale: ${EVENTS} events per store, ${ANSWERS} Redis answers\n`);
  const sqlite = await sqliteEvents();
  const postgres = await postgresEvents();
  const redis = await redisAnswers();
  const verify = await postgresVerifyCosts();
  const planned = model({ postgres, redis, verify });
  const results = {
    date: new Date().toISOString(),
    machine,
    events: EVENTS,
    answers: ANSWERS,
    sqlite,
    postgres,
    redis,
    postgresVerify: verify,
    model: planned.inputs,
  };
  mkdirSync(`${here}results`, { recursive: true });
  writeFileSync(`${here}results/scale.json`, `${JSON.stringify(results, null, 2)}\n`);
  const f = (n: number, d = 0) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
  process.stdout.write(
    [
      `keyguard unit costs, ${results.date.slice(0, 10)}, ${machine}`,
      "",
      "| unit | SQLite | PostgreSQL |",
      "|---|---|---|",
      `| bytes on disk per verification event (tables and indexes) | ${f(sqlite.bytesPerEvent)} | ${f(postgres.bytesPerEvent)} |`,
      `| verification events written per second through the store (batches of ${BATCH}) | ${f(sqlite.eventsPerSecond)} | ${f(postgres.eventsPerSecond)} |`,
      `| service CPU per event written, µs | ${f(sqlite.cpuUsPerEvent, 1)} | ${f(postgres.cpuUsPerEvent, 1)} |`,
      "",
      `PostgreSQL CPU per verifyKey (its backends serving the service, ${VERIFY_CALLS} calls): plain key ${f(verify.plainCpuUs)} µs, credits key ${f(verify.creditsCpuUs)} µs`,
      `Redis memory per answer kept by redisStore(): ${f(redis.bytesPerAnswer)} bytes (${ANSWERS} answers in ${redis.keys} Redis keys, MEMORY USAGE)`,
      "",
      ...planned.lines,
      "",
    ].join("\n"),
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`bench scale failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
