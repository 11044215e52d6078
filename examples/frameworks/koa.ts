// keyguard/koa: the verified key is ctx.state.apiKey; guards are Koa middleware.
// Run: UNKEY_ROOT_KEY=... [UNKEY_BASE_URL=...] npx tsx examples/frameworks/koa.ts
import type { AddressInfo } from "node:net";
import Koa from "koa";
import { apiKeyAuth, requirePermissions, type ApiKeyState } from "keyguard/koa";

const app = new Koa<ApiKeyState>();
const canWrite = requirePermissions("docs.write");
app.use(async (ctx, next) => {
  if (ctx.path === "/health") return void (ctx.body = "ok");
  await next();
});
app.use(apiKeyAuth());
app.use(async (ctx, next) => (ctx.method === "POST" ? canWrite(ctx, next) : next()));
app.use((ctx) => {
  ctx.body = ctx.method === "POST" ? { saved: true } : { hello: ctx.state.apiKey?.name ?? ctx.state.apiKey?.keyId };
});

const server = app.listen(Number(process.env.PORT ?? 3000), "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
