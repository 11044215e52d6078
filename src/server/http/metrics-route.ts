// `GET /metrics` of the key service: the Prometheus text exposition of its metrics, answered only
// when metrics are on. With a token, a scrape must send `Authorization: Bearer <token>`.
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../../logger";
import type { ServiceMetrics } from "../metrics";

export const METRICS_PATH = "/metrics";

const digest = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest();

function plain(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.statusCode = status;
  for (const name in headers) res.setHeader(name, headers[name]!);
  res.setHeader("Content-Type", "text/plain; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(text));
  res.end(text);
}

/** The handler of `/metrics` (any method): 405 but for GET and HEAD, 401 without the token when one is set. */
export function metricsEndpoint(
  metrics: ServiceMetrics,
  token: string | undefined,
  logger: Logger,
): (req: IncomingMessage, res: ServerResponse) => void {
  // Compared as digests, in constant time: the token's length is not revealed either.
  const expected = token === undefined ? undefined : digest(`Bearer ${token}`);
  return (req, res) => {
    req.resume();
    if (req.method !== "GET" && req.method !== "HEAD")
      return plain(res, 405, `${req.method} is not allowed here; use GET.\n`, { Allow: "GET, HEAD" });
    if (expected && !timingSafeEqual(digest(req.headers.authorization ?? ""), expected)) {
      return plain(res, 401, "The metrics need Authorization: Bearer <the metrics token>.\n", {
        "WWW-Authenticate": 'Bearer realm="keyguard metrics"',
      });
    }
    metrics.scrape().then(
      ({ contentType, body }) => {
        res.statusCode = 200;
        res.setHeader("Content-Type", contentType);
        res.setHeader("Content-Length", Buffer.byteLength(body));
        res.setHeader("Cache-Control", "no-store");
        res.end(req.method === "HEAD" ? undefined : body);
      },
      (err: unknown) => {
        logger.error({ error: err instanceof Error ? err.message : String(err) }, "keyguard/server: cannot collect the metrics");
        plain(res, 500, "The metrics could not be collected.\n");
      },
    );
  };
}
