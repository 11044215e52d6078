// `apiKeyAuth()`: the Express/Connect adapter of the decision core. Options are parsed with the Node
// client (createClient(), over undici's keep-alive pool) and the client is built once; per request
// the core decides, synchronously for a kept answer (the hot path) or with a promise, and the
// request is admitted (`next()`), let through, or denied.

import type { IncomingMessage, ServerResponse } from "node:http";
import { createClient } from "../../client/client";
import { invalidateAll, invalidateKey, invalidateKeyId } from "../../protocol/invalidation";
import {
  ConfigError,
  createDecisionCore,
  isAdmitted,
  isThenable,
  parseAuthOptions,
  PASS,
  removeHeaders,
  type ApiKeyAuthConfig,
  type ApiKeyAuthOptions,
  type Decision,
  type NextFunction,
  type VerifiedKey,
} from "../../middleware";
import { keyHash } from "../../protocol/key-hash";
import { rememberedKeyHash } from "../key-hash-memo";
import { frameworkAddress } from "../framework-address";
import { setApiKey } from "./request-key";
import { attachResponder, createResponder, failOnce, once, withResponder, type OnceNext } from "./respond";

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

/** Parses the options of `apiKeyAuth()` once, with the Node client. */
export function parseOptions<Req extends IncomingMessage, Res extends ServerResponse>(
  input: ApiKeyAuthOptions<Req, Res> | undefined,
): ApiKeyAuthConfig<Req, Res> {
  return parseAuthOptions(input, createClient);
}

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
  const responder = createResponder({
    denial: config.denial,
    onDenied: config.onDenied as never,
    passErrors: config.passErrors,
    logger: config.logger,
  });
  const core = createDecisionCore(config, {
    hash: rememberedKeyHash(keyHash),
    // The verified key as handed to the app: one frozen object per kept answer, carrying our responder.
    present: (result) => withResponder(result, responder) as VerifiedKey,
    hide: (req, _view, names) => removeHeaders(req, names),
    // Express's `req.ip` (its `trust proxy` setting decides whether X-Forwarded-For counts); Connect's socket address.
    address: frameworkAddress,
  });
  /** Stores the verified key and its admission headers (unless a handler before us already sent headers). */
  function admit(key: VerifiedKey, req: Req, res: Res): void {
    setApiKey(req, res, key);
    const headers = core.admitHeaders(key);
    if (headers !== undefined && !res.headersSent) for (const name in headers) res.setHeader(name, headers[name]!);
  }

  /** Carries out a decision made asynchronously; calls `next` last, so nothing after it can call it again. */
  function act(action: Decision, req: Req, res: Res, next: OnceNext): void {
    if (isAdmitted(action)) {
      admit(action, req, res);
      return next();
    }
    // Let through without a key, or denied (an onDenied hook may still call next): guards after us
    // answer with our conventions.
    attachResponder(req, responder);
    if (action === PASS) return next();
    responder.deny(action, req, res, next);
  }

  const handler = (req: Req, res: Res, next: NextFunction): void => {
    let decision: Decision | Promise<Decision>;
    try {
      decision = core.decide(req, req);
    } catch (err) {
      return next(err);
    }
    if (!isThenable(decision)) {
      if (!isAdmitted(decision)) return act(decision, req, res, once(next));
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
    invalidate: (key: string) => core.invalidate(invalidateKey(key)),
    invalidateKeyId: (keyId: string) => core.invalidate(invalidateKeyId(keyId)),
    clear: () => core.invalidate(invalidateAll()),
  });
}
