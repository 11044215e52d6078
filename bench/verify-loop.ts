// Quick hot-path probe: sequential keys.verifyKey calls on a credits key through fetch on
// loopback against the local key service (memory store). Prints the median of 3 runs.
// Run: npx tsx bench/verify-loop.ts [calls]
import { silentLogger } from "../src/index";
import { startLocalKeyService } from "../src/local";

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
const runs: number[] = [];
for (let r = 0; r < 3; r++) {
  const t0 = performance.now();
  for (let i = 0; i < CALLS; i++) {
    const out = await post("keys.verifyKey", { key });
    if (out.data.valid !== true) throw new Error(`unexpected verification: ${JSON.stringify(out.data)}`);
  }
  runs.push((performance.now() - t0) / CALLS);
}
runs.sort((a, b) => a - b);
console.log(`verifyKey (credits key, memory store): median of 3 runs of ${CALLS}: ${runs[1]!.toFixed(3)} ms/call (runs: ${runs.map((r) => r.toFixed(3)).join(", ")})`);
await svc.close();
