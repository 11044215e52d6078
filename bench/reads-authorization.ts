// The adapters group's reference for the Web adapters: a fetch handler that reads the Authorization
// header (401 without one) before the handler, and nothing more. What any key check pays its runtime
// for the header before its own work: reading one builds the Request's Headers, lazily, on
// @hono/node-server, Bun and Deno. Served by frameworks.ts (web) and runtime-app.ts (Bun, Deno).

export const readsAuthorization =
  (handler: (request: Request) => Response | Promise<Response>) =>
  (request: Request): Response | Promise<Response> =>
    request.headers.get("authorization") === null ? new Response(null, { status: 401 }) : handler(request);
