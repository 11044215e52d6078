// Recognises a CORS preflight request: browsers send it without credentials, so one that carries
// any (an Authorization or key header) is not treated as a preflight and is authenticated.

import type { IncomingMessage } from "node:http";

/**
 * `OPTIONS` with `Origin` and `Access-Control-Request-Method`, and neither `Authorization` nor the
 * key header (`keyHeader`, lower case). A custom `getKey` is checked by the caller.
 */
export function isPreflight(req: Pick<IncomingMessage, "method" | "headers">, keyHeader: string | undefined): boolean {
  const h = req.headers;
  return (
    req.method === "OPTIONS" &&
    h.origin !== undefined &&
    h["access-control-request-method"] !== undefined &&
    h.authorization === undefined &&
    (keyHeader === undefined || h[keyHeader] === undefined)
  );
}
