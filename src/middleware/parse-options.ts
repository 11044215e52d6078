// Parses `apiKeyAuth()` options once, at factory time, into a frozen config with every default
// filled in (and the key-service client built). Misconfiguration throws ConfigError naming the fix.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { KeyServiceClient, RetryOptions } from "../client";
import { defaultLogger, type Logger } from "../logger";
import { parsePermissionQuery } from "../protocol/permission-query";
import { buildClient } from "./build-client";
import type { CacheSettings } from "./cache";
import type { DenialContext } from "./denials";
import type { ExtractOptions } from "./extract-key";
import { bool, fail, frozenCopy, millis, optionalFunction, show } from "./option-checks";
import { DEFAULTS, OPTION_NAMES, type ApiKeyAuthOptions, type DeniedHandler, type PerRequest, type VerifyRatelimit } from "./options";
import { buildStatusPolicy } from "./policy";
import { checkCost, checkRatelimits, checkTags } from "./request-shape";
import { warnUnknownOptions } from "../unknown-options";

export interface ApiKeyAuthConfig<Req = IncomingMessage, Res = ServerResponse> {
  readonly client: KeyServiceClient;
  readonly extract: ExtractOptions;
  readonly getKey: ((req: Req) => unknown) | undefined;
  readonly permissions: PerRequest<string, Req> | undefined;
  readonly cost: PerRequest<number, Req> | undefined;
  readonly ratelimits: PerRequest<VerifyRatelimit[], Req> | undefined;
  readonly tags: PerRequest<string[], Req> | undefined;
  readonly optional: boolean;
  readonly denial: DenialContext;
  readonly onDenied: DeniedHandler<Req, Res> | undefined;
  readonly passErrors: boolean;
  readonly hideCredentials: boolean;
  readonly allowPreflight: boolean;
  readonly onServiceError: "closed" | "open";
  /** ms; 0 = off. */
  readonly staleIfError: number;
  readonly call: { readonly timeout: number; readonly deadline: number; readonly retry: RetryOptions | false };
  /** undefined = no cache. */
  readonly cache: CacheSettings | undefined;
  readonly logger: Logger;
}

function parseCache(v: unknown): CacheSettings | undefined {
  if (v === false) return undefined;
  if (v === undefined || v === true) return DEFAULTS.cache;
  if (typeof v !== "object" || v === null) return fail("cache", `cache is ${show(v)}; use false or { ttl, negativeTtl, max }.`);
  const c = v as Record<string, unknown>;
  return Object.freeze({
    ttl: millis("cache.ttl", c.ttl, DEFAULTS.cache.ttl, 0),
    negativeTtl: millis("cache.negativeTtl", c.negativeTtl, DEFAULTS.cache.negativeTtl, 0),
    max: millis("cache.max", c.max, DEFAULTS.cache.max, 1),
  });
}

function parseHeader(v: unknown): { name: string | undefined; label: string } {
  if (v === false) return { name: undefined, label: "" };
  const label = v === undefined ? DEFAULTS.header : v;
  if (typeof label !== "string" || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(label)) {
    return fail("header", `header is ${show(v)}; use a header name like "X-API-Key", or false.`);
  }
  if (label.toLowerCase() === "authorization") {
    return fail("header", 'header is "Authorization", which `bearer` already reads; pick another name or use false.');
  }
  return { name: label.toLowerCase(), label };
}

function keyHint(extract: ExtractOptions, custom: boolean): string {
  if (custom) return "send your API key";
  const ways = [];
  if (extract.bearer) ways.push("`Authorization: Bearer <key>`");
  if (extract.header !== undefined) ways.push(`the ${extract.headerLabel} header`);
  return ways.length === 0 ? "send your API key" : `send it as ${ways.join(" or in ")}`;
}

export function parseOptions<Req extends IncomingMessage, Res extends ServerResponse>(
  input: ApiKeyAuthOptions<Req, Res> | undefined,
): ApiKeyAuthConfig<Req, Res> {
  if (input !== undefined && (typeof input !== "object" || input === null || Array.isArray(input))) {
    fail("options", `options must be an object, got ${show(input)}.`);
  }
  const options = (input ?? {}) as ApiKeyAuthOptions<Req, Res> & Record<string, unknown>;
  const logger = options.logger ?? defaultLogger;
  if (typeof logger.warn !== "function" || typeof logger.error !== "function") {
    fail("logger", "logger needs warn(fields, msg) and error(fields, msg) methods (pino works).");
  }
  warnUnknownOptions("apiKeyAuth", Object.keys(options), OPTION_NAMES, logger);

  const header = parseHeader(options.header);
  const extract: ExtractOptions = Object.freeze({ bearer: bool(options, "bearer", true), header: header.name, headerLabel: header.label });
  const getKey = optionalFunction<(req: Req) => unknown>("getKey", options.getKey);
  if (getKey === undefined && !extract.bearer && extract.header === undefined) {
    fail("header", "bearer is false and header is false, so no key could ever be read; enable one or pass getKey.");
  }

  const realm = options.realm ?? DEFAULTS.realm;
  if (typeof realm !== "string" || !/^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/.test(realm)) {
    fail("realm", `realm is ${show(realm)}; use printable ASCII without quotes or backslashes.`);
  }

  if (typeof options.permissions === "string") {
    try {
      parsePermissionQuery(options.permissions);
    } catch (e) {
      fail("permissions", `permissions ${JSON.stringify(options.permissions)} is not a valid query: ${(e as Error).message}.`);
    }
  } else optionalFunction("permissions", options.permissions);
  const shapeProblem = (name: string, problem: string | undefined) =>
    problem !== undefined && fail(name, `${name}${problem.startsWith("[") ? "" : " "}${problem}`);
  if (typeof options.cost !== "function") shapeProblem("cost", checkCost(options.cost));
  if (typeof options.ratelimits !== "function") shapeProblem("ratelimits", checkRatelimits(options.ratelimits));
  if (typeof options.tags !== "function") shapeProblem("tags", checkTags(options.tags));

  const onServiceError = options.onServiceError ?? "closed";
  if (onServiceError !== "closed" && onServiceError !== "open") {
    fail("onServiceError", `onServiceError is ${show(onServiceError)}; use "closed" (503) or "open" (continue without a key).`);
  }
  const onDenied = optionalFunction<DeniedHandler<Req, Res>>("onDenied", options.onDenied);
  const passErrors = bool(options, "passErrors", false);
  if (onDenied !== undefined && passErrors) fail("passErrors", "pass either onDenied or passErrors: true, not both.");

  const hideCredentials = bool(options, "hideCredentials", false);
  if (hideCredentials && getKey !== undefined) {
    fail(
      "hideCredentials",
      "hideCredentials: true has no effect with getKey (apiKeyAuth does not know where your getter read the key); remove hideCredentials and delete that value yourself, e.g. inside getKey.",
    );
  }

  const timeout = millis("timeout", options.timeout, DEFAULTS.timeout, 1);
  const deadline = millis("deadline", options.deadline, DEFAULTS.deadline, 1);
  if (timeout > deadline) {
    logger.warn(
      { timeout, deadline },
      `apiKeyAuth: timeout (${timeout} ms) is longer than deadline (${deadline} ms); each attempt is cut to the time left of the deadline`,
    );
  }
  if (options.retry !== undefined && options.retry !== false && (typeof options.retry !== "object" || options.retry === null)) {
    fail("retry", `retry is ${show(options.retry)}; use false or { attempts, initialDelay, maxDelay }.`);
  }
  // Given fields are merged over the middleware's short defaults, not the client's long ones.
  const retry: RetryOptions | false = options.retry === false ? false : Object.freeze({ ...DEFAULTS.retry, ...options.retry });
  const call = Object.freeze({ timeout, deadline, retry });
  const staleIfError = options.staleIfError === false ? 0 : millis("staleIfError", options.staleIfError, 0, 0);

  return Object.freeze({
    client: buildClient(options, logger, call),
    extract,
    getKey,
    permissions: options.permissions,
    cost: options.cost,
    // Copies, so that later changes to the caller's arrays cannot change what is sent.
    ratelimits: frozenCopy(options.ratelimits),
    tags: frozenCopy(options.tags),
    optional: bool(options, "optional", false),
    denial: Object.freeze({
      policy: buildStatusPolicy(options.policy),
      realm,
      keyHint: keyHint(extract, getKey !== undefined),
      rateLimitHeaders: bool(options, "rateLimitHeaders", true),
    }),
    onDenied,
    passErrors,
    hideCredentials,
    allowPreflight: bool(options, "allowPreflight", true),
    onServiceError,
    staleIfError,
    call,
    cache: parseCache(options.cache),
    logger,
  });
}
