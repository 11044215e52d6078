// `npm run bench:transport`: the client's two transports against the local key service, on
// loopback: undici's `request()` on a keep-alive pool (the default) and Node's `fetch` (the `fetch`
// option). Measures the client process's CPU time per verifyKey call and its calls per second,
// in alternating bounded rounds, and prints the medians. Writes bench/results/transport.json.

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { createInterface } from "node:readline";
import { createClient, type KeyServiceClient } from "keyguard/client";
import { silentLogger } from "keyguard";
import { median } from "./load";
import type { ServiceInfo } from "./servers";
import { BENCH_DIR, benchScript } from "./scripts";

const here = BENCH_DIR;
const CALLS = Math.min(Number(process.env.BENCH_CALLS ?? 4000), 20_000);
const ROUNDS = Math.min(Number(process.env.BENCH_ROUNDS ?? 5), 9);
const CONCURRENCY = Math.min(Number(process.env.BENCH_CONCURRENCY ?? 10), 100);
const WARMUP = 1000;
// With two or more cores, the service runs on core 0 and this process (the client) on core 1.
const PIN =
  os.cpus().length >= 2 &&
  spawnSync("taskset", ["-p", String(process.pid)], { stdio: "ignore" }).status === 0 &&
  process.env.BENCH_PIN !== "0";

interface Round {
  callsPerSecond: number;
  cpuMicrosPerCall: number;
}

async function startService(): Promise<{ child: ChildProcess; info: ServiceInfo }> {
  const script = benchScript("servers");
  const args = [...script.execArgv, script.file, "service"];
  const [command, argv] = PIN ? ["taskset", ["-c", "0", process.execPath, ...args]] : [process.execPath, args];
  const child = spawn(command, argv, { stdio: ["ignore", "pipe", "inherit"] });
  const [line] = (await Promise.race([
    once(createInterface({ input: child.stdout! }), "line"),
    once(child, "exit").then(() => {
      throw new Error("bench: the key service exited before it was ready");
    }),
  ])) as [string];
  return { child, info: JSON.parse(line) as ServiceInfo };
}

/** `calls` verifyKey calls, `CONCURRENCY` in flight; the client process's CPU time and wall time. */
async function run(client: KeyServiceClient, key: string, calls: number): Promise<Round> {
  let started = 0;
  const worker = async () => {
    while (started < calls) {
      started++;
      const result = await client.keys.verifyKey({ key });
      if (!result.valid) throw new Error(`bench: the key did not verify (${result.code})`);
    }
  };
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = (performance.now() - t0) / 1000;
  const used = process.cpuUsage(cpu);
  return { callsPerSecond: calls / seconds, cpuMicrosPerCall: (used.user + used.system) / calls };
}

async function main(): Promise<void> {
  if (PIN) spawnSync("taskset", ["-cp", "1", String(process.pid)], { stdio: "ignore" });
  const { child, info } = await startService();
  try {
    const common = { rootKey: info.rootKey, baseUrl: info.baseUrl, logger: silentLogger, retry: false as const };
    const clients: Record<string, KeyServiceClient> = {
      undici: createClient(common),
      fetch: createClient({ ...common, fetch: globalThis.fetch }),
    };
    const { key } = await clients.undici!.keys.createKey({ apiId: info.apiId });
    for (const client of Object.values(clients)) await run(client, key, WARMUP);

    const rounds: Record<string, Round[]> = { undici: [], fetch: [] };
    for (let r = 0; r < ROUNDS; r++) {
      // Alternate which side goes first, so drift in the machine's load hits both alike.
      const order = r % 2 === 0 ? ["undici", "fetch"] : ["fetch", "undici"];
      for (const name of order) rounds[name]!.push(await run(clients[name]!, key, CALLS));
    }

    const summary = Object.fromEntries(
      Object.entries(rounds).map(([name, rs]) => [
        name,
        { callsPerSecond: median(rs.map((x) => x.callsPerSecond)), cpuMicrosPerCall: median(rs.map((x) => x.cpuMicrosPerCall)) },
      ]),
    ) as Record<"undici" | "fetch", Round>;
    const cpuRatio = summary.fetch.cpuMicrosPerCall / summary.undici.cpuMicrosPerCall;
    const rateRatio = summary.undici.callsPerSecond / summary.fetch.callsPerSecond;

    const cpus = os.cpus();
    const setup = `${new Date().toISOString().slice(0, 10)}, ${cpus[0]?.model.trim() ?? "unknown CPU"}, ${cpus.length} cores, Node ${process.version}${PIN ? "; client pinned to core 1, key service to core 0" : ""}`;
    console.log(`Client transports against the local key service (keys.verifyKey), ${setup}`);
    console.log(`median of ${ROUNDS} alternating rounds of ${CALLS} calls per side, ${CONCURRENCY} in flight, loopback\n`);
    console.log("| transport | client CPU per call | calls/s |");
    console.log("|---|---|---|");
    for (const [name, s] of Object.entries(summary)) {
      console.log(
        `| ${name === "undici" ? "undici `request()`, keep-alive pool (default)" : "`fetch` (option)"} | ${s.cpuMicrosPerCall.toFixed(0)} µs | ${s.callsPerSecond.toFixed(0)} |`,
      );
    }
    console.log(`\nfetch ÷ undici, CPU per call: ${cpuRatio.toFixed(2)}; undici ÷ fetch, calls/s: ${rateRatio.toFixed(2)}`);

    mkdirSync(`${here}results`, { recursive: true });
    writeFileSync(
      `${here}results/transport.json`,
      `${JSON.stringify({ setup, calls: CALLS, rounds: ROUNDS, concurrency: CONCURRENCY, summary, perRound: rounds, cpuRatio, rateRatio }, null, 2)}\n`,
    );
  } finally {
    child.kill();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
