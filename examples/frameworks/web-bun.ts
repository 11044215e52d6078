// keyguard/web on Bun: Bun.serve with a fetch handler; /api/* needs a valid API key.
// Run: UNKEY_ROOT_KEY=... [UNKEY_BASE_URL=...] bun examples/frameworks/web-bun.ts
import { requirePermissions, webApiKeyAuth } from "keyguard/web";

declare const Bun: { serve(options: { port: number; hostname: string; fetch(request: Request): Promise<Response> }): { port: number } };

const auth = webApiKeyAuth(); // UNKEY_ROOT_KEY and UNKEY_BASE_URL from the environment
const canWrite = requirePermissions("docs.write");

const server = Bun.serve({
  port: Number(process.env.PORT ?? 3000),
  hostname: "127.0.0.1",
  async fetch(request) {
    const { pathname } = new URL(request.url);
    if (!pathname.startsWith("/api/")) return new Response("ok");
    const result = await auth(request);
    if (result instanceof Response) return result; // 401, 403, 429, 503 … as problem+json
    if (request.method === "POST") {
      const denied = await canWrite(result.request);
      if (denied !== undefined) return denied;
      return Response.json({ saved: true }, { headers: result.headers });
    }
    return Response.json({ hello: result.apiKey?.name ?? result.apiKey?.keyId }, { headers: result.headers });
  },
});
console.log(`listening on http://127.0.0.1:${server.port}`);
