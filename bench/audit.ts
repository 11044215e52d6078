// The cost of the audit log on createKey: the same service twice over one backend, once writing
// its audit records and once with `appendAudit` dropped (the only difference: a store wrapper,
// used by both), in alternating rounds of ROUNDS × REQUESTS createKey calls (CONCURRENCY at a time,
// loopback HTTP). Prints, per backend, the median throughput of each side, the median CPU per call
// of this process (service and load alike), on PostgreSQL also of this machine's PostgreSQL, and
// their ratios, and the goal (≥ 0.9×). Run: npm run
// bench:events, or node scripts/build-bench.mjs && node bench/.build/audit.mjs
// (BACKENDS, default memory,sqlite,postgres; postgres needs KEYGUARD_BENCH_POSTGRES_URL and
// KEYGUARD_BENCH_REDIS_URL, else the local test servers).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { silentLogger } from "../src/logger";
import { memoryStorage, postgresStorage, sqliteStorage, startLocalKeyService } from "../src/server";
import type { Storage, StorageTx } from "../src/server/storage/seam";
import { overriding } from "../test/support/storage-wrapper";
import { BENCH_POSTGRES_URL, BENCH_REDIS_URL, postgresCpuMicros } from "./scripts";

const ROUNDS = Math.min(Number(process.env.ROUNDS ?? 6), 20);
const REQUESTS = Math.min(Number(process.env.REQUESTS ?? 400), 5000);
const CONCURRENCY = 8;
const BACKENDS = (process.env.BACKENDS ?? "memory,sqlite,postgres").split(",");

/** `store` with every StorageTx call passed through, `appendAudit` dropped unless `audit`. */
function wrapped(store: Storage, audit: boolean): Storage {
  const tx = (inner: StorageTx): StorageTx =>
    new Proxy(inner, {
      get(target, name) {
        if (name === "appendAudit" && !audit) return async () => undefined;
        const value: unknown = Reflect.get(target, name);
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  return overriding(store, { direct: tx(store.direct), transaction: (fn, options) => store.transaction((t) => fn(tx(t)), options) });
}

async function open(backend: string, dir: string, name: string): Promise<Storage> {
  if (backend === "memory") return memoryStorage();
  if (backend === "sqlite") return sqliteStorage(join(dir, `${name}.db`));
  const schema = `bench_audit_${name}_${process.pid}`;
  return postgresStorage({
    postgres: BENCH_POSTGRES_URL,
    redis: BENCH_REDIS_URL,
    schema,
    redisPrefix: `${schema}:`,
  });
}

interface Side {
  name: string;
  call: () => Promise<void>;
  rates: number[];
  cpu: number[];
  /** This machine's PostgreSQL's CPU per call, ms (PostgreSQL only). */
  postgresCpu: number[];
}

async function side(backend: string, dir: string, audit: boolean): Promise<Side & { close: () => Promise<void> }> {
  const name = audit ? "with" : "without";
  const store = wrapped(await open(backend, dir, name), audit);
  const running = await startLocalKeyService({ storage: store, port: 0, logger: silentLogger });
  const body = JSON.stringify({ apiId: running.apiId, name: "bench", meta: { plan: "pro" } });
  const headers = { authorization: `Bearer ${running.rootKey}`, "content-type": "application/json" };
  const call = async () => {
    const res = await fetch(`${running.baseUrl}/v2/keys.createKey`, { method: "POST", headers, body });
    if (res.status !== 200) throw new Error(`createKey: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  };
  return {
    name,
    call,
    rates: [],
    cpu: [],
    postgresCpu: [],
    close: async () => {
      await running.close();
      await store.close();
    },
  };
}

async function round(s: Side): Promise<void> {
  let next = 0;
  const cpu = process.cpuUsage();
  const postgresBefore = postgresCpuMicros();
  const start = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < REQUESTS) await s.call();
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  const postgresAfter = postgresCpuMicros();
  s.rates.push(REQUESTS / seconds);
  s.cpu.push((used.user + used.system) / 1000 / REQUESTS);
  if (postgresBefore !== undefined && postgresAfter !== undefined) s.postgresCpu.push((postgresAfter - postgresBefore) / 1000 / REQUESTS);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

for (const backend of BACKENDS) {
  const dir = mkdtempSync(join(tmpdir(), "keyguard-bench-audit-"));
  const sides: [Side & { close: () => Promise<void> }, Side & { close: () => Promise<void> }] = [
    await side(backend, dir, true),
    await side(backend, dir, false),
  ];
  try {
    for (const s of sides) for (let i = 0; i < 1000; i++) await s.call(); // warm-up: JIT and store caches
    for (let r = 0; r < ROUNDS; r++) for (const s of r % 2 === 0 ? sides : [...sides].reverse()) await round(s);
    const [withAudit, without] = sides;
    // Only when PostgreSQL runs on this machine (and only the PostgreSQL backend uses it).
    const postgres = backend === "postgres" && withAudit.postgresCpu.length === ROUNDS;
    for (const s of sides) {
      console.log(
        `${backend.padEnd(8)} createKey ${s.name.padEnd(7)} audit: median ${median(s.rates).toFixed(0)} req/s ` +
          `(rounds ${s.rates.map((x) => x.toFixed(0)).join(", ")}), CPU ${median(s.cpu).toFixed(3)} ms/call` +
          (postgres ? `, this machine's PostgreSQL ${median(s.postgresCpu).toFixed(3)} ms/call` : ""),
      );
    }
    console.log(
      `${backend.padEnd(8)} with/without: throughput ${(median(withAudit.rates) / median(without.rates)).toFixed(3)}×, ` +
        `CPU per call ${(median(withAudit.cpu) / median(without.cpu)).toFixed(3)}×` +
        (postgres ? `, PostgreSQL's ${(median(withAudit.postgresCpu) / median(without.postgresCpu)).toFixed(3)}×` : "") +
        ` (${ROUNDS} alternating rounds of ${REQUESTS}, ${CONCURRENCY} at a time)`,
    );
    const ratio = median(withAudit.rates) / median(without.rates);
    console.log(
      `goal: ${backend}: createKey with the audit log ≥ 0.9× without … ${ratio >= 0.9 ? "met" : "NOT met"} (${ratio.toFixed(2)})`,
    );
  } finally {
    for (const s of sides) await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
