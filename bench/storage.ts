// The storage section of the benchmarks (throughput and latency at scale): for 10k, 100k and 1M keys and each
// backend (memory, SQLite, PostgreSQL + Redis with 1 and 3 service instances), the real local key
// service in child processes (bench/storage-service.ts) on loopback:
// - createKey per second through HTTP (8 calls in flight, spread over the instances);
// - verifyKey of a plain key and of a credits key (random among the seeded ones): throughput with
//   8 calls in flight, and p50/p99 latency of calls made one at a time (one caller per instance);
//   and of a plain key and of a credits key among 1,000 (keys verified often: what a cache of keys keeps);
// - size on disk (SQLite file + WAL; PostgreSQL pg_total_relation_size of the schema's tables);
// - the service processes' CPU time per call;
// - the longest synchronous part of one storage call (each store call timed in the service), and
//   the longest event-loop stall (monitorEventLoopDelay), of each phase.
// The bulk of the keys is seeded through the store (batched transactions), not through HTTP; the
// store of each backend grows from 10k to 100k to 1M keys. Prints a table and one line per goal,
// saves bench/results/storage.json (a full run only). Env: STORAGE_SIZES (e.g. "10000,100000"),
// STORAGE_BACKENDS (memory,sqlite,postgres; also postgres-uncached: the PostgreSQL store without its
// record cache, postgres-keys-read: with `cacheKeys: false`, and postgres-locked: with
// `optimisticWrites: false`, every write a transaction with locks, to compare; a backend may be named several
// times, for alternating rounds),
// STORAGE_SECONDS (per phase, default 4),
// STORAGE_CPU_PROF (a directory: the services run with --cpu-prof there),
// KEYGUARD_BENCH_POSTGRES_URL, KEYGUARD_BENCH_REDIS_URL (else the local test servers).
// Run: npm run bench:storage

import { fork, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { Pool } from "undici";
import { benchKey, type ChildReply, type ChildRequest, type StoreConfig } from "./storage-keys";
import {
  BENCH_DIR,
  FROM_SOURCE_NOTE,
  benchScript,
  postgresCpuMicros,
  BENCH_POSTGRES_URL as POSTGRES,
  BENCH_REDIS_URL as REDIS,
} from "./scripts";

const here = BENCH_DIR;
const SIZES = (process.env.STORAGE_SIZES ?? "10000,100000,1000000").split(",").map(Number);
const BACKENDS = (process.env.STORAGE_BACKENDS ?? "memory,sqlite,postgres").split(",");
const SECONDS = Number(process.env.STORAGE_SECONDS ?? 4);
const IN_FLIGHT = 8;
/** Most calls of one latency run (one at a time), besides its time bound. */
const LATENCY_CALLS = 3000;
const CPU_PROF = process.env.STORAGE_CPU_PROF;
const LOOPBACK = /^http:\/\/127\.0\.0\.1:\d+$/;

// ---------------------------------------------------------------------------------------------
// The service processes

class Service {
  private waiting: ((reply: ChildReply) => void) | undefined;
  private constructor(
    readonly child: ChildProcess,
    readonly url: string,
    readonly rootKey: string,
    readonly apiId: string,
    readonly pool: Pool,
  ) {
    child.on("message", (reply: ChildReply) => this.answer(reply));
    // A service that dies fails the request it was given, instead of leaving it waiting.
    child.on("exit", (code) => this.answer({ cmd: "error", message: `the service exited (${String(code)})` }));
  }

  static async start(config: StoreConfig, rootKey?: string): Promise<Service> {
    const script = benchScript("storage-service");
    const execArgv = [...script.execArgv, ...(CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${CPU_PROF}`] : [])];
    const child = fork(script.file, [], {
      execArgv,
      env: { ...process.env, BENCH_STORAGE: JSON.stringify({ ...config, rootKey }) },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const ready = await new Promise<ChildReply>((resolve, reject) => {
      child.once("message", resolve);
      child.once("exit", (code) =>
        reject(new Error(`bench storage: the ${config.backend} service exited (${String(code)}) before it was ready`)),
      );
    });
    if (ready.cmd !== "ready") throw new Error(`bench storage: the ${config.backend} service failed: ${JSON.stringify(ready)}`);
    if (!LOOPBACK.test(ready.url)) throw new Error(`bench storage: refusing a non-loopback service ${ready.url}`);
    return new Service(child, ready.url, ready.rootKey, ready.apiId, new Pool(ready.url, { connections: IN_FLIGHT }));
  }

  private answer(reply: ChildReply): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.(reply);
  }

  async ask<C extends ChildRequest["cmd"]>(request: ChildRequest & { cmd: C }): Promise<ChildReply & { cmd: C }> {
    const reply = await new Promise<ChildReply>((resolve) => {
      this.waiting = resolve;
      this.child.send(request);
    });
    if (reply.cmd !== request.cmd) throw new Error(`bench storage: ${request.cmd} failed in the service: ${JSON.stringify(reply)}`);
    return reply as ChildReply & { cmd: C };
  }

  async stop(): Promise<void> {
    await this.pool.close();
    const exited = new Promise((resolve) => this.child.once("exit", resolve));
    this.child.disconnect();
    await exited;
  }
}

// ---------------------------------------------------------------------------------------------
// Load

interface Run {
  calls: number;
  perSecond: number;
  p50: number;
  p99: number;
  failures: number;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const round = (n: number, digits = 2) => Number(n.toFixed(digits));

/**
 * `callers` loops, spread over the services, each making one call at a time until `SECONDS`
 * have passed or `maxCalls` calls are made. A call fails unless answered 200 (and, for
 * verifyKey, `valid: true`).
 */
async function drive(services: Service[], callers: number, maxCalls: number, call: () => { path: string; body: object }): Promise<Run> {
  const latencies: number[] = [];
  let failures = 0;
  const started = performance.now();
  const end = started + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: callers }, async (_, c) => {
      const service = services[c % services.length]!;
      while (performance.now() < end && latencies.length < maxCalls) {
        const { path, body } = call();
        const t = performance.now();
        const res = await service.pool.request({
          method: "POST",
          path,
          headers: { authorization: `Bearer ${service.rootKey}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        const text = await res.body.text();
        latencies.push(performance.now() - t);
        if (res.statusCode !== 200 || (path.endsWith("verifyKey") && !text.includes('"valid":true'))) failures++;
      }
    }),
  );
  const ms = performance.now() - started;
  latencies.sort((a, b) => a - b);
  return {
    calls: latencies.length,
    perSecond: Math.round((latencies.length * 1000) / ms),
    p50: round(quantile(latencies, 0.5), 3),
    p99: round(quantile(latencies, 0.99), 3),
    failures,
  };
}

/** A random seeded key with (or without) credits among the first `n`. */
function seededKey(n: number, credits: boolean): string {
  return benchKey(2 * Math.floor(Math.random() * Math.floor(n / 2)) + (credits ? 0 : 1)).key;
}

// ---------------------------------------------------------------------------------------------
// One backend at one size

interface Phase {
  run: Run;
  /** CPU time (user + system, all threads) the service processes spent per call, µs. */
  cpuPerCallMicros: number;
  /**
   * CPU time this machine's PostgreSQL processes spent per call, µs: on the same cores, when the
   * bench's PostgreSQL runs here (undefined where /proc cannot tell).
   */
  postgresCpuPerCallMicros?: number;
  /** Longest event-loop stall of the services during the phase, ms (machine noise and GC included). */
  stallMs: number;
  /** Longest synchronous part of one storage call during the phase (ms of wall time; see storage-service.ts), and which call. */
  callMs: number;
  call: string;
  /** The 99.9th percentile of those (the largest over the instances), ms. */
  callP999Ms: number;
  /** Storage calls during the phase, and those whose synchronous part took over 10 ms. */
  calls: number;
  callsOverTenMs: number;
}

interface Row {
  backend: string;
  instances: number;
  keys: number;
  createKey: Phase;
  /** `hot`: a plain key among 1,000, 8 in flight. */
  plain: { load: Phase; oneAtATime: Phase; hot: Phase };
  /** `hot`: a credits key among 1,000, 8 in flight (kept by the PostgreSQL store: the charge alone). */
  credits: { load: Phase; oneAtATime: Phase; hot: Phase };
  /** SQLite: the data file and its WAL; PostgreSQL: the schema's tables with their indexes and TOAST. */
  sizeBytes?: number;
  /** SQLite: the WAL's part of `sizeBytes` (it keeps its largest size until the service stops). */
  walBytes?: number;
  /** Longest event-loop stall over every phase above, ms. */
  stallMs: number;
  /** Longest synchronous part of one storage call over every phase above, ms. */
  callMs: number;
}

async function phase(services: Service[], run: () => Promise<Run>): Promise<Phase> {
  const before = await Promise.all(services.map((s) => s.ask({ cmd: "stall" })));
  const postgresBefore = postgresCpuMicros();
  const result = await run();
  const postgresAfter = postgresCpuMicros();
  const stalls = await Promise.all(services.map((s) => s.ask({ cmd: "stall" })));
  const cpu = stalls.reduce((n, s, i) => n + s.cpuMicros - before[i]!.cpuMicros, 0);
  const longest = stalls.reduce((a, b) => (b.longestMs > a.longestMs ? b : a));
  const calls = Math.max(1, result.calls);
  return {
    run: result,
    cpuPerCallMicros: Math.round(cpu / calls),
    ...(postgresBefore !== undefined &&
      postgresAfter !== undefined && { postgresCpuPerCallMicros: Math.round((postgresAfter - postgresBefore) / calls) }),
    stallMs: round(Math.max(...stalls.map((s) => s.maxMs))),
    callMs: round(longest.longestMs, 3),
    call: longest.longest,
    callP999Ms: round(Math.max(...stalls.map((s) => s.p999Ms)), 3),
    calls: stalls.reduce((n, s) => n + s.count, 0),
    callsOverTenMs: stalls.reduce((n, s) => n + s.overTen, 0),
  };
}

async function measure(backend: string, services: Service[], keys: number): Promise<Omit<Row, "sizeBytes" | "walBytes">> {
  const verify = (credits: boolean) => () => ({ path: "/v2/keys.verifyKey", body: { key: seededKey(keys, credits) } });
  // Warm-up, not measured: JIT, connections, the store's caches.
  await drive(services, IN_FLIGHT, 2000, verify(true));
  const createKey = await phase(services, () =>
    drive(services, IN_FLIGHT, Infinity, () => ({ path: "/v2/keys.createKey", body: { apiId: services[0]!.apiId } })),
  );
  const plainLoad = await phase(services, () => drive(services, IN_FLIGHT, Infinity, verify(false)));
  const plainOne = await phase(services, () => drive(services, services.length, LATENCY_CALLS, verify(false)));
  const plainHot = await phase(services, () =>
    drive(services, IN_FLIGHT, Infinity, () => ({ path: "/v2/keys.verifyKey", body: { key: seededKey(Math.min(keys, 2000), false) } })),
  );
  const creditsLoad = await phase(services, () => drive(services, IN_FLIGHT, Infinity, verify(true)));
  const creditsOne = await phase(services, () => drive(services, services.length, LATENCY_CALLS, verify(true)));
  const creditsHot = await phase(services, () =>
    drive(services, IN_FLIGHT, Infinity, () => ({ path: "/v2/keys.verifyKey", body: { key: seededKey(Math.min(keys, 2000), true) } })),
  );
  const all = [createKey, plainLoad, plainOne, plainHot, creditsLoad, creditsOne, creditsHot];
  for (const p of all) if (p.run.failures > 0) console.log(`  ! ${p.run.failures} failed calls (${backend}, ${keys} keys)`);
  return {
    backend,
    instances: services.length,
    keys,
    createKey,
    plain: { load: plainLoad, oneAtATime: plainOne, hot: plainHot },
    credits: { load: creditsLoad, oneAtATime: creditsOne, hot: creditsHot },
    stallMs: Math.max(...all.map((p) => p.stallMs)),
    callMs: Math.max(...all.map((p) => p.callMs)),
  };
}

// ---------------------------------------------------------------------------------------------
// Backends

/** One statement on a connection of its own; the first column of the first row. */
async function sql(text: string): Promise<unknown> {
  const client = new pg.Client({ connectionString: POSTGRES, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    const result = await client.query<Record<string, unknown>>(text);
    return Object.values(result.rows[0] ?? {})[0];
  } finally {
    await client.end();
  }
}

async function seed(service: Service, from: number, to: number): Promise<number> {
  if (to <= from) return 0;
  const { ms } = await service.ask({ cmd: "seed", from, to });
  console.log(
    `  seeded keys ${from.toLocaleString("en")}..${to.toLocaleString("en")} through the store: ${Math.round(((to - from) * 1000) / ms).toLocaleString("en")} keys/s`,
  );
  return ms;
}

async function localBackend(backend: "memory" | "sqlite", rows: Row[]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "keyguard-bench-storage-"));
  const file = join(dir, "keys.db");
  const service = await Service.start(backend === "memory" ? { backend } : { backend, file });
  try {
    let seeded = 0;
    for (const keys of SIZES) {
      await seed(service, seeded, keys);
      seeded = keys;
      const row = await measure(backend, [service], keys);
      const { bytes, walBytes } = await service.ask({ cmd: "size" });
      rows.push({ ...row, ...(bytes === undefined ? {} : { sizeBytes: bytes, walBytes }) });
      print(rows.at(-1)!);
    }
  } finally {
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The store's record cache as by default (`cached`: keys and identities kept too), off (the path
 * before it), or keeping all but keys and identities (`cacheKeys: false`, the default before 2026-11-28).
 */
type RecordCacheVariant = "cached" | "uncached" | "keysRead" | "locked";
const VARIANT_NAMES: Record<RecordCacheVariant, string> = {
  cached: "postgres",
  uncached: "postgres, no record cache",
  keysRead: "postgres, keys read each time",
  locked: "postgres, writes locked",
};

async function postgresBackend(rows: Row[], skipped: string[], variant: RecordCacheVariant = "cached"): Promise<void> {
  const why = await postgresUnavailable();
  if (why) {
    skipped.push(`PostgreSQL + Redis: ${why}`);
    console.log(`  skipped PostgreSQL + Redis: ${why}`);
    return;
  }
  const schema = `kg_storebench_${randomBytes(4).toString("hex")}`;
  const config: StoreConfig = {
    backend: "postgres",
    postgres: POSTGRES,
    redis: REDIS,
    schema,
    ...(variant === "uncached" && { recordCacheTtlMs: 0 }),
    ...(variant === "keysRead" && { cacheKeys: false }),
    ...(variant === "locked" && { optimisticWrites: false }),
  };
  const name = VARIANT_NAMES[variant];
  const services: Service[] = [];
  try {
    services.push(await Service.start(config));
    services.push(await Service.start(config, services[0]!.rootKey), await Service.start(config, services[0]!.rootKey));
    let seeded = 0;
    for (const keys of SIZES) {
      await seed(services[0]!, seeded, keys);
      seeded = keys;
      const bytes = Number(
        await sql(
          `SELECT coalesce(sum(pg_total_relation_size(format('%I.%I', schemaname, tablename))), 0)::bigint FROM pg_tables WHERE schemaname = '${schema}'`,
        ),
      );
      for (const n of [1, 3]) {
        rows.push({ ...(await measure(n === 1 ? name : `${name} ×3`, services.slice(0, n), keys)), sizeBytes: bytes });
        print(rows.at(-1)!);
        const r = rows.at(-1)!;
        const [create, plain, credits] = [r.createKey, r.plain.load, r.credits.load].map((p) => p.postgresCpuPerCallMicros);
        if (create !== undefined && plain !== undefined && credits !== undefined) {
          console.log(
            `    this machine's PostgreSQL, CPU per call: createKey ${int(create)} µs, plain ${int(plain)} µs, credits ${int(credits)} µs`,
          );
        }
      }
    }
  } finally {
    await Promise.all(services.map((s) => s.stop()));
    await sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch((err: unknown) =>
      console.log(`  could not drop schema ${schema}: ${String(err)}`),
    );
    await dropRedisKeys(`keyguard:${schema}:*`);
  }
}

async function postgresUnavailable(): Promise<string | undefined> {
  try {
    await sql("SELECT 1");
  } catch {
    return `PostgreSQL is not reachable at ${POSTGRES.replace(/\/\/[^@]*@/, "//")}`;
  }
  const redis = new Redis(REDIS, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000 });
  try {
    await redis.connect();
    await redis.ping();
  } catch {
    return `Redis is not reachable at ${REDIS}`;
  } finally {
    redis.disconnect();
  }
  return undefined;
}

async function dropRedisKeys(pattern: string): Promise<void> {
  const redis = new Redis(REDIS);
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------
// Output

const mb = (bytes: number | undefined) => (bytes === undefined ? "–" : `${(bytes / 1024 / 1024).toFixed(0)} MiB`);
const int = (n: number) => n.toLocaleString("en");

const HEADER =
  "| backend | keys | createKey/s (CPU µs) | verify plain/s (CPU µs) | plain p50 / p99 ms | plain among 1,000/s (CPU µs) | verify credits/s (CPU µs) | credits p50 / p99 ms | credits among 1,000/s (CPU µs) | size on disk | longest storage call / event-loop stall ms |";

function line(r: Row): string {
  const lat = (p: Phase) => `${p.run.p50.toFixed(2)} / ${p.run.p99.toFixed(2)}`;
  const rate = (p: Phase) => `${int(p.run.perSecond)} (${int(p.cpuPerCallMicros)})`;
  return (
    `| ${r.backend} | ${int(r.keys)} | ${rate(r.createKey)} | ${rate(r.plain.load)} | ${lat(r.plain.oneAtATime)} | ${rate(r.plain.hot)} | ` +
    `${rate(r.credits.load)} | ${lat(r.credits.oneAtATime)} | ${rate(r.credits.hot)} | ${mb(r.sizeBytes)}${r.walBytes === undefined ? "" : ` (WAL ${mb(r.walBytes)})`} | ${r.callMs.toFixed(1)} / ${r.stallMs.toFixed(1)} |`
  );
}

function print(r: Row): void {
  console.log(`  ${line(r)}`);
}

/** PostgreSQL's goals, at the largest size measured (the last row of each kind). */
function postgresGoals(rows: Row[], verdict: (ok: boolean, figure: string) => string): string[] {
  const one = rows.filter((r) => r.backend === "postgres").at(-1);
  const three = rows.filter((r) => r.backend === "postgres ×3").at(-1);
  if (!one) return [];
  const at = `PostgreSQL, ${int(one.keys)} keys`;
  const plain = one.plain.load.cpuPerCallMicros;
  const credits = one.credits.load.cpuPerCallMicros;
  const out = [
    `goal: ${at}, plain verifyKey <= 100 µs of service CPU: ${verdict(plain <= 100, `${int(plain)} µs`)}`,
    `goal: ${at}, credits verifyKey <= 150 µs of service CPU: ${verdict(credits <= 150, `${int(credits)} µs`)}`,
    `goal: ${at}, createKey >= 2,500/s with one instance: ${verdict(
      one.createKey.run.perSecond >= 2500,
      `${int(one.createKey.run.perSecond)}/s, ${int(one.createKey.cpuPerCallMicros)} µs of service CPU per call` +
        (one.createKey.postgresCpuPerCallMicros === undefined
          ? ""
          : ` and ${int(one.createKey.postgresCpuPerCallMicros)} µs of this machine's PostgreSQL, on the same cores`),
    )}`,
  ];
  // Keys verified again and again (an API whose callers repeat their keys): each instance keeps them.
  const hotPlain = one.plain.hot.cpuPerCallMicros;
  const hotCredits = one.credits.hot.cpuPerCallMicros;
  out.push(
    `goal: ${at}, plain verifyKey of a key among 1,000 <= 100 µs of service CPU: ${verdict(hotPlain <= 100, `${int(hotPlain)} µs`)}`,
    `goal: ${at}, credits verifyKey of a key among 1,000 <= 150 µs of service CPU: ${verdict(hotCredits <= 150, `${int(hotCredits)} µs`)}`,
  );
  if (three) {
    const phases = (r: Row) => [r.createKey.run.perSecond, r.plain.load.run.perSecond, r.credits.load.run.perSecond];
    const ratios = phases(three).map((n, i) => n / phases(one)[i]!);
    out.push(
      `goal: ${at}, three instances never below one in total throughput: ${verdict(
        Math.min(...ratios) >= 1,
        `×3 ÷ ×1: createKey ${ratios[0]!.toFixed(2)}, plain ${ratios[1]!.toFixed(2)}, credits ${ratios[2]!.toFixed(2)}`,
      )}`,
    );
  }
  return out;
}

function goals(rows: Row[]): string[] {
  const at = (backend: string, keys: number) => rows.find((r) => r.backend === backend && r.keys === keys);
  const big = at("sqlite", 1_000_000);
  const small = at("sqlite", 10_000);
  const verdict = (ok: boolean, figure: string) => (ok ? `met (${figure})` : `not met (${figure})`);
  const out: string[] = postgresGoals(rows, verdict);
  if (!big) return [...out, "goals (SQLite): not evaluated (no SQLite row at 1,000,000 keys in this run)"];
  const p99 = big.credits.oneAtATime.run.p99;
  out.push(`goal: SQLite, 1M keys, credits verification p99 <= 2 ms: ${verdict(p99 <= 2, `${p99.toFixed(2)} ms`)}`);
  if (small) {
    const ratio = p99 / small.credits.oneAtATime.run.p99;
    out.push(
      `goal: SQLite, credits p99 at 1M within 1.5x of 10k: ${verdict(ratio <= 1.5, `${ratio.toFixed(2)}x: ${small.credits.oneAtATime.run.p99.toFixed(2)} -> ${p99.toFixed(2)} ms`)}`,
    );
  }
  const cpuBound = Math.round(1e6 / big.createKey.cpuPerCallMicros);
  out.push(
    `goal: SQLite, 1M keys, createKey >= 2,000/s: ${verdict(
      big.createKey.run.perSecond >= 2000,
      `${int(big.createKey.run.perSecond)}/s; ` +
        `${int(big.createKey.cpuPerCallMicros)} µs of service CPU per call, so at most ${int(cpuBound)}/s on one free core`,
    )}`,
  );
  for (const backend of [...new Set(rows.map((r) => r.backend))]) {
    const mine = rows.filter((r) => r.backend === backend);
    const call = Math.max(...mine.map((r) => r.callMs));
    const stall = Math.max(...mine.map((r) => r.stallMs));
    const phases = mine.flatMap((r) => [
      r.createKey,
      r.plain.load,
      r.plain.oneAtATime,
      r.plain.hot,
      r.credits.load,
      r.credits.oneAtATime,
      r.credits.hot,
    ]);
    const count = phases.reduce((n, p) => n + p.calls, 0);
    const over = phases.reduce((n, p) => n + p.callsOverTenMs, 0);
    const p999 = Math.max(...phases.map((p) => p.callP999Ms));
    out.push(
      `goal: ${backend}, no storage call blocks the event loop > 10 ms: ${verdict(
        call <= 10,
        `longest call ${call.toFixed(1)} ms, ` +
          `${int(over)} of ${int(count)} calls over 10 ms, p99.9 ${p999.toFixed(2)} ms; longest event-loop stall, any cause, ${stall.toFixed(1)} ms`,
      )}`,
    );
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  if (FROM_SOURCE_NOTE) console.warn(FROM_SOURCE_NOTE);
  if (CPU_PROF) mkdirSync(CPU_PROF, { recursive: true });
  const started = Date.now();
  const rows: Row[] = [];
  const skipped: string[] = [];
  console.log(
    `storage bench: sizes ${SIZES.map(int).join(", ")}; backends ${BACKENDS.join(", ")}; ${SECONDS} s per phase, ${IN_FLIGHT} calls in flight under load`,
  );
  console.log(
    `load average at start: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  console.log(HEADER);
  for (const backend of BACKENDS) {
    if (backend === "memory" || backend === "sqlite") await localBackend(backend, rows);
    else if (backend === "postgres") await postgresBackend(rows, skipped);
    else if (backend === "postgres-uncached") await postgresBackend(rows, skipped, "uncached");
    else if (backend === "postgres-keys-read") await postgresBackend(rows, skipped, "keysRead");
    else if (backend === "postgres-locked") await postgresBackend(rows, skipped, "locked");
    else
      throw new Error(
        `bench storage: unknown backend ${JSON.stringify(backend)} (memory, sqlite, postgres, postgres-uncached, postgres-keys-read, postgres-locked)`,
      );
  }
  const lines = goals(rows);
  console.log(`\n${HEADER}\n|${"---|".repeat(HEADER.split(" | ").length)}`);
  for (const r of rows) console.log(line(r));
  for (const l of [...lines, ...skipped.map((s) => `skipped: ${s}`)]) console.log(l);
  const minutes = (Date.now() - started) / 60_000;
  console.log(
    `took ${minutes.toFixed(1)} min; load average at end: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  if (process.env.STORAGE_SIZES || process.env.STORAGE_BACKENDS || process.env.STORAGE_SECONDS || CPU_PROF) {
    console.log("a narrowed or profiled run: bench/results/storage.json left as it was");
    return;
  }
  writeFileSync(
    join(here, "results", "storage.json"),
    `${JSON.stringify(
      {
        date: new Date().toISOString(),
        machine: `${cpus()[0]?.model.trim() ?? "?"}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
        loadAverageAtEnd: loadavg().map((l) => round(l, 1)),
        settings: { sizes: SIZES, secondsPerPhase: SECONDS, inFlight: IN_FLIGHT, latencyCallsMax: LATENCY_CALLS },
        minutes: round(minutes, 1),
        rows,
        goals: lines,
        skipped,
      },
      null,
      2,
    )}\n`,
  );
}

await main();
