// The public options of `apiKeyAuth()`, with their defaults. Parsing them into a frozen config
// (and building the key-service client) happens once, in parse-options.ts.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { KeyServiceClient, RetryOptions } from "../client";
import type { Logger } from "../logger";
import type { VerifyKeyRequest } from "../protocol/types";
import type { KeyguardError } from "./errors";
import type { StatusPolicyOverrides } from "./policy";

/** A fixed value, or one computed from the request (sync or async); undefined = not sent. */
export type PerRequest<T, Req> = T | ((req: Req) => T | undefined | Promise<T | undefined>);

/** A rate limit to check and charge during verification (by name, or inline with limit and duration). */
export type VerifyRatelimit = NonNullable<VerifyKeyRequest["ratelimits"]>[number];

/** Connect/Express `next`. */
export type NextFunction = (err?: unknown) => void;

/**
 * Called instead of the default problem+json answer; may be async. An error it throws (or a
 * promise it returns that rejects) goes to `next(err)`, unless it already called `next`.
 */
export type DeniedHandler<Req = IncomingMessage, Res = ServerResponse> = (
  err: KeyguardError,
  req: Req,
  res: Res,
  next: NextFunction,
) => void | Promise<void>;

export interface CacheOptions {
  /** How long a VALID answer is reused, ms (never past the key's `expires`). Default 30000. */
  ttl?: number;
  /** How long a NOT_FOUND answer is reused, ms. Default 5000. */
  negativeTtl?: number;
  /** Most answers kept. Default 1000. */
  max?: number;
}

export interface ApiKeyAuthOptions<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse> {
  /** Root key for the key service. Default: env `UNKEY_ROOT_KEY` (required unless `client` is given). */
  rootKey?: string;
  /** Base URL of the key service. Default: env `UNKEY_BASE_URL`, else `"https://api.unkey.com"`. */
  baseUrl?: string;
  /** A client built with `createClient()` from `keyguard/client`; replaces `rootKey` and `baseUrl`. */
  client?: KeyServiceClient;
  /** Read `Authorization: Bearer <key>`. Default true. */
  bearer?: boolean;
  /** Name of the header that may carry the key; `false` for none. Default `"X-API-Key"`. */
  header?: string | false;
  /** Custom key lookup (sync or async); replaces `bearer` and `header`. undefined, null or "" = no key. */
  getKey?: (req: Req) => string | undefined | null | Promise<string | undefined | null>;
  /** Permission query the key must satisfy, e.g. `"docs.read AND docs.write"`. Default: none. */
  permissions?: PerRequest<string, Req>;
  /** Credits to charge per request (0..1e12). Default: none sent (the service charges 1 to keys with credits). */
  cost?: PerRequest<number, Req>;
  /** Rate limits to check by name (or inline). Default: none (the key's auto-applied limits still apply). */
  ratelimits?: PerRequest<VerifyRatelimit[], Req>;
  /** Tags recorded with the verification (at most 20). Default: none. */
  tags?: PerRequest<string[], Req>;
  /** Let requests without a key through (without `req.apiKey`); an invalid key is still denied. Default false. */
  optional?: boolean;
  /** `realm` of the `WWW-Authenticate` challenge. Default `"api"`. */
  realm?: string;
  /** Status overrides per outcome, merged over the default table (see STATUS_PRESETS). Default: none. */
  policy?: StatusPolicyOverrides;
  /** Answer denials yourself. Default: a problem+json response. */
  onDenied?: DeniedHandler<Req, Res>;
  /** Call `next(err)` with the denial instead of answering (for apps with an error handler). Default false. */
  passErrors?: boolean;
  /**
   * Delete the headers that carried the key before later handlers run. Not with `getKey` (remove
   * what your getter read yourself). A later `apiKeyAuth()` on the same request then finds no key.
   * Default false.
   */
  hideCredentials?: boolean;
  /**
   * Let CORS preflights through unauthenticated: `OPTIONS` with `Origin` and
   * `Access-Control-Request-Method` and no credentials (no Authorization or key header; with
   * `getKey`, no key found). Handlers for every method behind `apiKeyAuth()` (`app.all`,
   * `app.use(handler)`) then see such requests: set false if you have them. Default true.
   */
  allowPreflight?: boolean;
  /** Add RateLimit / RateLimit-Policy headers when the verification reports rate limits. Default true. */
  rateLimitHeaders?: boolean;
  /**
   * When the service is unavailable: `"closed"` answers 503; `"open"` continues without a key
   * (logged). The service's 429 (workspace rate limit) always answers 503: random keys could
   * cause it. Default `"closed"`.
   */
  onServiceError?: "closed" | "open";
  /** When the service is unavailable, reuse a VALID answer up to this age, ms; `false` = never. Default false. */
  staleIfError?: number | false;
  /** Per-attempt timeout of a verification call, ms. Default 1000. */
  timeout?: number;
  /**
   * Overall time for the key-service call of one request, retry included, ms. `getKey` and the
   * option functions (`permissions`, `cost`, …) run outside it. Default 2500.
   */
  deadline?: number;
  /** Retries of a verification call. Default `{ attempts: 2, initialDelay: 100, maxDelay: 500 }`. */
  retry?: RetryOptions | false;
  /** Verification cache; `false` turns it off. Default `{ ttl: 30000, negativeTtl: 5000, max: 1000 }`. */
  cache?: CacheOptions | boolean;
  /** Receives warnings (service down, failing open) and errors (misconfiguration). Default `defaultLogger`. */
  logger?: Logger;
}

export const DEFAULTS = Object.freeze({
  header: "X-API-Key",
  realm: "api",
  timeout: 1000,
  deadline: 2500,
  retry: Object.freeze({ attempts: 2, initialDelay: 100, factor: 2, maxDelay: 500, jitter: 0.2 }),
  cache: Object.freeze({ ttl: 30_000, negativeTtl: 5_000, max: 1000 }),
  staleMax: 1000,
});

/** Every option name, for the unknown-option warning. */
export const OPTION_NAMES: readonly string[] = Object.freeze([
  "rootKey", "baseUrl", "client", "bearer", "header", "getKey", "permissions", "cost", "ratelimits",
  "tags", "optional", "realm", "policy", "onDenied", "passErrors", "hideCredentials", "allowPreflight",
  "rateLimitHeaders", "onServiceError", "staleIfError", "timeout", "deadline", "retry", "cache", "logger",
]);
