// Basic protection: every route under /api needs a valid API key.
// Run: UNKEY_ROOT_KEY=... [UNKEY_BASE_URL=...] npx tsx examples/basic.ts
import express from "express";
import { apiKeyAuth, getApiKey } from "keyguard";

const app = express();

// Built once: reads UNKEY_ROOT_KEY (and UNKEY_BASE_URL) and throws now if the root key is missing.
// Callers send `Authorization: Bearer <key>` or `X-API-Key: <key>`.
// Serving browsers? Mount your CORS middleware (e.g. cors()) before this line: credential-free
// preflights pass apiKeyAuth() unauthenticated, and app.all()/app.use() handlers below would see them.
app.use("/api", apiKeyAuth());

app.get("/api/hello", (req, res) => {
  const key = getApiKey(req); // same as req.apiKey
  res.json({ hello: key?.name ?? key?.keyId, meta: key?.meta ?? {} });
});

app.get("/health", (_req, res) => {
  res.send("ok"); // not protected
});

const port = Number(process.env.PORT ?? 3000);
app.listen(port, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${port}`);
});
