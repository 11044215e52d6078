// keyguard/fastify: the plugin protects every route (config.keyguard: false opts one out, or gives
// it options of its own); request.apiKey is typed; guards are preHandler hooks.
// Run: UNKEY_ROOT_KEY=... [UNKEY_BASE_URL=...] npx tsx examples/frameworks/fastify.ts
import Fastify from "fastify";
import { keyguard, requirePermissions } from "keyguard/fastify";

const app = Fastify();
await app.register(keyguard); // UNKEY_ROOT_KEY and UNKEY_BASE_URL from the environment
app.get("/api/hello", async (request) => ({ hello: request.apiKey?.name ?? request.apiKey?.keyId }));
app.post("/api/docs", { preHandler: requirePermissions("docs.write") }, async () => ({ saved: true }));
app.get("/health", { config: { keyguard: false } }, async () => "ok");

const address = await app.listen({ port: Number(process.env.PORT ?? 3000), host: "127.0.0.1" });
console.log(`listening on ${address}`);
