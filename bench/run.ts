// `npm run bench`: measures keyguard against baselines in the same run, on loopback only,
// prints every ratio (medians of rounds whose order rotates), the app CPU per request, and a line
// per performance goal: met or not. Writes bench/results/latest.json (BENCH_ONLY=<groups>:
// only those groups, written to bench/results/partial.json).

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { createClient } from "keyguard/client";
import { benchChecksum, type ChecksumBench } from "./checksum";
import { benchAnalytics } from "./analytics";
import { benchFleet } from "./fleet";
import { benchMigration, type MigrationBench } from "./migration";
import { FRAMEWORKS, type FrameworkApps } from "./frameworks";
import { cpuRatioOf, load, median, ratioOf, rotate, type LoadOptions, type LoadResult } from "./load";
import type { StepTimes } from "./step-profile";
import type { AppsConfig, ServiceInfo } from "./servers";
import { BENCH_DIR, BUILT, FROM_SOURCE_NOTE, benchScript } from "./scripts";
import { refusedUrl } from "../test/support/loopback-ports";

const here = BENCH_DIR;
const DURATION = Math.min(Number(process.env.BENCH_DURATION ?? 4), 10);
const ROUNDS = Math.min(Number(process.env.BENCH_ROUNDS ?? 5), 9);
const DEADLINE = 2500;
const children: ChildProcess[] = [];

// On a machine with two or more cores, the apps get a core of their own and the load generator
// (this process) and the key service share another, so the side being measured does not compete
// with autocannon for CPU. Both sides of every comparison run under the same placement.
const PIN = os.cpus().length >= 2 && hasTaskset() && process.env.BENCH_PIN !== "0";

function hasTaskset(): boolean {
  return spawnSync("taskset", ["-p", String(process.pid)], { stdio: "ignore" }).status === 0;
}

async function startChild<T>(mode: string, env: Record<string, string> = {}, core?: number): Promise<T> {
  // BENCH_CPU_PROF=<dir>: the children write V8 CPU profiles there when the run ends.
  const prof = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const script = benchScript("servers");
  return startProcess<T>(mode, process.execPath, [...prof, ...script.execArgv, script.file, mode], env, core);
}

/** Spawns `binary args` (pinned to `core` where the machine allows) and answers the first line it prints, as JSON. */
async function startProcess<T>(label: string, binary: string, args: string[], env: Record<string, string>, core?: number): Promise<T> {
  const [command, argv] = PIN && core !== undefined ? ["taskset", ["-c", String(core), binary, ...args]] : [binary, args];
  const child = spawn(command, argv, {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  const lines = createInterface({ input: child.stdout! });
  const [line] = (await Promise.race([
    once(lines, "line"),
    once(child, "exit").then(() => {
      throw new Error(`bench: the ${label} process exited before it was ready`);
    }),
  ])) as [string];
  return JSON.parse(line) as T;
}

/** An adapter's apps by URL (`header`: the Web apps' read of the Authorization header alone) and its process's CPU. */
interface AdapterApps {
  bare: string;
  noop: string;
  keyguard: string;
  header?: string;
  cpu: string;
}

/** The runtimes that serve the Web adapter in the adapters group, from node_modules/.bin. */
const RUNTIMES = ["bun", "deno"] as const;

/** The adapters group's frameworks and runtimes; BENCH_ADAPTERS=fastify,koa,bun measures some of them. */
const ADAPTERS = (process.env.BENCH_ADAPTERS ?? "")
  .split(",")
  .map((a) => a.trim())
  .filter(Boolean);
for (const a of ADAPTERS)
  if (!([...FRAMEWORKS, ...RUNTIMES] as readonly string[]).includes(a))
    throw new Error(`bench: BENCH_ADAPTERS names ${JSON.stringify(a)}; use some of ${[...FRAMEWORKS, ...RUNTIMES].join(", ")}`);
const measures = (adapter: string) => ADAPTERS.length === 0 || ADAPTERS.includes(adapter);

/**
 * Starts bench/runtime-app on Bun or Deno (on the apps' core) and answers its URLs; undefined, with
 * the reason on stderr, when the runtime is not installed or (Deno) the bench runs from source.
 */
async function startRuntime(
  runtime: (typeof RUNTIMES)[number],
  config: { baseUrl: string; rootKey: string; deadline: number },
): Promise<AdapterApps | undefined> {
  const binary = join(here, "..", "node_modules", ".bin", runtime);
  if (!existsSync(binary)) {
    process.stderr.write(`bench: ${runtime} is not installed (${binary}); its rows are left out\n`);
    return undefined;
  }
  if (runtime === "deno" && !BUILT) {
    process.stderr.write("bench: Deno runs the built bench only (npm run bench); its rows are left out\n");
    return undefined;
  }
  const file = benchScript("runtime-app").file;
  const args =
    runtime === "bun" ? ["run", file] : ["run", "--allow-net=127.0.0.1", "--allow-env", "--no-prompt", "--node-modules-dir=manual", file];
  return startProcess(runtime, binary, args, { BENCH_CONFIG: JSON.stringify(config) }, 1);
}

/** Stops the children started since `from` (their group is over) and waits until they have exited. */
async function stopChildren(from: number): Promise<void> {
  const group = children.splice(from);
  await Promise.all(
    group.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, "exit");
      child.kill();
      await exited;
    }),
  );
}

const onlyOk = (label: string) => (r: LoadResult) => {
  const bad = Object.entries(r.statuses).filter(([code]) => code !== "200");
  if (bad.length > 0 || r.errors > 0) {
    throw new Error(
      `bench: ${label} got answers other than 200 (${JSON.stringify(r.statuses)}, ${r.errors} errors); the figure would be meaningless`,
    );
  }
};

const fmt = (n: number, digits = 2) => n.toFixed(digits);
const round1 = (n: number) => Math.round(n * 10) / 10;

/** Groups of measures; BENCH_ONLY=overhead,adapters,observe,credits,service,metrics,events,down,fleet,checksum,migration,analytics runs some of them. */
const GROUPS = [
  "overhead",
  "adapters",
  "observe",
  "credits",
  "service",
  "metrics",
  "events",
  "down",
  "fleet",
  "checksum",
  "migration",
  "analytics",
] as const;
const ONLY = (process.env.BENCH_ONLY ?? "")
  .split(",")
  .map((g) => g.trim())
  .filter(Boolean);
for (const g of ONLY)
  if (!(GROUPS as readonly string[]).includes(g))
    throw new Error(`bench: BENCH_ONLY names ${JSON.stringify(g)}; use some of ${GROUPS.join(", ")}`);
const runs = (group: (typeof GROUPS)[number]) => ONLY.length === 0 || ONLY.includes(group);

interface Row {
  name: string;
  ratio: number;
  /** The performance goal this ratio is held to, if it has one. */
  goal?: { min: number; text: string };
  detail: string;
}

/** The CPU ratio's spread over rounds (b ÷ a per round, lowest to highest): on a shared machine, what one figure can be trusted to. */
function cpuSpread<K extends string>(runs: Record<K, LoadResult[]>, a: K, b: K): string {
  const each = runs[a].map((r, i) => (runs[b][i]!.cpuPerRequest ?? NaN) / (r.cpuPerRequest ?? NaN));
  return `CPU ratio per round ${fmt(Math.min(...each))}-${fmt(Math.max(...each))}`;
}

const rps = (rs: LoadResult[]) => Math.round(median(rs.map((r) => r.rps)));
const cpu = (rs: LoadResult[]) => Math.round(median(rs.map((r) => r.cpuPerRequest ?? NaN)));

async function main() {
  if (FROM_SOURCE_NOTE) console.warn(FROM_SOURCE_NOTE);
  if (PIN) spawnSync("taskset", ["-cp", "0", String(process.pid)], { stdio: "ignore" });
  const service = await startChild<ServiceInfo>("service", {}, 0);
  const client = createClient({ rootKey: service.rootKey, baseUrl: service.baseUrl, retry: false });
  const repeated = await client.keys.createKey({ apiId: service.apiId, name: "bench-repeated" });
  const credits = await client.keys.createKey({ apiId: service.apiId, name: "bench-credits", credits: { remaining: 1_000_000_000 } });
  const config: AppsConfig = {
    baseUrl: service.baseUrl,
    rootKey: service.rootKey,
    downUrl: await refusedUrl(),
    hangUrl: service.hangUrl,
    deadline: DEADLINE,
  };
  const apps = await startChild<Record<string, string>>("apps", { BENCH_CONFIG: JSON.stringify(config) }, 1);
  const get = (base: string, key?: string): LoadOptions => ({
    url: `${base}/r`,
    cpuUrl: apps.cpu,
    duration: DURATION,
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });

  const rows: Row[] = [];
  let serviceSteps:
    | {
        cpuPerRequestMicros: number;
        samples: number;
        steps: Array<{ step: string; micros: number }>;
        other: Array<{ frame: string; micros: number }>;
      }
    | undefined;
  const add = (row: Row) => {
    rows.push(row);
    process.stderr.write(`  ${row.name}: ${fmt(row.ratio)}\n`);
  };
  // "busy": the app's CPU time per second of load (CPU per request × requests per second); under
  // 100 % the app's core was not what limited the throughput.
  const busy = (rs: LoadResult[]) => Math.round(median(rs.map((r) => ((r.cpuPerRequest ?? NaN) * r.rps) / 1e4)));
  const appCpu = (label: [string, string], a: LoadResult[], b: LoadResult[]) =>
    `${label[0]} ${rps(a)} req/s, ${label[1]} ${rps(b)} req/s; app CPU per request ${cpu(a)} µs vs ${cpu(b)} µs (busy ${busy(a)} % vs ${busy(b)} %)`;

  process.stderr.write(`bench: ${ROUNDS} rounds of ${DURATION}s per side, the order rotating\n`);
  if (runs("overhead")) {
    // One group, so every ratio among these four sides comes from the same rounds. Every side gets
    // the same request, key header included: the unprotected and no-op apps parse it too, so the
    // ratios measure the middleware, not a longer request.
    const r = await rotate(
      {
        plain: get(apps.plain!, repeated.key),
        noop: get(apps.noop!, repeated.key),
        cached: get(apps.keyguard!, repeated.key),
        sdk: get(apps.sdk!, repeated.key),
      },
      ROUNDS,
      onlyOk("overhead"),
    );
    add({
      name: "cached key ÷ unprotected route",
      ratio: ratioOf(r, "cached", "plain"),
      goal: { min: 0.95, text: "cached ≥ 0.95× bare Express" },
      detail: appCpu(["keyguard", "unprotected"], r.cached, r.plain),
    });
    add({
      name: "(reference) a no-op middleware ÷ unprotected route",
      ratio: ratioOf(r, "noop", "plain"),
      detail: appCpu(["no-op", "unprotected"], r.noop, r.plain),
    });
    add({
      name: "cached key ÷ no-op middleware",
      ratio: ratioOf(r, "cached", "noop"),
      goal: { min: 0.98, text: "cached within 2 % of the no-op middleware" },
      detail: appCpu(["keyguard", "no-op"], r.cached, r.noop),
    });
    // The same two ratios from CPU time: what throughput would show with the app's core saturated.
    // Reported beside the goals, not instead of them: on a shared machine, when the app's core is
    // far from busy, the throughput ratio also carries other processes' scheduling.
    add({
      name: "(reference) cached key ÷ unprotected route, by app CPU per request",
      ratio: cpuRatioOf(r, "cached", "plain"),
      detail: "median over rounds of unprotected ÷ keyguard CPU time per request",
    });
    add({
      name: "(reference) cached key ÷ no-op middleware, by app CPU per request",
      ratio: cpuRatioOf(r, "cached", "noop"),
      detail: "median over rounds of no-op ÷ keyguard CPU time per request",
    });
    add({
      name: "keyguard ÷ SDK middleware, repeated key",
      ratio: ratioOf(r, "cached", "sdk"),
      goal: { min: 3, text: "repeated key ≥ 3× the SDK middleware" },
      detail: appCpu(["keyguard", "SDK"], r.cached, r.sdk),
    });
  }

  if (runs("adapters")) {
    // Every framework keyguard adapts to, and Bun and Deno serving the Web adapter: the same route
    // bare, behind the framework's cheapest no-op and behind keyguard (a cached key), all three in
    // one process on the apps' core, compared in alternating rounds of their own. The goal is
    // judged by CPU per request (keyguard ÷ no-op, and for Express keyguard ÷ bare), throughput beside it.
    const frameworks = await startChild<FrameworkApps & { cpu: string }>(
      "frameworks",
      { BENCH_CONFIG: JSON.stringify({ baseUrl: config.baseUrl, rootKey: config.rootKey, deadline: DEADLINE }) },
      1,
    );
    const on = (url: string, cpuUrl: string): LoadOptions => ({ ...get(url, repeated.key), cpuUrl });
    const measured: Array<{ name: string; apps: AdapterApps }> = FRAMEWORKS.filter(measures).map((name) => ({
      name,
      apps: {
        bare: frameworks[name],
        noop: frameworks[`${name}+noop`],
        keyguard: frameworks[`${name}+keyguard`],
        cpu: frameworks.cpu,
        ...(name === "web" && { header: frameworks["web+header"] }),
      },
    }));
    for (const runtime of RUNTIMES.filter(measures)) {
      const apps = await startRuntime(runtime, { baseUrl: config.baseUrl, rootKey: config.rootKey, deadline: DEADLINE });
      if (apps !== undefined) measured.push({ name: `${runtime} (web)`, apps });
    }
    for (const { name, apps: a } of measured) {
      const sides = { cached: on(a.keyguard, a.cpu), noop: on(a.noop, a.cpu), bare: on(a.bare, a.cpu) };
      // The Web apps also read the Authorization header alone (a 401 without one): what the runtime charges for the header.
      const r: Record<keyof typeof sides, LoadResult[]> & { header?: LoadResult[] } =
        a.header === undefined
          ? await rotate(sides, ROUNDS, onlyOk(name))
          : await rotate({ ...sides, header: on(a.header, a.cpu) }, ROUNDS, onlyOk(name));
      add({
        name: `${name}: cached key ÷ the framework's no-op, by CPU per request`,
        ratio: cpuRatioOf(r, "cached", "noop"),
        goal: { min: 0.97, text: `${name}: cached key ≥ 0.97× the no-op by CPU per request` },
        detail: `${cpuSpread(r, "cached", "noop")}; throughput ratio ${fmt(ratioOf(r, "cached", "noop"))}; ${appCpu(["keyguard", "no-op"], r.cached, r.noop)}`,
      });
      add({
        name: `${name}: cached key ÷ the bare app, by CPU per request`,
        ratio: cpuRatioOf(r, "cached", "bare"),
        ...(name === "express" && { goal: { min: 0.95, text: "express: cached key ≥ 0.95× the bare app by CPU per request" } }),
        detail: `${cpuSpread(r, "cached", "bare")}; throughput ratio ${fmt(ratioOf(r, "cached", "bare"))}; ${appCpu(["keyguard", "bare"], r.cached, r.bare)}`,
      });
      add({
        name: `(reference) ${name}: the no-op ÷ the bare app, by CPU per request`,
        ratio: cpuRatioOf(r, "noop", "bare"),
        detail: `${cpuSpread(r, "noop", "bare")}; throughput ratio ${fmt(ratioOf(r, "noop", "bare"))}`,
      });
      if (r.header === undefined) continue;
      const header = { header: r.header, cached: r.cached, noop: r.noop };
      add({
        name: `(reference) ${name}: reading the Authorization header alone ÷ the no-op, by CPU per request`,
        ratio: cpuRatioOf(header, "header", "noop"),
        detail: `${cpuSpread(header, "header", "noop")}; ${appCpu(["header read", "no-op"], header.header, header.noop)}`,
      });
      add({
        name: `(reference) ${name}: cached key ÷ reading the Authorization header alone, by CPU per request`,
        ratio: cpuRatioOf(header, "cached", "header"),
        detail: `${cpuSpread(header, "cached", "header")}; ${appCpu(["keyguard", "header read"], header.cached, header.header)}`,
      });
    }
  }

  if (runs("observe")) {
    // The cached key with onDecision and OpenTelemetry on against the same app with them off, and
    // a second app with them off: the spread two identical sides show in the same rounds.
    const r = await rotate(
      {
        on: get(apps.keyguardObserved!, repeated.key),
        off: get(apps.keyguard!, repeated.key),
        twin: get(apps.keyguardTwin!, repeated.key),
      },
      ROUNDS,
      onlyOk("observe"),
    );
    add({
      name: "cached key, onDecision + OpenTelemetry on ÷ off",
      ratio: ratioOf(r, "on", "off"),
      goal: { min: 0.98, text: "cached key with onDecision + OpenTelemetry within 2 % of off" },
      detail: appCpu(["on", "off"], r.on, r.off),
    });
    // App CPU per request, which other load on the machine disturbs less than throughput.
    add({
      name: "cached key, app CPU per request: off ÷ onDecision + OpenTelemetry on",
      ratio: cpuRatioOf(r, "on", "off"),
      goal: { min: 0.98, text: "cached key with onDecision + OpenTelemetry: app CPU per request within 2 % of off" },
      detail: appCpu(["on", "off"], r.on, r.off),
    });
    add({
      name: "(reference) cached key, off ÷ an identical app (throughput; CPU per request)",
      ratio: ratioOf(r, "twin", "off"),
      detail: `CPU ratio ${fmt(cpuRatioOf(r, "twin", "off"))}; ${appCpu(["identical app", "off"], r.twin, r.off)}`,
    });
  }

  if (runs("credits")) {
    const r = await rotate({ keyguard: get(apps.keyguard!, credits.key), sdk: get(apps.sdk!, credits.key) }, ROUNDS, onlyOk("credits key"));
    add({
      name: "keyguard ÷ SDK middleware, credits key",
      ratio: ratioOf(r, "keyguard", "sdk"),
      goal: { min: 2.5, text: "credits key ≥ 2.5× the SDK middleware" },
      detail: appCpu(["keyguard", "SDK"], r.keyguard, r.sdk),
    });
  }

  if (runs("service")) {
    // A service process of its own on the apps' core (idle meanwhile), the load generator on the other.
    const own = await startChild<ServiceInfo>("service", {}, 1);
    const key = (await createClient({ rootKey: own.rootKey, baseUrl: own.baseUrl, retry: false }).keys.createKey({ apiId: own.apiId })).key;
    const post = (url: string, headers: Record<string, string>): LoadOptions => ({
      url,
      method: "POST",
      cpuUrl: own.cpu,
      duration: DURATION,
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ key }),
    });
    const verify = post(`${own.baseUrl}/v2/keys.verifyKey`, { authorization: `Bearer ${own.rootKey}` });
    const r = await rotate(
      { service: verify, bare: post(`${own.bareUrl}/json`, {}), bareHttp: post(`${own.bareHttpUrl}/verify`, {}) },
      ROUNDS,
      onlyOk("local service"),
    );
    add({
      name: "local service verifyKey ÷ bare Express JSON route",
      ratio: ratioOf(r, "service", "bare"),
      goal: { min: 1.5, text: "service verifyKey ≥ 1.5× a bare Express JSON route" },
      detail: `verifyKey ${rps(r.service)} req/s, bare route ${rps(r.bare)} req/s; service CPU per request ${cpu(r.service)} µs vs ${cpu(r.bare)} µs`,
    });
    // Judged by CPU per request: the service's core is seldom saturated on a shared machine, so the
    // throughput ratio also carries the load generator's scheduling (reported beside it).
    add({
      name: "local service verifyKey ÷ bare node:http JSON server (memory store), by CPU per request",
      ratio: cpuRatioOf(r, "service", "bareHttp"),
      goal: { min: 0.6, text: "service verifyKey ≥ 0.6× a bare node:http server answering a verify-shaped JSON, by CPU per request" },
      detail: `${cpuSpread(r, "service", "bareHttp")}; service CPU per request ${cpu(r.service)} µs vs ${cpu(r.bareHttp)} µs`,
    });
    add({
      name: "(reference) local service verifyKey ÷ bare node:http JSON server (memory store), by throughput",
      ratio: ratioOf(r, "service", "bareHttp"),
      detail: `verifyKey ${rps(r.service)} req/s, bare node:http ${rps(r.bareHttp)} req/s`,
    });
    // Where the service's microseconds go: one more run of the same load under a CPU profile.
    await fetch(`${own.profileUrl}/start`, { method: "POST" });
    const profiled = await load(verify);
    const steps = (await (await fetch(`${own.profileUrl}/stop`, { method: "POST" })).json()) as StepTimes;
    const requests = Math.max(1, profiled.requests);
    serviceSteps = {
      cpuPerRequestMicros: Math.round(profiled.cpuPerRequest ?? NaN),
      samples: steps.samples,
      steps: Object.entries(steps.micros).map(([step, micros]) => ({ step, micros: round1(micros / requests) })),
      other: steps.other.map((o) => ({ frame: o.frame, micros: round1(o.micros / requests) })),
    };
  }

  if (runs("metrics")) {
    // Two service processes on the apps' core (one idle while the other is measured), metrics on and off.
    const verifyKeyOn = async (info: ServiceInfo): Promise<LoadOptions> => {
      const key = (await createClient({ rootKey: info.rootKey, baseUrl: info.baseUrl, retry: false }).keys.createKey({ apiId: info.apiId }))
        .key;
      return {
        url: `${info.baseUrl}/v2/keys.verifyKey`,
        method: "POST",
        cpuUrl: info.cpu,
        duration: DURATION,
        headers: { "content-type": "application/json", authorization: `Bearer ${info.rootKey}` },
        body: JSON.stringify({ key }),
      };
    };
    const on = await startChild<ServiceInfo>("service", { BENCH_METRICS: "1" }, 1);
    const off = await startChild<ServiceInfo>("service", {}, 1);
    const r = await rotate({ on: await verifyKeyOn(on), off: await verifyKeyOn(off) }, ROUNDS, onlyOk("local service with metrics"));
    // The side said to have metrics did count the calls.
    const scraped = await (await fetch(`${on.baseUrl}/metrics`)).text();
    if (!/^keyguard_verifications_total\{code="VALID"\} [1-9]/m.test(scraped))
      throw new Error("bench: the service with metrics on did not count its verifications");
    add({
      name: "local service verifyKey, metrics on ÷ off",
      ratio: ratioOf(r, "on", "off"),
      detail: `on ${rps(r.on)} req/s, off ${rps(r.off)} req/s; service CPU per request ${cpu(r.on)} µs vs ${cpu(r.off)} µs`,
    });
  }

  if (runs("events")) {
    // Two service processes on SQLite, on the apps' core (idle meanwhile): one writes verification
    // events (batched every second), the other's store drops them; the same tagged verifyKey on both.
    const dir = mkdtempSync(join(os.tmpdir(), "keyguard-bench-events-"));
    const first = children.length;
    try {
      const sides = {
        recorded: { BENCH_SERVICE_DATA: join(dir, "recorded.db") },
        dropped: { BENCH_SERVICE_DATA: join(dir, "dropped.db"), BENCH_EVENTS: "off" },
      };
      const post = async (env: Record<string, string>): Promise<LoadOptions> => {
        const own = await startChild<ServiceInfo>("service", env, 1);
        const key = (await createClient({ rootKey: own.rootKey, baseUrl: own.baseUrl, retry: false }).keys.createKey({ apiId: own.apiId }))
          .key;
        return {
          url: `${own.baseUrl}/v2/keys.verifyKey`,
          method: "POST",
          cpuUrl: own.cpu,
          duration: DURATION,
          headers: { "content-type": "application/json", authorization: `Bearer ${own.rootKey}` },
          body: JSON.stringify({ key, tags: ["path=/r", "method=GET"] }),
        };
      };
      const r = await rotate(
        { recorded: await post(sides.recorded), dropped: await post(sides.dropped) },
        ROUNDS,
        onlyOk("verification events"),
      );
      add({
        name: "verifyKey with verification events ÷ events dropped at the store (SQLite)",
        ratio: ratioOf(r, "recorded", "dropped"),
        goal: { min: 0.95, text: "verifyKey with verification events ≥ 0.95× without" },
        detail: `with events ${rps(r.recorded)} req/s, without ${rps(r.dropped)} req/s; service CPU per request ${cpu(r.recorded)} µs vs ${cpu(r.dropped)} µs`,
      });
    } finally {
      // Their files go with the group: the services go first (else they report the store lost).
      await stopChildren(first);
      rmSync(dir, { recursive: true, force: true });
    }
  }

  let down: Record<"keyguard" | "sdk" | "keyguardHang", LoadResult> | undefined;
  if (runs("down")) {
    process.stderr.write("bench: key service down (connection refused) and hanging\n");
    down = {
      keyguard: await load({
        url: `${apps.keyguardDown}/r`,
        amount: 200,
        connections: 10,
        headers: { authorization: `Bearer ${repeated.key}` },
      }),
      sdk: await load({
        url: `${apps.sdkDown}/r`,
        amount: 20,
        connections: 10,
        timeout: 30,
        headers: { authorization: `Bearer ${repeated.key}` },
      }),
      keyguardHang: await load({
        url: `${apps.keyguardHang}/r`,
        amount: 40,
        connections: 10,
        headers: { authorization: `Bearer ${repeated.key}` },
      }),
    };
  }

  let fleet: Awaited<ReturnType<typeof benchFleet>> | undefined;
  if (runs("fleet")) {
    process.stderr.write("bench: fleet (4 app processes on one Redis)\n");
    fleet = await benchFleet(service, children);
  }

  let checksum: ChecksumBench | undefined;
  if (runs("checksum")) {
    process.stderr.write("bench: 100,000 random keys of the checksummed format, against a valid cached key\n");
    checksum = await benchChecksum(startChild, config);
  }
  let migration: MigrationBench | undefined;
  if (runs("migration")) {
    process.stderr.write("bench: the first request of keys still at an old key service (apiKeyAuth migrateFrom)\n");
    migration = await benchMigration();
  }
  // Its own services (SQLite, PostgreSQL + Redis), with millions of events: bench/analytics.ts.
  const analytics = runs("analytics") ? await benchAnalytics() : undefined;

  const machine =
    `${os.cpus()[0]?.model ?? "unknown CPU"}, ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}` +
    (PIN
      ? "; apps and the measured key service pinned to core 1, load generator and the middleware's key service to core 0"
      : "; no core pinning");
  const goals = rows.filter((r) => r.goal).map((r) => ({ goal: r.goal!.text, ratio: r.ratio, met: r.ratio >= r.goal!.min }));
  if (down) {
    const p99 = Math.max(down.keyguard.p99, down.keyguardHang.p99);
    goals.push({
      goal: `keyguard answers within its ${DEADLINE} ms deadline when the key service is down (p99, ms)`,
      ratio: p99,
      met: p99 <= DEADLINE,
    });
  }
  if (fleet !== undefined && typeof fleet !== "string") {
    goals.push({
      goal: "fleet invalidation seen by all instances within 100 ms (p99, ms)",
      ratio: fleet.propagation.p99Ms,
      met: fleet.propagation.p99Ms <= 100,
    });
  }
  if (checksum !== undefined) {
    const all401 = Object.keys(checksum.garbageStatuses).every((code) => code === "401");
    goals.push({
      goal: `${checksum.garbageKeys} garbage keys of the checksummed format: every one 401, no service call (calls)`,
      ratio: checksum.serviceCalls,
      met: checksum.serviceCalls === 0 && all401,
    });
  }
  if (migration !== undefined) {
    goals.push({
      goal: `${migration.keys} migrated keys: their later requests make no call to the old key service (calls)`,
      ratio: migration.laterOldCalls,
      met: migration.laterOldCalls === 0 && Object.keys(migration.statuses).every((code) => code === "200"),
    });
  }
  for (const g of analytics?.goals ?? []) goals.push({ goal: g.goal, ratio: g.value, met: g.met });
  const results = {
    date: new Date().toISOString(),
    machine,
    rounds: ROUNDS,
    durationSeconds: DURATION,
    ratios: rows,
    goals,
    ...(down && {
      down: {
        deadlineMs: DEADLINE,
        keyguardRefused: { p50: down.keyguard.p50, p99: down.keyguard.p99, statuses: down.keyguard.statuses },
        sdkRefused: { p50: down.sdk.p50, p99: down.sdk.p99, statuses: down.sdk.statuses },
        keyguardHanging: { p50: down.keyguardHang.p50, p99: down.keyguardHang.p99, statuses: down.keyguardHang.statuses },
      },
    }),
    ...(fleet !== undefined && { fleet }),
    ...(serviceSteps && { serviceSteps }),
    ...(checksum !== undefined && { checksum }),
    ...(migration !== undefined && { migration }),
    ...(analytics !== undefined && { analytics: analytics.lines }),
  };
  mkdirSync(`${here}results`, { recursive: true });
  writeFileSync(`${here}results/${ONLY.length === 0 ? "latest" : "partial"}.json`, `${JSON.stringify(results, null, 2)}\n`);

  const lines = [
    `keyguard benchmarks, ${results.date.slice(0, 10)}, ${machine}`,
    `(median of ${ROUNDS} rounds of ${DURATION} s per side, the order rotating, 10 connections, loopback)`,
    "",
    "| measure | ratio | goal | |",
    "|---|---|---|---|",
    ...rows.map((r) => `| ${r.name} | ${fmt(r.ratio)} | ${r.goal ? `≥ ${fmt(r.goal.min)}` : "(reported)"} | ${r.detail} |`),
  ];
  if (down) {
    lines.push(
      "",
      `| key service down | p50 | p99 | answers |`,
      "|---|---|---|---|",
      `| keyguard, connection refused (deadline ${DEADLINE} ms) | ${down.keyguard.p50} ms | ${down.keyguard.p99} ms | ${JSON.stringify(down.keyguard.statuses)} |`,
      `| keyguard, service hanging | ${down.keyguardHang.p50} ms | ${down.keyguardHang.p99} ms | ${JSON.stringify(down.keyguardHang.statuses)} |`,
      `| SDK middleware, connection refused | ${down.sdk.p50} ms | ${down.sdk.p99} ms | ${JSON.stringify(down.sdk.statuses)} |`,
    );
  }
  if (serviceSteps) {
    lines.push(
      "",
      `| where the service's time goes (verifyKey, memory store; a profiled run: ${serviceSteps.cpuPerRequestMicros} µs of CPU per request, ${serviceSteps.samples} samples) | µs per request (sampled, busy time) |`,
      "|---|---|",
      ...serviceSteps.steps.map((s) => `| ${s.step} | ${s.micros.toFixed(1)} |`),
      `(runtime and other, most sampled: ${serviceSteps.other.map((o) => `${o.frame} ${o.micros.toFixed(1)}`).join(", ")})`,
    );
  }
  if (typeof fleet === "string") lines.push("", `fleet: ${fleet}`);
  else if (fleet !== undefined) {
    lines.push(
      "",
      `| fleet of ${fleet.instances} app processes on one Redis | measured |`,
      "|---|---|",
      `| invalidation seen by all ${fleet.instances}, ${fleet.propagation.rounds} rounds | p50 ${fleet.propagation.p50Ms} ms, p99 ${fleet.propagation.p99Ms} ms, max ${fleet.propagation.maxMs} ms |`,
      `| one hot key, ${fleet.hotKey.seconds} s of load on all ${fleet.instances}, cache ttl ${fleet.hotKey.ttlMs} ms | ${fleet.hotKey.serviceCalls} verifyKey calls for ${fleet.hotKey.requests} requests: ${fleet.hotKey.callsPerTtl} calls per TTL (${JSON.stringify(fleet.hotKey.statuses)}) |`,
    );
  }
  if (checksum !== undefined) {
    lines.push(
      "",
      "| garbage keys through apiKeyAuth() | measured |",
      "|---|---|",
      `| ${checksum.garbageKeys} random keys of the checksummed format, ${JSON.stringify(checksum.garbageStatuses)} | ${checksum.serviceCalls} verifyKey calls; ${checksum.garbageRps} req/s against ${checksum.cachedRps} req/s for a valid cached key (garbage ÷ cached ${fmt(checksum.ratio)}) |`,
      `| a valid cached key, checksummed (checked per request) ÷ plain | ${checksum.cachedRps} ÷ ${checksum.plainRps} req/s (${fmt(checksum.checkedRatio)}) |`,
    );
  }
  if (migration !== undefined) {
    const calls = (c: Record<string, number>) =>
      Object.entries(c)
        .map(([op, n]) => `${n} ${op}`)
        .join(", ");
    lines.push(
      "",
      "| keys still at the old key service (apiKeyAuth migrateFrom, credits keys) | p50 | p99 | calls per request |",
      "|---|---|---|---|",
      `| first request of each of ${migration.keys} keys (import included) | ${migration.first.p50} ms | ${migration.first.p99} ms | old: ${calls(migration.firstCalls.old)}; keyguard: ${calls(migration.firstCalls.keyguard)} |`,
      `| later requests of the same keys | ${migration.later.p50} ms | ${migration.later.p99} ms | old: ${migration.laterOldCalls} in all |`,
      `| added by the import (first − later p50) | ${migration.added.p50} ms | ${migration.added.p99} ms | |`,
    );
  }
  if (analytics) lines.push("", ...analytics.lines);
  lines.push(
    "",
    ...goals.map((g) => `goal: ${g.goal} … ${g.met ? "met" : "NOT met"} (${Number.isInteger(g.ratio) ? g.ratio : fmt(g.ratio)})`),
  );
  process.stdout.write(`${lines.join("\n")}\n`);
}

main()
  .catch((error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  })
  .finally(() => {
    for (const child of children) child.kill();
  });
