// Tells an outage of PostgreSQL or Redis (refused, reset, timed out, shutting down) from other
// errors, and turns it into the one `StoreUnavailableError` the service answers 503 to.
import { StoreUnavailableError } from "../errors";

const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
  "ECONNABORTED",
]);

/**
 * Messages of node-postgres and ioredis when the connection is gone, cannot be made or timed out;
 * and of an ioredis Cluster that has no node for a slot now (during a failover).
 */
const OUTAGE_MESSAGES =
  /connection terminated|timeout exceeded when trying to connect|query read timeout|connection error|not queryable|connection is closed|stream isn't writeable|max retries per request|command timed out|reached the max retries|socket closed|cluster isn't ready|failed to refresh slots cache|too many cluster redirections|none of startup nodes is available/i;

/**
 * SQLSTATEs of PostgreSQL meaning "the server cannot serve us now": classes 08 connection
 * exception, 28 invalid authorization (a rotated password), 53 insufficient resources, 57
 * operator intervention (shutdown, cancel, statement timeout), 58 system error (I/O); and 3D000,
 * the database does not exist.
 */
const OUTAGE_SQLSTATE = /^(08|28|53|57|58)|^3D000$/;

/** Node.js's codes of a TLS handshake that failed: the server's certificate not trusted, expired, of another name, … */
const TLS_CODE = /^(CERT_|UNABLE_TO_|SELF_SIGNED_CERT|DEPTH_ZERO_SELF_SIGNED_CERT|ERR_TLS_|ERR_SSL_|HOSTNAME_MISMATCH)/;

/** Redis error replies that mean "not now" or "not us" rather than a bad command. */
const REDIS_OUTAGE_REPLY = /^(LOADING|MISCONF|OOM|BUSY|READONLY|MASTERDOWN|TRYAGAIN|CLUSTERDOWN|NOREPLICAS|NOAUTH|WRONGPASS|NOPERM)\b/;

function isOutage(err: unknown, server: "postgres" | "redis"): boolean {
  if (err instanceof StoreUnavailableError) return true;
  if (typeof err !== "object" || err === null) return false;
  const e = err as { code?: unknown; message?: unknown; name?: unknown; severity?: unknown };
  const code = typeof e.code === "string" ? e.code : "";
  const message = typeof e.message === "string" ? e.message : "";
  if (server === "postgres" && typeof e.severity === "string") return OUTAGE_SQLSTATE.test(code);
  if (server === "redis" && e.name === "ReplyError") return REDIS_OUTAGE_REPLY.test(message);
  return (
    NETWORK_CODES.has(code) ||
    TLS_CODE.test(code) ||
    OUTAGE_MESSAGES.test(message) ||
    e.name === "MaxRetriesPerRequestError" ||
    e.name === "ClusterAllFailedError"
  );
}

/**
 * The outage in a few stable words: the service logs one line per distinct message (throttled),
 * so one outage should read the same on every request it fails.
 */
function reasonOf(err: { code?: unknown; message?: unknown }): string {
  const code = typeof err.code === "string" ? err.code : "";
  const message = typeof err.message === "string" ? err.message : "";
  if (code === "ECONNREFUSED") return "connection refused";
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return "host not found";
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH") return "host unreachable";
  if (code === "ETIMEDOUT" || /timeout|timed out/i.test(message)) return "timed out";
  if (TLS_CODE.test(code)) return `TLS handshake failed (${code})`;
  if (code.startsWith("57P")) return "server shutting down or starting up";
  if (code.startsWith("53")) return "server out of resources (connections, memory or disk)";
  if (NETWORK_CODES.has(code) || OUTAGE_MESSAGES.test(message)) return "connection lost";
  return message.split("\n")[0] ?? "";
}

/**
 * The error to throw for `err` raised by `server`: a `StoreUnavailableError` for an outage (its
 * message names the server by host and port only, never the URL's password; the original error
 * is its `cause`), else `err` as is.
 */
export function storeError(err: unknown, server: "postgres" | "redis", where: string): unknown {
  if (err instanceof StoreUnavailableError || !isOutage(err, server)) return err;
  const name = server === "postgres" ? "PostgreSQL" : "Redis";
  return new StoreUnavailableError(`${name} at ${where} is unavailable: ${reasonOf(err as object)}`, { cause: err });
}

/** `host:port` of a connection URL, for messages: never the user name or password. */
export function describeServer(url: URL, defaultPort: number): string {
  return `${url.hostname || "localhost"}:${url.port || defaultPort}`;
}
