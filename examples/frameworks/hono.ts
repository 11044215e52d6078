// keyguard/hono on Node (@hono/node-server); the same app runs on Bun, Deno and Workers with their serve.
// Run: UNKEY_ROOT_KEY=... [UNKEY_BASE_URL=...] npx tsx examples/frameworks/hono.ts
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { apiKeyAuth, requirePermissions, type ApiKeyEnv } from "keyguard/hono";

const app = new Hono<ApiKeyEnv>();
app.use("/api/*", apiKeyAuth());
app.get("/api/hello", (c) => c.json({ hello: c.get("apiKey")?.name ?? c.get("apiKey")?.keyId }));
app.post("/api/docs", requirePermissions("docs.write"), (c) => c.json({ saved: true }));
app.get("/health", (c) => c.text("ok"));

serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 3000), hostname: "127.0.0.1" }, (info) => {
  console.log(`listening on http://127.0.0.1:${info.port}`);
});
