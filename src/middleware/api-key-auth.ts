// `apiKeyAuth()`: the Express/Connect adapter. Options are parsed and the client is built once;
// per request it finds the key, verifies it, and either calls `next()` or answers the denial.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { VerifyKeyResult } from "../protocol/types";
import { setApiKey, type VerifiedKey } from "./augment";
import {
  invalidRequestDenial,
  missingKeyDenial,
  rejectedKeyDenial,
  serviceUnavailableDenial,
  verificationFailedDenial,
} from "./denials";
import { ConfigError, type KeyguardError } from "./errors";
import { checkCustomKey, extractKey, type Extraction, type KeySource } from "./extract-key";
import { removeHeaders } from "./hide-credentials";
import { failOnce, once, type OnceNext } from "./next-once";
import { DEFAULTS, type ApiKeyAuthOptions, type NextFunction } from "./options";
import { parseOptions } from "./parse-options";
import { isPreflight } from "./preflight";
import { rateLimitHeaders } from "./ratelimit-headers";
import { resolveShape, ShapeError, staticShape, type ResolvedShape } from "./request-shape";
import { attachResponder, createResponder } from "./respond";
import { createVerifier, passes } from "./verify";

/** The middleware returned by {@link apiKeyAuth}. */
export interface ApiKeyAuthHandler<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse> {
  (req: Req, res: Res, next: NextFunction): void;
  /** Forgets cached answers for a key, e.g. right after revoking or changing it. */
  invalidate(key: string): void;
  /** Forgets every cached answer. */
  clear(): void;
}

const NOT_FOUND: Readonly<VerifyKeyResult> = Object.freeze({ valid: false, code: "NOT_FOUND" });

function looksLikeRequest(v: unknown): boolean {
  return typeof v === "object" && v !== null && "headers" in v && ("method" in v || "socket" in v);
}

function misuse(args: IArguments): never | undefined {
  const err = new ConfigError(
    "apiKeyAuth",
    "apiKeyAuth: it was used as middleware itself (app.use(apiKeyAuth)). Call it: app.use(apiKeyAuth()).",
  );
  const next: unknown = args[2];
  if (typeof next === "function") {
    next(err);
    return undefined;
  }
  throw err;
}

/**
 * Protects routes with API keys verified by the key service.
 *
 * ```ts
 * app.use(apiKeyAuth());                                    // UNKEY_ROOT_KEY from the environment
 * app.get("/docs", apiKeyAuth({ permissions: "docs.read" }), handler);
 * ```
 */
export function apiKeyAuth<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse>(
  options?: ApiKeyAuthOptions<Req, Res>,
): ApiKeyAuthHandler<Req, Res> {
  // eslint-disable-next-line prefer-rest-params
  if (looksLikeRequest(options) || typeof arguments[2] === "function") return misuse(arguments) as never;
  const config = parseOptions(options);
  const verifier = createVerifier({ ...config, staleMax: DEFAULTS.staleMax });
  const responder = createResponder({
    denial: config.denial,
    onDenied: config.onDenied as never,
    passErrors: config.passErrors,
    logger: config.logger,
  });
  const ctx = config.denial;
  const headerNames = (from: readonly KeySource[]) =>
    from.map((source) => (source === "authorization" ? "authorization" : config.extract.header!));

  // With no per-request options, every request has the same shape: computed once here.
  const fixedShape = config.getKey === undefined ? staticShape(config) : undefined;

  type Action = KeyguardError | "next" | VerifiedKey;

  /**
   * The hot path: a key whose VALID answer is stored in the cache passes without a promise.
   * Anything else (a miss, a denial, a custom getter, per-request options, a preflight, which
   * carries no key) returns undefined and takes the full path in `decide`.
   */
  function decideFromCache(req: Req): VerifiedKey | undefined {
    if (fixedShape === undefined) return undefined;
    const found = extractKey(req, config.extract);
    if (found.kind !== "key") return undefined;
    const hit = verifier.peek(found.key, fixedShape);
    if (hit === undefined || !passes(hit)) return undefined;
    if (config.hideCredentials) removeHeaders(req, headerNames(found.from));
    return hit as VerifiedKey;
  }

  async function decide(req: Req): Promise<Action> {
    // A preflight carries no credentials; one that does is authenticated like any request.
    const preflight = config.allowPreflight && isPreflight(req, config.extract.header);
    if (preflight && config.getKey === undefined) return "next";
    const found: Extraction =
      config.getKey !== undefined ? checkCustomKey(await config.getKey(req)) : extractKey(req, config.extract);
    if (preflight && found.kind === "none") return "next";
    if (found.kind !== "malformed" && found.kind !== "none" && config.hideCredentials) removeHeaders(req, headerNames(found.from));
    if (found.kind === "none") return config.optional ? "next" : missingKeyDenial(ctx);
    if (found.kind === "malformed") return invalidRequestDenial(ctx, found.reason);
    if (found.kind === "oversize") return rejectedKeyDenial(ctx, NOT_FOUND, { now: Date.now() });

    let shape: ResolvedShape;
    try {
      shape = fixedShape ?? (await resolveShape(config, req));
    } catch (e) {
      if (!(e instanceof ShapeError)) throw e;
      verifier.reportMisconfiguration(e.message);
      return verificationFailedDenial(e.message, e);
    }
    const outcome = await verifier.verify(found.key, shape);
    if (outcome.kind === "result") {
      // Only `valid: true` with the code VALID passes; `valid: true` with another code is that denial.
      if (passes(outcome.result)) return outcome.result as VerifiedKey;
      return rejectedKeyDenial(ctx, outcome.result, {
        now: Date.now(),
        ...(shape.body.permissions === undefined ? {} : { query: shape.body.permissions }),
        ...(outcome.requestId === undefined ? {} : { requestId: outcome.requestId }),
      });
    }
    const { failure } = outcome;
    if (failure.kind === "misconfigured") return verificationFailedDenial(failure.reason, failure.cause, failure.requestId);
    if (config.onServiceError === "open" && failure.mayFailOpen) return "next";
    return serviceUnavailableDenial(failure.retryAfter, failure.cause, failure.requestId);
  }

  /** Stores the verified key and its rate-limit headers (unless a handler before us already sent headers). */
  function admit(key: VerifiedKey, req: Req, res: Res): void {
    attachResponder(key, responder);
    setApiKey(req, res, key);
    if (ctx.rateLimitHeaders && key.ratelimits !== undefined && key.ratelimits.length > 0 && !res.headersSent) {
      for (const [name, value] of Object.entries(rateLimitHeaders(key.ratelimits, Date.now()))) res.setHeader(name, value);
    }
  }

  /** Carries out a decision; calls `next` last, so that nothing after it can call `next` again. */
  function act(action: Action, req: Req, res: Res, next: OnceNext): void {
    if (action !== "next" && "valid" in action) {
      admit(action, req, res);
      return next();
    }
    // Let through without a key, or denied (an onDenied hook may still call next): guards after us
    // answer with our conventions.
    attachResponder(req, responder);
    if (action === "next") return next();
    responder.deny(action, req, res, next);
  }

  const handler = (req: Req, res: Res, next: NextFunction): void => {
    const cached = decideFromCache(req);
    if (cached !== undefined) {
      try {
        admit(cached, req, res);
      } catch (err) {
        return next(err);
      }
      // Outside the try: an error thrown by a later handler propagates to our caller, as from any
      // synchronous middleware, and is never passed to next() again.
      return next();
    }
    const n = once(next);
    decide(req)
      .then(
        (action) => act(action, req, res, n),
        (err: unknown) => n(err),
      )
      .catch((err: unknown) => failOnce(n, err, responder.reportLateError));
  };
  return Object.assign(handler, {
    invalidate: (key: string) => verifier.invalidate(key),
    clear: () => verifier.clear(),
  });
}
