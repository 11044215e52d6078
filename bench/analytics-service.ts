// Child process of the analytics bench (bench/analytics.ts): one local key service over SQLite or
// PostgreSQL + Redis on a free loopback port, its store wrapped so that writing verification events
// can be switched off (the baseline of "writing events costs verifyKey nothing"). Driven over IPC:
// `events` switches the writes, `stall` answers and resets the longest event-loop stall (and
// what the longest gap of a 1 ms timer held: garbage collection, the process's CPU),
// `sweep` runs the retention (events older than a time) and answers how long it took.
// Sends `{ url, rootKey, apiId, workspaceId }` first. Exits when the parent disconnects.
import { statSync } from "node:fs";
import { constants, monitorEventLoopDelay, PerformanceObserver, type PerformanceEntry } from "node:perf_hooks";
import { silentLogger } from "keyguard";
import { startLocalKeyService } from "keyguard/server";
import type { Storage } from "../src/server/storage/seam";
import { postgresStorage } from "../src/server/storage/postgres/store";
import { sqliteStorage } from "../src/server/storage/sqlite/store";
import { withAppend } from "./storage-wrap";

export type AnalyticsStoreConfig =
  { backend: "sqlite"; file: string } | { backend: "postgres"; postgres: string; redis: string; schema: string };
export type AnalyticsChildRequest = { cmd: "events"; on: boolean } | { cmd: "stall" } | { cmd: "sweep"; before: number };
export type AnalyticsChildReply =
  | { cmd: "events" }
  | { cmd: "stall"; maxMs: number; maxGcMs: number; longest: LongestGap }
  | { cmd: "sweep"; ms: number; deleted: number; maxStallMs: number; stalls: SweepStall[]; stallsOver20Ms: number; maxGcMs: number };

/**
 * The longest gap between two ticks of a 1 ms timer: its wall time, the process's CPU time in it
 * (every thread, the collector's helpers too) and the garbage-collection pauses that began in it.
 */
export interface LongestGap {
  ms: number;
  cpuMs: number;
  gcMs: number;
  majorGcMs: number;
}

/** One of the ten longest event-loop stalls of over 20 ms during a sweep: when (ms into it), how long, and the SQLite WAL's size before and after (MB). */
export interface SweepStall {
  atMs: number;
  ms: number;
  walBeforeMb?: number;
  walAfterMb?: number;
}

const config = JSON.parse(process.env.BENCH_ANALYTICS ?? "{}") as AnalyticsStoreConfig;
const store: Storage =
  config.backend === "sqlite"
    ? await sqliteStorage(config.file)
    : await postgresStorage({ postgres: config.postgres, redis: config.redis, schema: config.schema });
let writing = true;
const switched = withAppend(store, (events) => (writing ? store.appendVerifications(events) : Promise.resolve()));
const service = await startLocalKeyService({ storage: switched, port: 0, logger: silentLogger });
const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
/** The longest garbage-collection pause since the last `stall` request, ms. */
let gcSinceStall = 0;
/** The last thousand pauses: when each began (`performance.now()`), how long, whether major. */
const pauses: Array<{ at: number; ms: number; major: boolean }> = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gcSinceStall = Math.max(gcSinceStall, e.duration);
    const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
    pauses.push({ at: e.startTime, ms: e.duration, major: kind === constants.NODE_PERFORMANCE_GC_MAJOR });
    if (pauses.length > 1000) pauses.shift();
  }
}).observe({ entryTypes: ["gc"] });

const cpuMs = () => {
  const used = process.cpuUsage();
  return (used.user + used.system) / 1000;
};
/** The longest gap of the 1 ms timer since the last `stall` request: from, to, CPU time in it. */
let gap = { from: 0, to: 0, cpuMs: 0 };
let lastTick = performance.now();
let lastCpu = cpuMs();
setInterval(() => {
  const now = performance.now();
  const cpu = cpuMs();
  if (now - lastTick > gap.to - gap.from) gap = { from: lastTick, to: now, cpuMs: cpu - lastCpu };
  lastTick = now;
  lastCpu = cpu;
}, 1).unref();

/** What the longest gap held (the collector reports a pause after it ends: asked for later). */
function takeLongestGap(): LongestGap {
  const within = pauses.filter((p) => p.at >= gap.from && p.at < gap.to);
  const sum = (ps: typeof within) => ps.reduce((total, p) => total + p.ms, 0);
  const longest = { ms: gap.to - gap.from, cpuMs: gap.cpuMs, gcMs: sum(within), majorGcMs: sum(within.filter((p) => p.major)) };
  gap = { from: 0, to: 0, cpuMs: 0 };
  return longest;
}

async function handle(request: AnalyticsChildRequest): Promise<AnalyticsChildReply> {
  switch (request.cmd) {
    case "events":
      writing = request.on;
      return { cmd: "events" };
    case "stall": {
      const maxMs = delay.max / 1e6;
      delay.reset();
      const maxGcMs = gcSinceStall;
      gcSinceStall = 0;
      return { cmd: "stall", maxMs, maxGcMs, longest: takeLongestGap() };
    }
    case "sweep": {
      // Where a long stall comes from: the garbage collector's pauses, and the WAL's size around
      // each stall (a checkpoint on the service's own connection empties it).
      let maxGcMs = 0;
      const gc = new PerformanceObserver((list) => {
        for (const e of list.getEntries()) maxGcMs = Math.max(maxGcMs, e.duration);
      });
      gc.observe({ entryTypes: ["gc"] });
      const wal = () =>
        config.backend === "sqlite" ? (statSync(`${config.file}-wal`, { throwIfNoEntry: false })?.size ?? 0) / 1e6 : undefined;
      const stalls: SweepStall[] = [];
      delay.reset();
      const t = performance.now();
      let last = t;
      let walBefore = wal();
      const tick = setInterval(() => {
        const now = performance.now();
        const walNow = wal();
        if (now - last > 20 && stalls.length < 10_000)
          stalls.push({ atMs: now - t, ms: now - last, walBeforeMb: walBefore, walAfterMb: walNow });
        last = now;
        walBefore = walNow;
      }, 5);
      const deleted = await store.deleteVerificationsBefore(request.before);
      const ms = performance.now() - t;
      clearInterval(tick);
      gc.disconnect();
      const maxStallMs = delay.max / 1e6;
      delay.reset();
      // The ten longest, in the order they came.
      const longest = stalls.sort((a, b) => b.ms - a.ms).slice(0, 10);
      return {
        cmd: "sweep",
        ms,
        deleted,
        maxStallMs,
        stalls: longest.sort((a, b) => a.atMs - b.atMs),
        stallsOver20Ms: stalls.length,
        maxGcMs,
      };
    }
  }
}

process.on("message", (request: AnalyticsChildRequest) => {
  void handle(request).then((reply) => process.send!(reply));
});
process.on("disconnect", () => {
  void service.close().then(() => store.close().then(() => process.exit(0)));
});
process.send!({ url: service.baseUrl, rootKey: service.rootKey, apiId: service.apiId, workspaceId: service.workspaceId });
