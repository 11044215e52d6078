// The hosted portal's requests under `/portal`: the link's code exchanged on the server for the
// access token (kept in an HttpOnly, SameSite=Strict cookie, never seen by script), the same-origin
// endpoint the pages call the session's operations through (`POST /portal/api/<operation>`), and the
// way back to the session's returnUrl. The pages' files themselves are the console's (./console-files).
import type { IncomingMessage, ServerResponse } from "node:http";
import { PORTAL_COOKIE, TOKEN_TTL_MS } from "../operations/portal-auth";
import { findOperation, type AnyOperation } from "../operations/table";
import { ServiceError } from "../errors";

const PORTAL_PREFIX = "/portal";
const API_PREFIX = "/portal/api/";
/** The cookie that remembers where an ended session sends its user (not a secret: a URL the operator allowed). */
const RETURN_COOKIE = "portal_return";

/** What a request under /portal is. */
export type PortalRoute =
  | { kind: "exchange"; code: string }
  | { kind: "operation"; op: AnyOperation }
  | { kind: "return" }
  | { kind: "files" }
  | { kind: "canonical" };

/** Whether `path` is the portal's. */
export const isPortalPath = (path: string): boolean => path === PORTAL_PREFIX || path.startsWith(`${PORTAL_PREFIX}/`);

/** The route of a request under /portal; an operation that is not a session's is 404. */
export function portalRoute(req: IncomingMessage, path: string): PortalRoute {
  if (path.startsWith(API_PREFIX)) {
    const op = findOperation(path.slice(API_PREFIX.length));
    if (!op || op.caller !== "portalSession") {
      throw new ServiceError("routing.not_found", "No portal operation here. The pages call POST /portal/api/portal.<operation>.");
    }
    if (req.method !== "POST") {
      throw new ServiceError("routing.method_not_allowed", `${req.method} is not allowed here; use POST.`, { headers: { Allow: "POST" } });
    }
    return { kind: "operation", op };
  }
  if (path === `${PORTAL_PREFIX}/return`) return { kind: "return" };
  const page = path === PORTAL_PREFIX || path === `${PORTAL_PREFIX}/`;
  const code = page && req.method === "GET" ? new URL(req.url ?? "/", "http://x").searchParams.get("code") : null;
  if (code !== null) return { kind: "exchange", code };
  return path === PORTAL_PREFIX ? { kind: "canonical" } : { kind: "files" };
}

/**
 * 403 unless the request comes from the portal's own pages: a browser's `Sec-Fetch-Site` (when it
 * sends one) is `same-origin`, and `Origin` is present and is the service's own. The cookie is
 * SameSite=Strict already; this refuses what a browser without SameSite, or another site's form, sends.
 */
export function refuseOtherOrigins(req: IncomingMessage, ownOrigin: string): void {
  const site = req.headers["sec-fetch-site"];
  const origin = req.headers.origin;
  if ((site !== undefined && site !== "same-origin") || origin !== ownOrigin) {
    throw new ServiceError("authorization.forbidden", "The portal's operations answer its own pages only (same origin).");
  }
}

/** The cookies the exchange sets: the token (HttpOnly, SameSite=Strict, Path=/portal; Secure behind TLS) and the way back. */
export function sessionCookies(accessToken: string, returnUrl: string | undefined, secure: boolean): string[] {
  const attributes = `; Path=${PORTAL_PREFIX}; Max-Age=${TOKEN_TTL_MS / 1000}; HttpOnly; SameSite=Strict${secure ? "; Secure" : ""}`;
  return [
    `${PORTAL_COOKIE}=${accessToken}${attributes}`,
    returnUrl === undefined
      ? `${RETURN_COOKIE}=; Path=${PORTAL_PREFIX}; Max-Age=0; HttpOnly; SameSite=Strict${secure ? "; Secure" : ""}`
      : `${RETURN_COOKIE}=${encodeURIComponent(returnUrl)}${attributes}`,
  ];
}

/** 303 to `location`, with the cookies given; nothing cached, no referrer (the code was in the URL). */
export function redirect(res: ServerResponse, location: string, cookies: string[] = []): void {
  res.statusCode = 303;
  if (cookies.length > 0) res.setHeader("Set-Cookie", cookies);
  res.setHeader("Location", location);
  res.setHeader("Cache-Control", "no-store");
  res.setHeader("Referrer-Policy", "no-referrer");
  res.end();
}

/** `GET /portal/return`: 303 to the session's returnUrl (an http(s) URL), else to a page saying the session ended. */
export function sendBack(req: IncomingMessage, res: ServerResponse): void {
  const raw = cookieValue(req.headers.cookie, RETURN_COOKIE);
  let to: string | undefined;
  try {
    const url = raw === undefined ? undefined : new URL(decodeURIComponent(raw));
    if (url && (url.protocol === "https:" || url.protocol === "http:")) to = url.href;
  } catch {
    to = undefined;
  }
  redirect(res, to ?? `${PORTAL_PREFIX}/#ended`);
}

/** The exchange failed (a code used before, expired or unknown): to the page that says so, without the code. */
export function exchangeRefused(res: ServerResponse): void {
  redirect(res, `${PORTAL_PREFIX}/#ended`);
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
