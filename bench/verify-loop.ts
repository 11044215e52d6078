// Quick hot-path probe: sequential keys.verifyKey calls on a credits key through fetch on
// loopback against the local key service (memory store). Prints the median of 3 runs: wall time
// and CPU time of this process (client and service both run in it) per call.
// Run: node scripts/build-bench.mjs && node bench/.build/verify-loop.mjs [calls]
import { silentLogger } from "../src/index";
import { startLocalKeyService } from "../src/server";

const CALLS = Number(process.argv[2] ?? 2000);
const svc = await startLocalKeyService({ logger: silentLogger });
const post = async (op: string, body: unknown): Promise<{ data: Record<string, unknown> }> => {
  const res = await fetch(`${svc.baseUrl}/v2/${op}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${svc.rootKey}` },
    body: JSON.stringify(body),
  });
  return (await res.json()) as { data: Record<string, unknown> };
};
const created = await post("keys.createKey", { apiId: svc.apiId, remaining: 1e9 });
const key = created.data.key as string;
for (let i = 0; i < 200; i++) await post("keys.verifyKey", { key });
const wall: number[] = [];
const cpu: number[] = [];
for (let r = 0; r < 3; r++) {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) {
    const out = await post("keys.verifyKey", { key });
    if (out.data.valid !== true) throw new Error(`unexpected verification: ${JSON.stringify(out.data)}`);
  }
  const c = process.cpuUsage(c0);
  cpu.push((c.user + c.system) / 1000 / CALLS);
  wall.push((performance.now() - t0) / CALLS);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[1]!.toFixed(3);
console.log(
  `verifyKey (credits key, memory store), ${CALLS} sequential calls, median of 3: wall ${median(wall)} ms/call, CPU ${median(cpu)} ms/call`,
);
await svc.close();
