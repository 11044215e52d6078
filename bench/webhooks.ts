// Webhook latency: the time from a change's request (createKey sent; its answer comes within) to
// its event arriving at a receiver on loopback, for SAMPLES changes made one after the other and CONCURRENT more made
// 8 at a time, per backend. Prints p50, p99 and max in ms, and the goal (p99 ≤ 1 s). Run: npm run
// bench:events, or node scripts/build-bench.mjs && node bench/.build/webhooks.mjs (BACKENDS=memory,sqlite).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { silentLogger } from "../src/logger";
import { memoryStorage, sqliteStorage, startLocalKeyService } from "../src/server";
import type { Storage } from "../src/server/storage/seam";

const SAMPLES = Math.min(Number(process.env.SAMPLES ?? 200), 2000);
const CONCURRENT = Math.min(Number(process.env.CONCURRENT ?? 400), 4000);
const BACKENDS = (process.env.BACKENDS ?? "memory,sqlite").split(",");

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))]!;
const summary = (xs: number[]) =>
  `p50 ${quantile(xs, 0.5).toFixed(1)} ms, p99 ${quantile(xs, 0.99).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms`;

/** Arrival times of events by key id. */
const arrived = new Map<string, number>();
const waiting = new Map<string, () => void>();
const receiver: Server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const keyId = (JSON.parse(Buffer.concat(chunks).toString()) as { data: { keyId: string } }).data.keyId;
    arrived.set(keyId, performance.now());
    waiting.get(keyId)?.();
    res.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

for (const backend of BACKENDS) {
  const dir = mkdtempSync(join(tmpdir(), "keyguard-bench-webhooks-"));
  const store: Storage = backend === "sqlite" ? await sqliteStorage(join(dir, "keys.db")) : memoryStorage();
  const running = await startLocalKeyService({ storage: store, port: 0, logger: silentLogger, webhooksAllowPrivate: true });
  const headers = { authorization: `Bearer ${running.rootKey}`, "content-type": "application/json" };
  const post = async (op: string, body: unknown) => {
    const res = await fetch(`${running.baseUrl}/v2/${op}`, { method: "POST", headers, body: JSON.stringify(body) });
    return (await res.json()) as { data: Record<string, string> };
  };
  await post("webhooks.createEndpoint", { url, events: ["key.created"] });
  const change = async (): Promise<number> => {
    const sent = performance.now();
    const { data } = await post("keys.createKey", { apiId: running.apiId });
    const keyId = data.keyId!;
    if (!arrived.has(keyId)) await new Promise<void>((resolve) => waiting.set(keyId, resolve));
    return arrived.get(keyId)! - sent;
  };
  try {
    for (let i = 0; i < 20; i++) await change(); // warm-up
    const serial: number[] = [];
    for (let i = 0; i < SAMPLES; i++) serial.push(await change());
    const concurrent: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next++ < CONCURRENT) concurrent.push(await change());
      }),
    );
    console.log(`${backend.padEnd(7)} change → delivery, one at a time (${SAMPLES}): ${summary(serial)}`);
    console.log(`${backend.padEnd(7)} change → delivery, 8 at a time (${CONCURRENT}): ${summary(concurrent)}`);
    const p99 = Math.max(quantile(serial, 0.99), quantile(concurrent, 0.99));
    console.log(`goal: ${backend}: change → delivery p99 ≤ 1000 ms … ${p99 <= 1000 ? "met" : "NOT met"} (${p99.toFixed(1)} ms)`);
  } finally {
    await running.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
receiver.close();
