// Parses `apiKeyAuth()` options once, at factory time, into a frozen config with every default
// filled in, and builds the key-service client. Misconfiguration throws ConfigError naming the fix.

import type { IncomingMessage, ServerResponse } from "node:http";
import { createClient, type KeyServiceClient, type RetryOptions } from "../client";
import { defaultLogger, type Logger } from "../logger";
import { parsePermissionQuery } from "../protocol/permission-query";
import type { CacheSettings } from "./cache";
import type { DenialContext } from "./denials";
import { ConfigError } from "./errors";
import type { ExtractOptions } from "./extract-key";
import {
  DEFAULTS,
  OPTION_NAMES,
  type ApiKeyAuthOptions,
  type DeniedHandler,
  type PerRequest,
  type VerifyRatelimit,
} from "./options";
import { buildStatusPolicy } from "./policy";
import { checkCost, checkRatelimits, checkTags } from "./request-shape";

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

const fail = (option: string, message: string): never => {
  throw new ConfigError(option, `apiKeyAuth: ${message}`);
};
const show = (v: unknown): string => (typeof v === "function" ? "a function" : JSON.stringify(v) ?? String(v));

function bool(options: Record<string, unknown>, name: string, fallback: boolean): boolean {
  const v = options[name];
  if (v === undefined) return fallback;
  return typeof v === "boolean" ? v : fail(name, `${name} is ${show(v)}; use true or false.`);
}

function millis(name: string, v: unknown, fallback: number, min: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > 2_147_483_647) {
    return fail(name, `${name} is ${show(v)}; use a whole number of milliseconds ≥ ${min}.`);
  }
  return v;
}

function optionalFunction<T>(name: string, v: unknown): T | undefined {
  if (v === undefined || typeof v === "function") return v as T | undefined;
  return fail(name, `${name} is ${show(v)}; pass a function.`);
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const next = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = row[j]!;
      row[j] = next;
    }
  }
  return row[b.length]!;
}

function warnUnknown(options: Record<string, unknown>, logger: Logger): void {
  const unknown = Object.keys(options).filter((k) => !OPTION_NAMES.includes(k));
  if (unknown.length === 0) return;
  const suggestions: Record<string, string> = {};
  for (const name of unknown) {
    const near = OPTION_NAMES.find((k) => k.toLowerCase() === name.toLowerCase() || editDistance(k, name) <= 2);
    if (near !== undefined) suggestions[name] = near;
  }
  logger.warn({ unknownOptions: unknown, didYouMean: suggestions }, `apiKeyAuth: ignoring unknown option(s) ${unknown.join(", ")}`);
}

function buildClient(options: ApiKeyAuthOptions<never, never>, logger: Logger, call: ApiKeyAuthConfig["call"]): KeyServiceClient {
  if (options.client !== undefined) {
    if (typeof options.client !== "object" || options.client === null || typeof options.client.keys?.verifyKey !== "function") {
      return fail("client", `client is ${show(options.client)}; pass createClient() from "keyguard/client".`);
    }
    if (options.rootKey !== undefined || options.baseUrl !== undefined) {
      return fail("client", "pass either client or rootKey/baseUrl, not both; the client already holds them.");
    }
    return options.client;
  }
  const rootKey = options.rootKey ?? process.env.UNKEY_ROOT_KEY;
  if (typeof rootKey !== "string" || rootKey.trim() === "") {
    return fail("rootKey", "no root key. Set UNKEY_ROOT_KEY or pass { rootKey } (or a prebuilt { client }).");
  }
  try {
    // Failures are logged by the middleware, throttled; the client's per-call warnings go to debug.
    const clientLogger: Logger = {
      debug: (fields, message) => logger.debug?.(fields, message),
      warn: (fields, message) => logger.debug?.(fields, message),
      error: (fields, message) => logger.error(fields, message),
    };
    return createClient({ rootKey, baseUrl: options.baseUrl, logger: clientLogger, ...call });
  } catch (e) {
    const option = typeof (e as { option?: unknown }).option === "string" ? (e as { option: string }).option : "baseUrl";
    return fail(option, (e as Error).message);
  }
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
  warnUnknown(options, logger);

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

  const timeout = millis("timeout", options.timeout, DEFAULTS.timeout, 1);
  const deadline = millis("deadline", options.deadline, DEFAULTS.deadline, 1);
  if (options.retry !== undefined && options.retry !== false && (typeof options.retry !== "object" || options.retry === null)) {
    fail("retry", `retry is ${show(options.retry)}; use false or { attempts, initialDelay, maxDelay }.`);
  }
  // Given fields are merged over the middleware's short defaults, not the client's long ones.
  const retry: RetryOptions | false = options.retry === false ? false : Object.freeze({ ...DEFAULTS.retry, ...options.retry });
  const call = Object.freeze({ timeout, deadline, retry });
  const staleIfError = options.staleIfError === false ? 0 : millis("staleIfError", options.staleIfError, 0, 0);

  return Object.freeze({
    client: buildClient(options as ApiKeyAuthOptions<never, never>, logger, call),
    extract,
    getKey,
    permissions: options.permissions,
    cost: options.cost,
    ratelimits: options.ratelimits,
    tags: options.tags,
    optional: bool(options, "optional", false),
    denial: Object.freeze({
      policy: buildStatusPolicy(options.policy),
      realm,
      keyHint: keyHint(extract, getKey !== undefined),
      rateLimitHeaders: bool(options, "rateLimitHeaders", true),
    }),
    onDenied,
    passErrors,
    hideCredentials: bool(options, "hideCredentials", false),
    allowPreflight: bool(options, "allowPreflight", true),
    onServiceError,
    staleIfError,
    call,
    cache: parseCache(options.cache),
    logger,
  });
}
