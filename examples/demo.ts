// `npm start`: the local key service and an API protected by keyguard, with demo keys and
// ready-to-paste curl commands for each outcome. Runs until Ctrl-C.
//
// Ports: KEYGUARD_SERVICE_PORT (default 8787) for the key service, PORT (default 3000) for the API.

import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import express from "express";
import { apiKeyAuth, requirePermissions } from "keyguard";
import { createClient } from "keyguard/client";
import { startLocalKeyService } from "keyguard/server";

function port(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > 65535) {
    fail(`${name}=${JSON.stringify(raw)} is not a port number (0-65535).`);
  }
  return value;
}

function fail(message: string): never {
  process.stderr.write(`demo: ${message}\n`);
  process.exit(1);
}

function portTaken(error: unknown, what: string, envName: string, value: number): never {
  if ((error as NodeJS.ErrnoException)?.code === "EADDRINUSE") {
    fail(`port ${value} for the ${what} is taken. Stop whatever uses it, or pick another: ${envName}=<port> npm start`);
  }
  throw error;
}

const servicePort = port("KEYGUARD_SERVICE_PORT", 8787);
const appPort = port("PORT", 3000);

const service = await startLocalKeyService({ port: servicePort, console: true }).catch((error: unknown) =>
  portTaken(error, "key service", "KEYGUARD_SERVICE_PORT", servicePort),
);

// Demo keys, created over the wire like an admin tool would.
const admin = createClient({ rootKey: service.rootKey, baseUrl: service.baseUrl, retry: false });
const apiId = service.apiId;
const reader = await admin.keys.createKey({ apiId, prefix: "demo", name: "read-only", permissions: ["docs.read"] });
const metered = await admin.keys.createKey({
  apiId,
  prefix: "demo",
  name: "metered",
  permissions: ["docs.read", "reports.read"],
  credits: { remaining: 100 },
  ratelimits: [{ name: "requests", limit: 3, duration: 60_000, autoApply: true }],
});
const expired = await admin.keys.createKey({
  apiId,
  prefix: "demo",
  name: "expired",
  permissions: ["docs.read"],
  expires: Date.now() - 60_000,
});

// The protected API.
const app = express();
app.use(express.json());
app.get("/health", (_req, res) => {
  res.json({ ok: true });
});
app.use("/api", apiKeyAuth({ rootKey: service.rootKey, baseUrl: service.baseUrl }));
app.get("/api/docs", requirePermissions("docs.read"), (req, res) => {
  res.json({ docs: ["getting-started.md", "pricing.md"], key: req.apiKey?.name });
});
app.post("/api/docs", requirePermissions("docs.write"), (_req, res) => {
  res.status(201).json({ created: true });
});
app.get("/api/reports", requirePermissions("reports.read"), (req, res) => {
  res.json({ report: "usage", creditsLeft: req.apiKey?.credits });
});

const server = await new Promise<Server>((resolve, reject) => {
  const s = app.listen(appPort, "127.0.0.1");
  s.once("listening", () => resolve(s));
  s.once("error", reject);
}).catch((error: unknown) => portTaken(error, "demo API", "PORT", appPort));

const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const lines = [
  "",
  "keyguard demo",
  `  key service (local)  ${service.baseUrl}`,
  // Only a generated root key is printed; one taken from UNKEY_ROOT_KEY may be a real secret.
  `  console              ${service.baseUrl}/   (sign in with the root key ${service.service.rootKeyGenerated ? service.rootKey : "from UNKEY_ROOT_KEY"})`,
  `  protected API        ${base}   (GET /api/docs, POST /api/docs, GET /api/reports; /health is public)`,
  "",
  "Try these (the status each one gives is on the left):",
  "",
  `  200  curl -i ${base}/api/docs -H "Authorization: Bearer ${reader.key}"`,
  `  401  curl -i ${base}/api/docs`,
  `  401  curl -i ${base}/api/docs -H "Authorization: Bearer ${expired.key}"`,
  `  403  curl -i -X POST ${base}/api/docs -H "Authorization: Bearer ${reader.key}"`,
  `  429  for i in 1 2 3 4; do curl -s -o /dev/null -w "%{http_code}\\n" ${base}/api/reports -H "X-API-Key: ${metered.key}"; done`,
  "",
  "  The 401s are a missing key and an expired key; the 403 is a read-only key trying to write;",
  "  the metered key allows 3 requests a minute, so the fourth in the loop is 429 with Retry-After.",
  "",
  "Press Ctrl-C to stop.",
  "",
];
process.stdout.write(lines.join("\n"));

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  server.close();
  server.closeAllConnections();
  void service.close().then(() => process.exit(0));
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
