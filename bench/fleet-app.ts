// Child process for the fleet bench: one app instance with apiKeyAuth() on a redisStore. Prints one
// JSON line with its URL, then one line per invalidation it applies (`{"keyId", "at"}`, wall-clock
// ms with sub-millisecond precision), and serves until killed.

import express from "express";
import { apiKeyAuth, silentLogger } from "keyguard";
import { redisStore } from "keyguard/redis";

export interface FleetAppConfig {
  baseUrl: string;
  rootKey: string;
  redisUrl: string;
  prefix: string;
  ttl: number;
}

const now = () => performance.timeOrigin + performance.now();

async function main(): Promise<void> {
  const config = JSON.parse(process.env.BENCH_FLEET ?? "{}") as FleetAppConfig;
  const store = await redisStore({ url: config.redisUrl, prefix: config.prefix, logger: silentLogger });
  await store.ready;
  store.subscribe((message) => {
    if (message.kind === "keyId") process.stdout.write(`${JSON.stringify({ keyId: message.keyId, at: now() })}\n`);
  });
  const app = express();
  app.use(apiKeyAuth({ rootKey: config.rootKey, baseUrl: config.baseUrl, store, cache: { ttl: config.ttl }, logger: silentLogger }));
  app.get("/r", (_req, res) => {
    res.json({ ok: true });
  });
  const server = app.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as { port: number };
    process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}` })}\n`);
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`bench fleet app failed: ${String(error)}\n`);
  process.exit(1);
});
