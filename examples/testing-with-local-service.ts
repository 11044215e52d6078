// Testing a protected app without the hosted service: start the local key service on a free
// port, make keys over the wire, and send requests. A plain script; the same steps fit any test runner.
// Run: npx tsx examples/testing-with-local-service.ts
import type { AddressInfo } from "node:net";
import express from "express";
import { apiKeyAuth, requirePermissions } from "keyguard";
import { createClient } from "keyguard/client";
import { startLocalKeyService } from "keyguard/server";

async function main(): Promise<void> {
  const local = await startLocalKeyService(); // 127.0.0.1, any free port, state in memory
  const client = createClient({ rootKey: local.rootKey, baseUrl: local.baseUrl });

  const { key: reader } = await client.keys.createKey({ apiId: local.apiId, name: "reader", permissions: ["docs.read"] });
  const { key: writer } = await client.keys.createKey({ apiId: local.apiId, name: "writer", permissions: ["docs.write"] });
  const { key: limited } = await client.keys.createKey({
    apiId: local.apiId,
    name: "two uses",
    permissions: ["docs.read"],
    credits: { remaining: 2 },
  });

  const app = express();
  app.get("/docs", apiKeyAuth({ client }), requirePermissions("docs.read"), (req, res) => {
    res.json({ hello: req.apiKey?.name });
  });
  const server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const call = async (key?: string) => {
    const res = await fetch(`${base}/docs`, { headers: key ? { Authorization: `Bearer ${key}` } : {} });
    return `${res.status} ${await res.text()}`;
  };
  try {
    console.log("no key:      ", await call());
    console.log("reader:      ", await call(reader));
    console.log("writer:      ", await call(writer)); // 403: the key lacks docs.read
    for (let i = 1; i <= 3; i++) console.log(`two uses #${i}: `, await call(limited)); // 200, 200, 429
    local.service.setUnavailable(true);
    console.log("service down:", await call("sk_anything"));
  } finally {
    server.close();
    await local.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
