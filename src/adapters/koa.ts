// `apiKeyAuth()` for Koa: the decision core as Koa middleware. The verified key is
// `ctx.state.apiKey`; a denial is answered with the problem+json body; the guards are Koa
// middleware too. The option functions (`getKey`, `permissions`, `onDecision`, …) receive `ctx`.

import type { Context, Middleware, Next, ParameterizedContext } from "koa";
import {
  anyPermissionCheck,
  isThenable,
  keyCheck,
  permissionsCheck,
  problemAnswer,
  rolesCheck,
  type AuthOptions,
  type GuardCheck,
  type KeyguardError,
  type RequireKeyOptions,
  type VerifiedKey,
} from "../middleware";
import { nodeDecider, nodeGuard, type NodeOutcome } from "./node-decider";

/** The state the middleware sets: `ctx.state.apiKey`, undefined when let through without a key. */
export interface ApiKeyState {
  apiKey?: VerifiedKey | undefined;
}

/** The options of `apiKeyAuth()` from "keyguard/koa": the option functions receive the Koa `Context`. */
export type KoaApiKeyAuthOptions = AuthOptions<Context>;

/** The middleware returned by {@link apiKeyAuth}, with the invalidation methods. */
export type KoaApiKeyAuth = Middleware<ApiKeyState> & {
  invalidate(key: string): Promise<void>;
  invalidateKeyId(keyId: string): Promise<void>;
  clear(): Promise<void>;
};

function deny(ctx: Context, err: KeyguardError): void {
  const answer = problemAnswer(err);
  ctx.status = answer.status;
  // Content-Type first: Koa keeps a type already set when the body is assigned.
  ctx.set(answer.headers);
  ctx.body = answer.body;
}

/**
 * Protects Koa routes with API keys verified by the key service.
 *
 * ```ts
 * app.use(apiKeyAuth({ rootKey, baseUrl }));
 * app.use((ctx) => { ctx.body = { keyId: ctx.state.apiKey?.keyId }; });
 * ```
 */
export function apiKeyAuth(options?: KoaApiKeyAuthOptions): KoaApiKeyAuth {
  const decider = nodeDecider<Context>(options, "apiKeyAuth");
  const go = (outcome: NodeOutcome, ctx: ParameterizedContext<ApiKeyState>, next: Next): Promise<unknown> | undefined => {
    if (outcome.kind === "deny") return void deny(ctx as unknown as Context, outcome.error);
    ctx.state.apiKey = outcome.apiKey;
    if (outcome.headers !== undefined) ctx.set(outcome.headers);
    return next();
  };
  // Not an async function: a kept answer decides synchronously, and the request goes on to next()
  // without a promise or an await of ours in between (Koa's compose takes a plain return value).
  const middleware: Middleware<ApiKeyState> = (ctx, next) => {
    let decision: ReturnType<typeof decider.decide>;
    try {
      decision = decider.decide(ctx as unknown as Context, ctx.req);
    } catch (e) {
      return Promise.reject(e);
    }
    if (isThenable(decision)) return decision.then((outcome) => go(outcome, ctx, next));
    return go(decision, ctx, next);
  };
  return Object.assign(middleware, { invalidate: decider.invalidate, invalidateKeyId: decider.invalidateKeyId, clear: decider.clear });
}

function koaGuard(check: GuardCheck<Context>): Middleware<ApiKeyState> {
  return async (ctx, next) => {
    const verdict = nodeGuard(check, ctx as unknown as Context, ctx.req);
    const denial = isThenable(verdict) ? await verdict : verdict;
    if (denial !== undefined) return deny(ctx as unknown as Context, denial);
    await next();
  };
}

/** Requires the verified key's permissions to satisfy a query, e.g. `"docs.read AND (docs.write OR admin)"`. */
export const requirePermissions = (query: string): Middleware<ApiKeyState> => koaGuard(permissionsCheck(query));
/** Requires at least one of the permissions. */
export const requireAnyPermission = (...permissions: string[]): Middleware<ApiKeyState> => koaGuard(anyPermissionCheck(permissions));
/** Requires every one of the roles. */
export const requireRoles = (...roles: string[]): Middleware<ApiKeyState> => koaGuard(rolesCheck(roles));
/** Requires `predicate(key, ctx)` (sync or async) to return true; what it throws goes to Koa's error handling. */
export const requireKey = (
  predicate: (key: VerifiedKey, ctx: Context) => boolean | Promise<boolean>,
  options?: RequireKeyOptions,
): Middleware<ApiKeyState> => koaGuard(keyCheck(predicate, options));
