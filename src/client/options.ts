// The client's options: the public option types, and their parsing (once, at `createClient`) into a
// frozen config with every default filled in. Misconfiguration throws KeyServiceConfigError.

import { optionNames } from "../config-error";
import type { Logger } from "../logger";
import { HIDDEN, optionChecks, type OptionChecks } from "../option-checks";
import type { InvalidationPublisher } from "../protocol/invalidation-message";
import { givenOptionNames } from "../unknown-options";
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
   * Base URL of the key service; may carry a path prefix (`http://h:8787/prefix`), but not the `/v2`
   * the client adds itself (refused).
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
   * the global one); `api`: the `@opentelemetry/api` module, where code is bundled. Needs the package
   * `@opentelemetry/api`, loaded only then. Default false.
   */
  telemetry?: boolean | TelemetryOptions;
  /**
   * TLS settings of the connections to an `https:` `baseUrl`: `{ ca }` to trust the CA that signed
   * the service's certificate, `{ cert, key }` to present a client certificate (mutual TLS). Only
   * for the default transport (undici): with `fetch`, and in `createFetchClient()`, configure TLS in
   * that fetch instead (e.g. undici's `fetch` with `dispatcher: new Agent({ connect: { ca, cert, key } })`).
   * Default: none (Node.js's CAs, no client certificate).
   */
  tls?: ClientTlsOptions;
}

/** PEM text (or its bytes), as Node.js's TLS takes it. */
type Pem = string | Uint8Array;

/** TLS towards a key service served over HTTPS by a CA of your own, or asking for a client certificate. */
export interface ClientTlsOptions {
  /**
   * The CA certificates that signed the service's certificate, trusted instead of Node.js's own
   * list (PEM; several in one text, or an array). Default: Node.js's list.
   */
  ca?: Pem | Pem[];
  /** The client certificate (PEM, with its chain) for a service that asks for one (mutual TLS). With `key`. */
  cert?: Pem;
  /** The client certificate's private key (PEM, unencrypted). With `cert`. Never shown in a message. */
  key?: Pem;
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
  /** undefined = Node.js's defaults. */
  readonly tls: Readonly<ClientTlsOptions> | undefined;
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

const CLIENT_KEYS = optionNames<ClientOptions>()({
  rootKey: true,
  baseUrl: true,
  timeout: true,
  deadline: true,
  retry: true,
  fetch: true,
  logger: true,
  userAgent: true,
  maxResponseBytes: true,
  invalidate: true,
  telemetry: true,
  tls: true,
});
/** The names of {@link ClientTlsOptions}; apiKeyAuth() checks `tls.*` with them too. */
export const TLS_OPTION_NAMES = optionNames<ClientTlsOptions>()({ ca: true, cert: true, key: true });
/** The names of {@link RetryOptions}, checked by the compiler; apiKeyAuth() refuses other `retry.*` names with them too. */
export const RETRY_OPTION_NAMES = optionNames<RetryOptions>()({
  attempts: true,
  initialDelay: true,
  factor: true,
  maxDelay: true,
  jitter: true,
});
const KNOWN_OPTION_NAMES = Object.freeze([
  ...CLIENT_KEYS,
  ...RETRY_OPTION_NAMES.map((k) => `retry.${k}`),
  ...TLS_OPTION_NAMES.map((k) => `tls.${k}`),
]);
const CALL_KEYS = optionNames<CallOptions>()({ timeout: true, deadline: true, retry: true, signal: true });
// Visible ASCII only: anything else cannot go in a header, and fetch's error would quote the value.
const HEADER_TOKEN = /^[\x21-\x7e]+$/;

const check: OptionChecks = optionChecks("createClient", KeyServiceConfigError);

/** Parses the options of `createClient` once; `env` defaults to `process.env`. */
export function parseClientOptions(
  input: ClientOptions = {},
  env: NodeJS.ProcessEnv = typeof process === "undefined" ? {} : process.env,
  overFetch = false,
): ClientConfig {
  const options = check.options(input, "Pass an object such as { rootKey, baseUrl }, or nothing.") as ClientOptions;
  const logger = check.logger(options.logger);
  check.unknownNames(givenOptionNames(options, ["retry", "tls"]), KNOWN_OPTION_NAMES);

  const rootKey = options.rootKey ?? env.UNKEY_ROOT_KEY;
  if (typeof rootKey !== "string" || rootKey.trim() === "") check.fail("rootKey", "no root key. Set UNKEY_ROOT_KEY or pass { rootKey }.");
  if (!HEADER_TOKEN.test(rootKey)) {
    // The value is a secret: describe the problem without quoting it.
    check.fail(
      "rootKey",
      "the root key (option `rootKey` or UNKEY_ROOT_KEY) contains spaces, control or non-ASCII characters. Check for a stray newline or quote.",
    );
  }
  const fromEnv = options.baseUrl === undefined && !!env.UNKEY_BASE_URL;
  const url = check.url("baseUrl", options.baseUrl ?? (env.UNKEY_BASE_URL || DEFAULT_BASE_URL), {
    protocols: ["http:", "https:"],
    example: DEFAULT_BASE_URL,
    show: "origin",
    noCredentials: "pass the root key as { rootKey }.",
    noQuery: true,
    ...(fromEnv && { label: "UNKEY_BASE_URL" }),
  });
  const baseUrl = url.origin + url.pathname.replace(/\/+$/, "");
  if (/\/v2$/i.test(baseUrl)) {
    // Requests would go to …/v2/v2/keys.verifyKey and fail with 404 at the first call.
    const without = baseUrl.replace(/\/v2$/i, "");
    check.invalid(
      "baseUrl",
      baseUrl,
      `Leave /v2 off: the client adds /v2/<operation> itself. Use ${without}.`,
      fromEnv ? "UNKEY_BASE_URL" : "baseUrl",
    );
  }
  const config = {
    invalidate: check.withMethods<InvalidationPublisher>(
      "invalidate",
      options.invalidate,
      ["invalidate"],
      "Pass an object with an invalidate(message) method, e.g. a redisStore().",
    ),
    telemetry: parseTelemetry(check, options.telemetry),
    tls: parseTls(check, options.tls, overFetch || options.fetch !== undefined),
    baseUrl,
    timeout: check.duration("timeout", options.timeout, { default: DEFAULT_TIMEOUT }),
    deadline: check.duration("deadline", options.deadline, { default: DEFAULT_DEADLINE }),
    retry: parseRetry(check, options.retry, DEFAULT_RETRY),
    fetch: check.func<typeof fetch>("fetch", options.fetch, "with the signature of fetch()"),
    logger,
    userAgent: check.string("userAgent", options.userAgent, {
      pattern: /^[\x20-\x7e]+$/,
      default: DEFAULT_USER_AGENT,
      fix: "Use a non-empty ASCII string.",
    }),
    maxResponseBytes: check.integer("maxResponseBytes", options.maxResponseBytes, {
      min: 1,
      max: 2 ** 30,
      default: DEFAULT_MAX_RESPONSE_BYTES,
      unit: "bytes",
    }),
  };
  Object.defineProperty(config, "rootKey", { value: rootKey, enumerable: false });
  return Object.freeze(config) as ClientConfig;
}

const isPem = (v: unknown): v is Pem => (typeof v === "string" && v.trim() !== "") || v instanceof Uint8Array;

/**
 * The `tls` option: PEM texts, `cert` and `key` together; refused over a fetch, which makes its
 * own connections (apiKeyAuth() passes its own to the client it builds).
 */
function parseTls(check: OptionChecks, value: unknown, overFetch: boolean): Readonly<ClientTlsOptions> | undefined {
  const given = check.object("tls", value, "Pass { ca } and/or { cert, key }, each PEM text.");
  if (given === undefined) return undefined;
  if (overFetch) {
    check.fail(
      "tls",
      "tls applies to the default transport (undici), not to a fetch: configure TLS in that fetch instead, e.g. undici's fetch with { dispatcher: new Agent({ connect: { ca, cert, key } }) }.",
    );
  }
  const { ca, cert, key } = given;
  if (ca !== undefined && !(isPem(ca) || (Array.isArray(ca) && ca.length > 0 && ca.every(isPem)))) {
    check.invalid("tls.ca", ca, "Pass the CA certificates as PEM text (a string or its bytes), or an array of them.");
  }
  if (cert !== undefined && !isPem(cert))
    check.invalid("tls.cert", cert, "Pass the client certificate as PEM text (a string or its bytes).");
  // The key is a secret: never shown.
  if (key !== undefined && !isPem(key)) check.invalid("tls.key", HIDDEN, "Pass the private key as PEM text (a string or its bytes).");
  if ((cert === undefined) !== (key === undefined)) {
    check.fail(
      cert === undefined ? "tls.key" : "tls.cert",
      "pass tls.cert and tls.key together: a client certificate and its private key.",
    );
  }
  return Object.freeze({
    ...(ca !== undefined && { ca }),
    ...(cert !== undefined && { cert }),
    ...(key !== undefined && { key }),
  } as ClientTlsOptions);
}

/** The `telemetry` object's providers and the method each must have: the compiler checks the names. */
const PROVIDER_METHODS = Object.freeze({ tracerProvider: "getTracer", meterProvider: "getMeter" } satisfies Record<
  Exclude<keyof TelemetryOptions, "api">,
  string
>);
const TELEMETRY_NAMES = [...Object.keys(PROVIDER_METHODS), "api"].map((k) => `telemetry.${k}`);

/**
 * The `telemetry` option: undefined when off, else the providers given (none: the global ones).
 * Shared with apiKeyAuth(), whose checks name it in the errors.
 */
export function parseTelemetry(check: OptionChecks, value: unknown): TelemetrySettings {
  if (value === undefined || value === false) return undefined;
  if (value === true) return Object.freeze({});
  const given = check.object("telemetry", value, "Pass true, false or { tracerProvider, meterProvider, api }.")!;
  check.unknownNames(
    Object.keys(given).map((k) => `telemetry.${k}`),
    TELEMETRY_NAMES,
  );
  for (const [name, method] of Object.entries(PROVIDER_METHODS)) {
    const kind = name === "tracerProvider" ? "TracerProvider" : "MeterProvider";
    check.withMethods(`telemetry.${name}`, given[name], [method], `Pass an OpenTelemetry ${kind} (with ${method}()).`);
  }
  const api = given.api as { trace?: { getTracerProvider?: unknown } } | undefined;
  if (api !== undefined && typeof api?.trace?.getTracerProvider !== "function") {
    check.invalid("telemetry.api", api, 'Pass the @opentelemetry/api module: import * as api from "@opentelemetry/api".');
  }
  return Object.freeze({ ...(given as TelemetryOptions) });
}

/** The settings of one call: `options` over the client's config. */
export function resolveCallOptions(config: ClientConfig, options: CallOptions | undefined, where: string): CallConfig {
  const preset = options === undefined ? undefined : PRESETS.get(options);
  if (preset !== undefined) return preset;
  if (options === undefined) return { timeout: config.timeout, deadline: config.deadline, retry: config.retry, signal: undefined };
  const check = optionChecks(where, KeyServiceConfigError);
  const given = check.object("options", options, "Pass call options such as { timeout, signal }, or nothing.")!;
  check.unknownNames(Object.keys(given), CALL_KEYS);
  const signal = options.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal))
    check.invalid("signal", signal, "Pass an AbortSignal, e.g. AbortSignal.timeout(1000).");
  return {
    timeout: check.duration("timeout", options.timeout, { default: config.timeout }),
    deadline: check.duration("deadline", options.deadline, { default: config.deadline }),
    retry: options.retry === undefined ? config.retry : parseRetry(check, options.retry, config.retry ?? DEFAULT_RETRY),
    signal,
  };
}

function parseRetry(check: OptionChecks, value: RetryOptions | false | undefined, base: RetryPolicy): RetryPolicy | null {
  if (value === false) return null;
  if (value === undefined) return base;
  const retry = check.object("retry", value, "Pass { attempts, initialDelay, factor, maxDelay, jitter } or false.")!;
  return Object.freeze({
    attempts: check.integer("retry.attempts", retry.attempts, { min: 1, max: 20, default: base.attempts }),
    initialDelay: check.duration("retry.initialDelay", retry.initialDelay, { min: 0, default: base.initialDelay }),
    factor: check.number("retry.factor", retry.factor, { min: 1, max: 100, default: base.factor }),
    maxDelay: check.duration("retry.maxDelay", retry.maxDelay, { min: 0, default: base.maxDelay }),
    jitter: check.number("retry.jitter", retry.jitter, { min: 0, max: 1, default: base.jitter }),
  });
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
 * caller's own `defaults`: a bad value throws the caller's ConfigError (through its `check`) naming
 * those defaults. Returns the settings and frozen call options that this client's calls then use
 * without checking them again.
 */
export function normaliseCallSettings(
  check: OptionChecks,
  given: { timeout?: unknown; deadline?: unknown; retry?: unknown },
  defaults: { readonly timeout: number; readonly deadline: number; readonly retry: RetryPolicy },
): { settings: CallSettings; options: CallOptions } {
  const settings: CallSettings = Object.freeze({
    timeout: check.duration("timeout", given.timeout, { default: defaults.timeout }),
    deadline: check.duration("deadline", given.deadline, { default: defaults.deadline }),
    retry: parseRetry(check, given.retry as RetryOptions | false | undefined, defaults.retry),
  });
  const options: CallOptions = Object.freeze({ timeout: settings.timeout, deadline: settings.deadline, retry: settings.retry ?? false });
  PRESETS.set(options, Object.freeze({ ...settings, signal: undefined }));
  return { settings, options };
}
