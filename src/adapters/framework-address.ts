// The client address the Node adapters count `unknownKeyLimit` by: the framework's own, which
// follows its proxy setting, else the socket's. X-Forwarded-For counts only where the app told its
// framework to trust it.
import type { IncomingMessage } from "node:http";

/**
 * The client address as the framework sees it: `ip` of Koa's context (`app.proxy`), of Fastify's
 * request (`trustProxy`) and of Express's request under Nest (`trust proxy`), which follow the
 * framework's proxy setting; else the socket's.
 */
export function frameworkAddress(req: unknown, raw: unknown): unknown {
  const ip = (req as { ip?: unknown } | null)?.ip;
  return typeof ip === "string" && ip !== "" ? ip : (raw as IncomingMessage).socket?.remoteAddress;
}
