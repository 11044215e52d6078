// The client's options: the public option types, and their parsing (once, at `createClient`) into a
// frozen config with every default filled in. Misconfiguration throws KeyServiceConfigError.

import { describeValue as describe, optionNames } from "../config-error";
import { defaultLogger, type Logger } from "../logger";
import type { InvalidationPublisher } from "../protocol/invalidation";
import { givenOptionNames, warnUnknownOptions } from "../unknown-options";
import { KeyServiceConfigError } from "./errors";
import { DEFAULT_RETRY, type RetryPolicy } from "./retry";
import type { TelemetryOptions, TelemetrySettings } from "./telemetry";

export interface RetryOptions {
  /** Total attempts including the first, 1..20. Default 5. */
  attempts?: number;
  /** Wait before the 2nd attempt, ms. Default 1000. */
  initialDelay?: number;
  /** Growth factor of the wait (≥ 1). Default 2. */
  factor?: number;
  /** Cap for one wait, ms; also caps a server's `Retry-After`. Default 16000. */
  maxDelay?: number;
  /** Proportional jitter 0..1: a wait is `delay × (1 ± jitter·random)`. Default 0.2. */
  jitter?: number;
}

export interface CallOptions {
  /** Per-attempt timeout for this call, ms. Default: the client's `timeout`. */
  timeout?: number;
  /** Overall budget for this call, ms. Default: the client's `deadline`. */
  deadline?: number;
  /** Retry policy for this call, merged over the client's; `false` = one attempt. */
  retry?: RetryOptions | false;
  /** Aborting it ends the call at once, rejecting with the signal's reason. */
  signal?: AbortSignal;
}

export interface ClientOptions {
  /** Root key sent as `Authorization: Bearer <rootKey>`. Default: env `UNKEY_ROOT_KEY` (required). */
  rootKey?: string;
  /**
   * Base URL of the key service; may carry a path prefix (`http://h:8787/prefix`).
   * Default: env `UNKEY_BASE_URL`, else `"https://api.unkey.com"`.
   */
  baseUrl?: string;
  /** Per-attempt timeout, ms. Default 5000. */
  timeout?: number;
  /** Overall budget for one call including retries and waits, ms. Default 31000. */
  deadline?: number;
  /** Retry policy; `false` = one attempt only. Default: see {@link RetryOptions}. */
  retry?: RetryOptions | false;
  /**
   * A fetch implementation to call the service with, instead of the default: undici's `request()`
   * on a keep-alive connection pool.
   */
  fetch?: typeof fetch;
  /** Receives retry notices (`debug`) and give-ups after retries (`warn`). Default `defaultLogger`. */
  logger?: Logger;
  /** `User-Agent` header. Default `"keyguard"`. */
  userAgent?: string;
  /** Largest response body read, bytes; a larger 2xx is a KeyServiceResponseError. Default 1 MiB. */
  maxResponseBytes?: number;
  /**
   * Where to announce key changes, e.g. a `redisStore()` shared with `apiKeyAuth({ store })`:
   * after deleteKey, updateKey, updateCredits, rerollKey and the key's permission and role changes
   * succeed, the key is invalidated (by keyId) on every instance; after deletePermission,
   * deleteRole, setRolePermissions, deleteApi, updateIdentity and deleteIdentity, every answer is.
   * Default: none.
   */
  invalidate?: InvalidationPublisher;
  /**
   * OpenTelemetry: a CLIENT span and a `http.client.request.duration` sample per HTTP request to
   * the service, following the HTTP client semantic conventions. `true` uses the global tracer and
   * meter providers (e.g. NodeSDK's); `{ tracerProvider, meterProvider }` uses those (a missing one:
   * the global one). Needs the package `@opentelemetry/api`, loaded only then. Default false.
   */
  telemetry?: boolean | TelemetryOptions;
}

/** The parsed client options. Frozen; the root key is a non-enumerable property. */
export interface ClientConfig {
  readonly rootKey: string;
  /** Normalized base: origin plus path prefix, no trailing slash. */
  readonly baseUrl: string;
  readonly timeout: number;
  readonly deadline: number;
  readonly retry: RetryPolicy | null;
  /** The caller's fetch; undefined: undici's pool. */
  readonly fetch: typeof fetch | undefined;
  readonly logger: Logger;
  readonly userAgent: string;
  readonly maxResponseBytes: number;
  readonly invalidate: InvalidationPublisher | undefined;
  /** undefined = no telemetry. */
  readonly telemetry: TelemetrySettings;
}

/** The effective settings of one call. */
export interface CallConfig {
  readonly timeout: number;
  readonly deadline: number;
  readonly retry: RetryPolicy | null;
  readonly signal: AbortSignal | undefined;
}

const DEFAULT_BASE_URL = "https://api.unkey.com";
const DEFAULT_TIMEOUT = 5000;
const DEFAULT_DEADLINE = 31_000;
const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
const DEFAULT_USER_AGENT = "keyguard";

const MAX_TIMER_MS = 2_147_483_647; // the largest delay a Node timer accepts
const CLIENT_KEYS = new Set(
  optionNames<ClientOptions>()({
    rootKey: true, baseUrl: true, timeout: true, deadline: true, retry: true, fetch: true, logger: true,
    userAgent: true, maxResponseBytes: true, invalidate: true, telemetry: true,
  }),
);
/** The names of {@link RetryOptions}, checked by the compiler; apiKeyAuth() warns about `retry.*` with them too. */
export const RETRY_OPTION_NAMES = optionNames<RetryOptions>()({ attempts: true, initialDelay: true, factor: true, maxDelay: true, jitter: true });
const KNOWN_OPTION_NAMES = Object.freeze([...CLIENT_KEYS, ...RETRY_OPTION_NAMES.map((k) => `retry.${k}`)]);
const CALL_KEYS = new Set(optionNames<CallOptions>()({ timeout: true, deadline: true, retry: true, signal: true }));
// Visible ASCII only: anything else cannot go in a header, and fetch's error would quote the value.
const HEADER_TOKEN = /^[\x21-\x7e]+$/;

/** Parses the options of `createClient` once; `env` defaults to `process.env`. */
export function parseClientOptions(options: ClientOptions = {}, env: NodeJS.ProcessEnv = process.env): ClientConfig {
  const where = "createClient";
  if (typeof options !== "object" || options === null) {
    throw new KeyServiceConfigError("options", `${where}: options must be an object, got ${describe(options)}.`);
  }
  const logger = options.logger ?? defaultLogger;
  if (typeof logger !== "object" || typeof logger.warn !== "function" || typeof logger.error !== "function") {
    throw new KeyServiceConfigError("logger", `${where}: option \`logger\` must have warn() and error() methods.`);
  }
  warnUnknownOptions(where, givenOptionNames(options, ["retry"]), KNOWN_OPTION_NAMES, logger);

  const rootKey = options.rootKey ?? env.UNKEY_ROOT_KEY;
  if (typeof rootKey !== "string" || rootKey.trim() === "") {
    throw new KeyServiceConfigError("rootKey", `${where}: no root key. Set UNKEY_ROOT_KEY or pass { rootKey }.`);
  }
  if (!HEADER_TOKEN.test(rootKey)) {
    // The value is a secret: describe the problem without quoting it.
    throw new KeyServiceConfigError(
      "rootKey",
      `${where}: the root key (option \`rootKey\` or UNKEY_ROOT_KEY) contains spaces, control or non-ASCII characters. Check for a stray newline or quote.`,
    );
  }
  const fromEnv = options.baseUrl === undefined && !!env.UNKEY_BASE_URL;
  const baseUrl = parseBaseUrl(options.baseUrl ?? (env.UNKEY_BASE_URL || DEFAULT_BASE_URL), fromEnv);
  const fetchImpl = options.fetch;
  if (fetchImpl !== undefined && typeof fetchImpl !== "function") {
    throw new KeyServiceConfigError("fetch", `${where}: option \`fetch\` must be a function, got ${describe(options.fetch)}.`);
  }
  const userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
  if (typeof userAgent !== "string" || !/^[\x20-\x7e]+$/.test(userAgent)) {
    throw new KeyServiceConfigError("userAgent", `${where}: option \`userAgent\` must be a non-empty ASCII string, got ${describe(userAgent)}.`);
  }
  const invalidate = options.invalidate;
  if (invalidate !== undefined && (typeof invalidate !== "object" || invalidate === null || typeof invalidate.invalidate !== "function")) {
    throw new KeyServiceConfigError("invalidate", `${where}: option \`invalidate\` must have an invalidate(message) method (e.g. a redisStore()), got ${describe(invalidate)}.`);
  }
  const config = {
    invalidate,
    telemetry: parseTelemetry(where, options.telemetry),
    baseUrl,
    timeout: duration(where, "timeout", options.timeout, DEFAULT_TIMEOUT),
    deadline: duration(where, "deadline", options.deadline, DEFAULT_DEADLINE),
    retry: parseRetry(where, options.retry, DEFAULT_RETRY),
    fetch: fetchImpl,
    logger,
    userAgent,
    maxResponseBytes: integer(where, "maxResponseBytes", options.maxResponseBytes, DEFAULT_MAX_RESPONSE_BYTES, 1, 2 ** 30),
  };
  Object.defineProperty(config, "rootKey", { value: rootKey, enumerable: false });
  return Object.freeze(config) as ClientConfig;
}

/** The `telemetry` object's options and the method each provider must have: the compiler checks the names. */
const PROVIDER_METHODS = Object.freeze({ tracerProvider: "getTracer", meterProvider: "getMeter" } satisfies Record<keyof TelemetryOptions, string>);

/**
 * The `telemetry` option: undefined when off, else the providers given (none: the global ones).
 * Shared with apiKeyAuth(), whose `where` names it in the errors.
 */
export function parseTelemetry(where: string, value: unknown): TelemetrySettings {
  if (value === undefined || value === false) return undefined;
  if (value === true) return Object.freeze({});
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new KeyServiceConfigError("telemetry", `${where}: option \`telemetry\` must be true, false or { tracerProvider, meterProvider }, got ${describe(value)}.`);
  }
  const given = value as Record<string, unknown>;
  const unknown = Object.keys(given).find((k) => !(k in PROVIDER_METHODS));
  if (unknown !== undefined) {
    throw new KeyServiceConfigError(`telemetry.${unknown}`, `${where}: unknown option \`telemetry.${unknown}\`. Known: tracerProvider, meterProvider.`);
  }
  for (const [name, method] of Object.entries(PROVIDER_METHODS)) {
    const provider = given[name];
    if (provider !== undefined && typeof (provider as Record<string, unknown> | null)?.[method] !== "function") {
      throw new KeyServiceConfigError(
        `telemetry.${name}`,
        `${where}: option \`telemetry.${name}\` must be an OpenTelemetry ${name === "tracerProvider" ? "TracerProvider" : "MeterProvider"} (with ${method}()), got ${describe(provider)}.`,
      );
    }
  }
  return Object.freeze({ ...(given as TelemetryOptions) });
}

/** The settings of one call: `options` over the client's config. */
export function resolveCallOptions(config: ClientConfig, options: CallOptions | undefined, where: string): CallConfig {
  const preset = options === undefined ? undefined : PRESETS.get(options);
  if (preset !== undefined) return preset;
  if (options === undefined) return { timeout: config.timeout, deadline: config.deadline, retry: config.retry, signal: undefined };
  if (typeof options !== "object" || options === null) {
    throw new KeyServiceConfigError("options", `${where}: call options must be an object, got ${describe(options)}.`);
  }
  const unknown = Object.keys(options).find((k) => !CALL_KEYS.has(k));
  if (unknown !== undefined) {
    throw new KeyServiceConfigError(unknown, `${where}: unknown call option \`${unknown}\`. Known: ${[...CALL_KEYS].join(", ")}.`);
  }
  const signal = options.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new KeyServiceConfigError("signal", `${where}: option \`signal\` must be an AbortSignal, got ${describe(signal)}.`);
  }
  return {
    timeout: duration(where, "timeout", options.timeout, config.timeout),
    deadline: duration(where, "deadline", options.deadline, config.deadline),
    retry: options.retry === undefined ? config.retry : parseRetry(where, options.retry, config.retry ?? DEFAULT_RETRY),
    signal,
  };
}

/** A bad base URL as quoted in an error: never a part that may hold a secret. */
function shownBaseUrl(value: unknown): string {
  if (typeof value !== "string") return describe(value);
  // user:password@ may be in it: never quoted, even when it does not parse.
  if (value.includes("@")) return 'a value containing "@" (not shown: it may hold credentials)';
  // A query or fragment may carry a token: only the origin and path before it are quoted.
  const cut = value.search(/[?#]/);
  return cut === -1 ? describe(value) : `${describe(value.slice(0, cut))} (its query and fragment are left out of this message)`;
}

function parseBaseUrl(value: unknown, fromEnv: boolean): string {
  const name = fromEnv ? "UNKEY_BASE_URL" : "option `baseUrl`";
  const fail = (why: string) =>
    new KeyServiceConfigError("baseUrl", `createClient: ${name} ${why}, got ${shownBaseUrl(value)}. Pass e.g. { baseUrl: "https://api.unkey.com" }.`);
  if (typeof value !== "string") throw fail("must be a string");
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw fail("is not a valid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw fail("must use http: or https:");
  if (url.username !== "" || url.password !== "") {
    // Do not echo it: the URL carries credentials.
    throw new KeyServiceConfigError("baseUrl", `createClient: ${name} must not contain credentials (user:password@). Pass the root key as { rootKey }.`);
  }
  if (url.search !== "" || url.hash !== "") throw fail("must not have a query or fragment");
  return url.origin + url.pathname.replace(/\/+$/, "");
}

function parseRetry(where: string, value: RetryOptions | false | undefined, base: RetryPolicy): RetryPolicy | null {
  if (value === false) return null;
  if (value === undefined) return base;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new KeyServiceConfigError("retry", `${where}: option \`retry\` must be an object or false, got ${describe(value)}.`);
  }
  const factor = value.factor ?? base.factor;
  if (typeof factor !== "number" || !Number.isFinite(factor) || factor < 1 || factor > 100) {
    throw new KeyServiceConfigError("retry.factor", `${where}: option \`retry.factor\` must be a number from 1 to 100, got ${describe(factor)}.`);
  }
  const jitter = value.jitter ?? base.jitter;
  if (typeof jitter !== "number" || !(jitter >= 0 && jitter <= 1)) {
    throw new KeyServiceConfigError("retry.jitter", `${where}: option \`retry.jitter\` must be a number from 0 to 1, got ${describe(jitter)}.`);
  }
  return Object.freeze({
    attempts: integer(where, "retry.attempts", value.attempts, base.attempts, 1, 20),
    initialDelay: integer(where, "retry.initialDelay", value.initialDelay, base.initialDelay, 0, MAX_TIMER_MS),
    factor,
    maxDelay: integer(where, "retry.maxDelay", value.maxDelay, base.maxDelay, 0, MAX_TIMER_MS),
    jitter,
  });
}

function duration(where: string, name: string, value: unknown, fallback: number): number {
  return integer(where, name, value, fallback, 1, MAX_TIMER_MS);
}

function integer(where: string, name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new KeyServiceConfigError(
      name,
      `${where}: option \`${name}\` must be an integer from ${min} to ${max}, got ${describe(value)}. Leave it undefined for the default (${fallback}).`,
    );
  }
  return value;
}

/** Call settings with every default filled in. */
export interface CallSettings {
  readonly timeout: number;
  readonly deadline: number;
  /** null = one attempt. */
  readonly retry: RetryPolicy | null;
}

// Call options normalised by normaliseCallSettings: used by the client as they are, not checked again.
const PRESETS = new WeakMap<object, CallConfig>();

/**
 * Normalises `timeout`, `deadline` and `retry` once (e.g. when `apiKeyAuth()` is created), over the
 * caller's own `defaults`: a bad value throws KeyServiceConfigError naming `where` and those
 * defaults. Returns the settings and frozen call options that this client's calls then use
 * without checking them again.
 */
export function normaliseCallSettings(
  where: string,
  given: { timeout?: unknown; deadline?: unknown; retry?: unknown },
  defaults: { readonly timeout: number; readonly deadline: number; readonly retry: RetryPolicy },
): { settings: CallSettings; options: CallOptions } {
  const settings: CallSettings = Object.freeze({
    timeout: duration(where, "timeout", given.timeout, defaults.timeout),
    deadline: duration(where, "deadline", given.deadline, defaults.deadline),
    retry: parseRetry(where, given.retry as RetryOptions | false | undefined, defaults.retry),
  });
  const options: CallOptions = Object.freeze({ timeout: settings.timeout, deadline: settings.deadline, retry: settings.retry ?? false });
  PRESETS.set(options, Object.freeze({ ...settings, signal: undefined }));
  return { settings, options };
}
