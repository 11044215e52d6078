// `apiKeyAuth()`: the Express/Connect adapter and its one request pipeline. Options are parsed and
// the client is built once; per request the key is extracted once and hashed once, then either a
// kept answer decides synchronously (the hot path) or a promise does, and the request is admitted
// (`next()`) or denied.

import type { IncomingMessage, ServerResponse } from "node:http";
import { invalidateAll, invalidateKey, invalidateKeyId } from "../protocol/invalidation";
import type { VerifyKeyResult } from "../protocol/types";
import { setApiKey, type VerifiedKey } from "./augment";
import { connectionKeyHash } from "./connection-key-hash";
import {
  invalidRequestDenial,
  missingKeyDenial,
  rejectedKeyDenial,
  serviceUnavailableDenial,
  verificationFailedDenial,
} from "./denials";
import { ConfigError, ERROR_CODES, type KeyguardError } from "./errors";
import { checkCustomKey, extractKey, isPreflight, removeHeaders, type Extraction, type KeySource } from "./extract-key";
import { createDecisionReporter, type DecisionSource } from "./on-decision";
import { parseOptions, type ApiKeyAuthOptions, type NextFunction } from "./options";
import { rateLimitHeaders } from "./ratelimit-headers";
import { ShapeError, type ResolvedShape } from "./request-shape";
import { attachResponder, createResponder, failOnce, isThenable, once, withResponder, type OnceNext } from "./respond";
import { createVerifier, passes } from "./verify";

/** The middleware returned by {@link apiKeyAuth}. */
export interface ApiKeyAuthHandler<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse> {
  (req: Req, res: Res, next: NextFunction): void;
  /**
   * Forgets every answer kept for a key (cached and `staleIfError`), e.g. right after revoking or
   * changing it: here, and with a shared store on every instance. Resolves once sent; never rejects.
   */
  invalidate(key: string): Promise<void>;
  /** The same for a key known by its id (e.g. after `keys.updateKey({ keyId })`). */
  invalidateKeyId(keyId: string): Promise<void>;
  /** Forgets every answer, here and with a shared store on every instance. */
  clear(): Promise<void>;
}

const NOT_FOUND: Readonly<VerifyKeyResult> = Object.freeze({ valid: false, code: "NOT_FOUND" });

type Action = KeyguardError | "next" | VerifiedKey;

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
  const verifier = createVerifier(config);
  const responder = createResponder({
    denial: config.denial,
    onDenied: config.onDenied as never,
    passErrors: config.passErrors,
    logger: config.logger,
  });
  const ctx = config.denial;
  const { fixedShape, getKey } = config;
  const keepsAnswers = config.store !== undefined || config.staleIfError > 0;
  // The verified key as handed to the app: one frozen object per kept answer, carrying our responder.
  const views = new WeakMap<object, VerifiedKey>();
  const viewOf = (result: Readonly<VerifyKeyResult>): VerifiedKey => {
    let view = views.get(result);
    if (view === undefined) views.set(result, (view = withResponder(result, responder) as VerifiedKey));
    return view;
  };
  // onDecision: undefined when not configured, so each report below is one skipped branch.
  const observer = config.onDecision === undefined ? undefined : createDecisionReporter(config.onDecision, config.logger);
  const denied = <E extends KeyguardError>(err: E, req: Req, source: DecisionSource, serviceMs?: number): E => {
    observer?.denied(err, req, source, serviceMs);
    return err;
  };
  const headerNames = (from: readonly KeySource[]) =>
    from.map((source) => (source === "authorization" ? "authorization" : config.extract.header!));

  /** The pipeline: a decision now (a kept answer, or no key), or a promise of one. */
  function decide(req: Req): Action | Promise<Action> {
    // A preflight carries no credentials; one that does is authenticated like any request.
    if (getKey === undefined) {
      const found = extractKey(req, config.extract);
      // Only a request without a key can be a preflight (isPreflight also wants neither header).
      if (found.kind === "none" && config.allowPreflight && isPreflight(req, config.extract.header)) return "next";
      return decideFor(req, found, false);
    }
    const preflight = config.allowPreflight && isPreflight(req, config.extract.header);
    return Promise.resolve(getKey(req)).then((value) => decideFor(req, checkCustomKey(value), preflight));
  }

  function decideFor(req: Req, found: Extraction, preflight: boolean): Action | Promise<Action> {
    if (found.kind === "none") {
      if (preflight) return "next";
      if (!config.optional) return denied(missingKeyDenial(ctx), req, "none");
      observer?.passed(ERROR_CODES.missingKey, req, "none");
      return "next";
    }
    if (found.kind === "malformed") return denied(invalidRequestDenial(ctx, found.reason), req, "none");
    if (config.hideCredentials) removeHeaders(req, headerNames(found.from));
    if (found.kind === "oversize") return denied(rejectedKeyDenial(ctx, NOT_FOUND, { now: Date.now() }), req, "none");
    const keyHash = keepsAnswers ? connectionKeyHash(req, found.key) : "";
    if (fixedShape !== undefined) {
      const kept = verifier.peek(keyHash, fixedShape);
      if (kept !== undefined && passes(kept)) {
        if (observer !== undefined) observer.cached(kept, req);
        return viewOf(kept);
      }
    }
    return verify(req, found.key, keyHash);
  }

  async function verify(req: Req, key: string, keyHash: string): Promise<Action> {
    let shape: ResolvedShape;
    try {
      shape = fixedShape ?? (await config.resolveShape(req));
    } catch (e) {
      if (!(e instanceof ShapeError)) throw e;
      verifier.reportMisconfiguration(e.message);
      return denied(verificationFailedDenial(e.message, e), req, "none");
    }
    const outcome = await verifier.verify(key, keyHash, shape);
    const { serviceMs } = outcome;
    if (outcome.kind === "result") {
      const { result, source } = outcome;
      // Only `valid: true` with the code VALID passes; `valid: true` with another code is that denial.
      if (passes(result)) {
        if (source === "cache") observer?.cached(result, req);
        else observer?.admitted(result, req, source, serviceMs);
        return viewOf(result);
      }
      const rejection = rejectedKeyDenial(ctx, result, {
        now: Date.now(),
        ...(shape.body.permissions === undefined ? {} : { query: shape.body.permissions, scope: shape.scope }),
        ...(outcome.requestId === undefined ? {} : { requestId: outcome.requestId }),
      });
      return denied(rejection, req, source, serviceMs);
    }
    const { failure } = outcome;
    if (failure.kind === "misconfigured") return denied(verificationFailedDenial(failure.reason, failure.cause, failure.requestId), req, "service", serviceMs);
    if (config.onServiceError === "open" && failure.mayFailOpen) {
      observer?.passed(ERROR_CODES.serviceUnavailable, req, "service", serviceMs);
      return "next";
    }
    return denied(serviceUnavailableDenial(failure.retryAfter, failure.cause, failure.requestId), req, "service", serviceMs);
  }

  /** Stores the verified key and its rate-limit headers (unless a handler before us already sent headers). */
  function admit(key: VerifiedKey, req: Req, res: Res): void {
    setApiKey(req, res, key);
    if (ctx.rateLimitHeaders && key.ratelimits !== undefined && key.ratelimits.length > 0 && !res.headersSent) {
      for (const [name, value] of Object.entries(rateLimitHeaders(key.ratelimits, Date.now()))) res.setHeader(name, value);
    }
  }

  /** Carries out a decision made asynchronously; calls `next` last, so nothing after it can call it again. */
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
    let decision: Action | Promise<Action>;
    try {
      decision = decide(req);
    } catch (err) {
      return next(err);
    }
    if (!isThenable(decision)) {
      if (decision === "next" || !("valid" in decision)) return act(decision, req, res, once(next));
      // The hot path: a kept answer, no promise and no allocation.
      try {
        admit(decision, req, res);
      } catch (err) {
        return next(err);
      }
      // Outside the try: an error thrown by a later handler propagates to our caller, as from any
      // synchronous middleware, and is never passed to next() again.
      return next();
    }
    const n = once(next);
    decision
      .then(
        (action) => act(action, req, res, n),
        (err: unknown) => n(err),
      )
      .catch((err: unknown) => failOnce(n, err, responder.reportLateError));
  };
  return Object.assign(handler, {
    invalidate: (key: string) => verifier.invalidate(invalidateKey(key)),
    invalidateKeyId: (keyId: string) => verifier.invalidate(invalidateKeyId(keyId)),
    clear: () => verifier.invalidate(invalidateAll()),
  });
}
