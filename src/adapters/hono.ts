// `apiKeyAuth()` for Hono: the Web adapter's decision as Hono middleware. The verified key is
// `c.get("apiKey")` (typed through the `Variables` of {@link ApiKeyEnv}); a denial is the
// problem+json Response; the guards are Hono middleware too. Loads no node: module.

import type { Context, MiddlewareHandler, Next } from "hono";
import {
  anyPermissionCheck,
  isThenable,
  keyCheck,
  permissionsCheck,
  rolesCheck,
  type AuthOptions,
  type GuardCheck,
  type RequireKeyOptions,
  type VerifiedKey,
} from "../middleware";
import { asNodeRequest, guardResponse, webDecider, type WebAuthResult } from "./web";

/** The Hono environment the middleware sets: `c.get("apiKey")`, undefined when let through without a key. */
export interface ApiKeyEnv {
  Variables: { apiKey: VerifiedKey | undefined };
}

/** The options of `apiKeyAuth()` from "keyguard/hono": the option functions receive the Hono `Context`. */
export type HonoApiKeyAuthOptions = AuthOptions<Context>;

/** The middleware returned by {@link apiKeyAuth}, with the invalidation methods. */
export type HonoApiKeyAuth = MiddlewareHandler<ApiKeyEnv> & {
  /** Forgets every answer kept for a key, here and with a shared store on every instance. */
  invalidate(key: string): Promise<void>;
  /** The same for a key known by its id. */
  invalidateKeyId(keyId: string): Promise<void>;
  /** Forgets every answer, here and with a shared store on every instance. */
  clear(): Promise<void>;
};

/** Adds headers to the response a later handler made (a fetched Response's headers are immutable: it is copied). */
function addHeaders(c: Context, headers: Readonly<Record<string, string>> | undefined): void {
  if (headers === undefined) return;
  const names = Object.keys(headers);
  if (names.length === 0) return;
  try {
    for (const name of names) c.res.headers.set(name, headers[name]!);
  } catch {
    const copy = new Response(c.res.body, c.res);
    for (const name of names) copy.headers.set(name, headers[name]!);
    c.res = copy;
  }
}

/**
 * Protects Hono routes with API keys verified by the key service.
 *
 * ```ts
 * const app = new Hono<ApiKeyEnv>();
 * app.use("/api/*", apiKeyAuth({ rootKey, baseUrl }));
 * app.get("/api/me", (c) => c.json({ keyId: c.get("apiKey")?.keyId }));
 * ```
 */
export function apiKeyAuth(options?: HonoApiKeyAuthOptions): HonoApiKeyAuth {
  const decide = webDecider<Context>(options, "apiKeyAuth");
  const go = (result: WebAuthResult | Response, c: Context<ApiKeyEnv>, next: Next): Promise<Response | void> => {
    if (result instanceof Response) return Promise.resolve(result);
    c.set("apiKey", result.apiKey);
    if (result.request !== c.req.raw) c.req.raw = result.request;
    if (result.headers === undefined) return next();
    const headers = result.headers;
    return next().then(() => addHeaders(c as Context, headers));
  };
  // Not an async function: a kept answer decides synchronously, and without rate-limit headers to
  // add the request goes on to next() with no promise or await of ours in between.
  const middleware: MiddlewareHandler<ApiKeyEnv> = (c, next) => {
    let result: ReturnType<typeof decide>;
    try {
      result = decide(c as Context, c.req.raw, asNodeRequest((c.env as { incoming?: unknown } | undefined)?.incoming));
    } catch (e) {
      return Promise.reject(e);
    }
    return isThenable(result) ? result.then((r) => go(r, c, next)) : go(result, c, next);
  };
  return Object.assign(middleware, { invalidate: decide.invalidate, invalidateKeyId: decide.invalidateKeyId, clear: decide.clear });
}

function honoGuard(check: GuardCheck<Context>): MiddlewareHandler<ApiKeyEnv> {
  return async (c, next) => {
    const denied = await guardResponse(check, c as Context, c.req.raw);
    if (denied !== undefined) return denied;
    await next();
  };
}

/** Requires the verified key's permissions to satisfy a query, e.g. `"docs.read AND (docs.write OR admin)"`. */
export const requirePermissions = (query: string): MiddlewareHandler<ApiKeyEnv> => honoGuard(permissionsCheck(query));
/** Requires at least one of the permissions. */
export const requireAnyPermission = (...permissions: string[]): MiddlewareHandler<ApiKeyEnv> => honoGuard(anyPermissionCheck(permissions));
/** Requires every one of the roles. */
export const requireRoles = (...roles: string[]): MiddlewareHandler<ApiKeyEnv> => honoGuard(rolesCheck(roles));
/** Requires `predicate(key, c)` (sync or async) to return true; what it throws goes to Hono's error handler. */
export const requireKey = (
  predicate: (key: VerifiedKey, c: Context) => boolean | Promise<boolean>,
  options?: RequireKeyOptions,
): MiddlewareHandler<ApiKeyEnv> => honoGuard(keyCheck(predicate, options));
