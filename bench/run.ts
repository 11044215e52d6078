// `npm run bench`: measures keyguard against baselines in the same run, on loopback only,
// and prints ratios (medians of alternating rounds). Writes bench/results/latest.json.

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createClient } from "keyguard/client";
import { benchFleet } from "./fleet";
import { compare, load, median, type LoadOptions, type LoadResult } from "./load";
import type { AppsConfig, ServiceInfo } from "./servers";

const here = fileURLToPath(new URL(".", import.meta.url));
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
  const args = ["--import", "tsx", `${here}servers.ts`, mode];
  const [command, argv] = PIN && core !== undefined ? ["taskset", ["-c", String(core), process.execPath, ...args]] : [process.execPath, args];
  const child = spawn(command, argv, {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  const lines = createInterface({ input: child.stdout! });
  const [line] = (await Promise.race([
    once(lines, "line"),
    once(child, "exit").then(() => {
      throw new Error(`bench: the ${mode} process exited before it was ready`);
    }),
  ])) as [string];
  return JSON.parse(line) as T;
}

async function refusedUrl(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

const onlyOk = (label: string) => (r: LoadResult) => {
  const bad = Object.entries(r.statuses).filter(([code]) => code !== "200");
  if (bad.length > 0 || r.errors > 0) {
    throw new Error(`bench: ${label} got answers other than 200 (${JSON.stringify(r.statuses)}, ${r.errors} errors); the figure would be meaningless`);
  }
};

const fmt = (n: number, digits = 2) => n.toFixed(digits);

async function main() {
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

  const rows: Array<{ name: string; ratio: number; target: string; pass: boolean; detail: string }> = [];
  const record = (name: string, ratio: number, target: number, a: LoadResult[], b: LoadResult[], labels: [string, string]) => {
    const med = (rs: LoadResult[]) => median(rs.map((r) => r.rps));
    const cpu = (rs: LoadResult[]) => median(rs.map((r) => r.cpuPerRequest ?? NaN));
    rows.push({
      name,
      ratio,
      target: `≥ ${target.toFixed(2)}`,
      pass: ratio >= target,
      detail:
        `${labels[0]} ${Math.round(med(a))} req/s, ${labels[1]} ${Math.round(med(b))} req/s; ` +
        `app CPU per request ${Math.round(cpu(a))} µs vs ${Math.round(cpu(b))} µs`,
    });
    process.stderr.write(`  ${name}: ${fmt(ratio)}\n`);
  };

  process.stderr.write(`bench: ${ROUNDS} rounds of ${DURATION}s per side, alternating\n`);
  const overhead = await compare(get(apps.keyguard!, repeated.key), get(apps.plain!), ROUNDS, onlyOk("overhead"));
  record("cached key ÷ unprotected route", overhead.ratio, 0.9, overhead.a, overhead.b, ["keyguard", "unprotected"]);

  const noop = await compare(get(apps.noop!), get(apps.plain!), ROUNDS, onlyOk("no-op middleware"));
  record("(reference) a no-op middleware ÷ unprotected route", noop.ratio, 0, noop.a, noop.b, ["no-op", "unprotected"]);
  rows.at(-1)!.target = "(reported)";

  const rep = await compare(get(apps.keyguard!, repeated.key), get(apps.sdk!, repeated.key), ROUNDS, onlyOk("repeated key"));
  record("keyguard ÷ SDK middleware, repeated key", rep.ratio, 3, rep.a, rep.b, ["keyguard", "SDK"]);

  const cred = await compare(get(apps.keyguard!, credits.key), get(apps.sdk!, credits.key), ROUNDS, onlyOk("credits key"));
  record("keyguard ÷ SDK middleware, credits key", cred.ratio, 1, cred.a, cred.b, ["keyguard", "SDK"]);

  const post = (url: string, headers: Record<string, string>): LoadOptions => ({
    url,
    method: "POST",
    duration: DURATION,
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ key: repeated.key }),
  });
  const svc = await compare(
    post(`${service.baseUrl}/v2/keys.verifyKey`, { authorization: `Bearer ${service.rootKey}` }),
    post(`${service.bareUrl}/json`, {}),
    ROUNDS,
    onlyOk("local service"),
  );
  rows.push({
    name: "local service verifyKey ÷ bare Express JSON route",
    ratio: svc.ratio,
    target: "(reported)",
    pass: true,
    detail: `verifyKey ${Math.round(median(svc.a.map((r) => r.rps)))} req/s, bare route ${Math.round(median(svc.b.map((r) => r.rps)))} req/s`,
  });
  process.stderr.write(`  local service: ${fmt(svc.ratio)}\n`);

  process.stderr.write("bench: key service down (connection refused) and hanging\n");
  const down = {
    keyguard: await load({ url: `${apps.keyguardDown}/r`, amount: 200, connections: 10, headers: { authorization: `Bearer ${repeated.key}` } }),
    sdk: await load({ url: `${apps.sdkDown}/r`, amount: 20, connections: 10, timeout: 30, headers: { authorization: `Bearer ${repeated.key}` } }),
    keyguardHang: await load({ url: `${apps.keyguardHang}/r`, amount: 40, connections: 10, headers: { authorization: `Bearer ${repeated.key}` } }),
  };

  process.stderr.write("bench: fleet (4 app processes on one Redis)\n");
  const fleet = await benchFleet(service, children);

  const machine =
    `${os.cpus()[0]?.model ?? "unknown CPU"}, ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}` +
    (PIN ? "; apps pinned to core 1, load generator and key service to core 0" : "; no core pinning");
  const results = {
    date: new Date().toISOString(),
    machine,
    rounds: ROUNDS,
    durationSeconds: DURATION,
    ratios: rows,
    down: {
      deadlineMs: DEADLINE,
      keyguardRefused: { p50: down.keyguard.p50, p99: down.keyguard.p99, statuses: down.keyguard.statuses },
      sdkRefused: { p50: down.sdk.p50, p99: down.sdk.p99, statuses: down.sdk.statuses },
      keyguardHanging: { p50: down.keyguardHang.p50, p99: down.keyguardHang.p99, statuses: down.keyguardHang.statuses },
    },
    fleet,
  };
  mkdirSync(`${here}results`, { recursive: true });
  writeFileSync(`${here}results/latest.json`, `${JSON.stringify(results, null, 2)}\n`);

  const lines = [
    `keyguard benchmarks, ${results.date.slice(0, 10)}, ${machine}`,
    `(median of ${ROUNDS} alternating rounds of ${DURATION} s per side, 10 connections, loopback)`,
    "",
    "| measure | ratio | target | |",
    "|---|---|---|---|",
    ...rows.map((r) => `| ${r.name} | ${fmt(r.ratio)} | ${r.target} | ${r.detail} |`),
    "",
    `| key service down | p50 | p99 | answers |`,
    "|---|---|---|---|",
    `| keyguard, connection refused (deadline ${DEADLINE} ms) | ${down.keyguard.p50} ms | ${down.keyguard.p99} ms | ${JSON.stringify(down.keyguard.statuses)} |`,
    `| keyguard, service hanging | ${down.keyguardHang.p50} ms | ${down.keyguardHang.p99} ms | ${JSON.stringify(down.keyguardHang.statuses)} |`,
    `| SDK middleware, connection refused | ${down.sdk.p50} ms | ${down.sdk.p99} ms | ${JSON.stringify(down.sdk.statuses)} |`,
    "",
    ...(typeof fleet === "string"
      ? [`fleet: ${fleet}`]
      : [
          `| fleet of ${fleet.instances} app processes on one Redis | measured |`,
          "|---|---|",
          `| invalidation seen by all ${fleet.instances}, ${fleet.propagation.rounds} rounds | p50 ${fleet.propagation.p50Ms} ms, p99 ${fleet.propagation.p99Ms} ms, max ${fleet.propagation.maxMs} ms |`,
          `| one hot key, ${fleet.hotKey.seconds} s of load on all ${fleet.instances}, cache ttl ${fleet.hotKey.ttlMs} ms | ${fleet.hotKey.serviceCalls} verifyKey calls for ${fleet.hotKey.requests} requests: ${fleet.hotKey.callsPerTtl} calls per TTL (${JSON.stringify(fleet.hotKey.statuses)}) |`,
        ]),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  const failed = rows.filter((r) => !r.pass);
  if (down.keyguard.p99 > DEADLINE || down.keyguardHang.p99 > DEADLINE) failed.push({ name: "down p99 within deadline" } as (typeof rows)[number]);
  if (typeof fleet !== "string" && fleet.propagation.p99Ms > 100) failed.push({ name: "fleet propagation p99 within 100 ms" } as (typeof rows)[number]);
  if (failed.length > 0) process.stdout.write(`\nbelow target: ${failed.map((r) => r.name).join("; ")}\n`);
}

main()
  .catch((error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  })
  .finally(() => {
    for (const child of children) child.kill();
  });
