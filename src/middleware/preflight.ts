// Recognises a CORS preflight request, which browsers send without credentials.

import type { IncomingMessage } from "node:http";

/** `OPTIONS` with `Access-Control-Request-Method`: a preflight, not a real call. */
export function isPreflight(req: Pick<IncomingMessage, "method" | "headers">): boolean {
  return req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined;
}
