// The options of `apiKeyAuth()` and of every other adapter in one place: the public types, the
// defaults, the compiler-checked list of names, and the parsing, once at factory time, into a frozen
// config (the key-service client built by the adapter's factory, retry and timeout normalised by the
// client's own function). Misconfiguration throws ConfigError naming the option, the bad value and the fix.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { CallOptions, KeyServiceClient, RetryOptions } from "../client";
import {
  normaliseCallSettings,
  parseTelemetry,
  RETRY_OPTION_NAMES,
  TLS_OPTION_NAMES,
  type CallSettings,
  type ClientOptions,
  type ClientTlsOptions,
} from "../client/options";
import { telemetryMeter, type TelemetryOptions, type TelemetrySettings } from "../client/telemetry";
import { ConfigError, optionNames } from "../config-error";
import type { Logger } from "../logger";
import { optionChecks, type OptionChecks } from "../option-checks";
import { PermissionQuerySyntaxError } from "../protocol/permission-query";
import { givenOptionNames } from "../unknown-options";
import type { DenialContext } from "./denials";
import type { KeyguardError } from "./errors";
import type { ExtractOptions } from "./extract-key";
import type { DecisionHandler } from "./on-decision";
import { buildStatusPolicy, type StatusPolicyOverrides } from "./policy";
import type { RotationHeaderSettings } from "./rotation-headers";
import {
  checkShapeOption,
  planShape,
  type PerRequest,
  type ResolvedShape,
  type ShapeOptions,
  type ShapePlan,
  type VerifyRatelimit,
} from "./request-shape";
import { memoryStore, type Store, type StoreSettings } from "./cache-store";
import type { UnknownKeyLimitSettings } from "./unknown-key-limit";
import type { LazyMigrationSettings, MigrateFromOptions } from "./lazy-migration";
import type { ShadowOptions, ShadowSettings } from "./shadow";

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
  /** Most answers kept in memory (with the default store). Default 1000. */
  max?: number;
}

/** `unknownKeyLimit`: how many unknown or malformed keys one client address may send per window. */
export interface UnknownKeyLimitOptions<Req> {
  /** Unknown (NOT_FOUND) or malformed keys one address may send per window; the next get 429. Required. */
  max: number;
  /** The window, ms: counted from the first such key; the block lasts until it ends. Default 60000. */
  window?: number;
  /**
   * The request's client address. Default: the framework's, which follows its proxy setting
   * (Express `req.ip` with `trust proxy`, Fastify `request.ip` with `trustProxy`, Koa `ctx.ip`
   * with `app.proxy`; Node's socket address otherwise). Required with `keyguard/web` and
   * `keyguard/hono`, which see no address. Return undefined to leave a request uncounted.
   */
  address?: (req: Req) => string | undefined;
}

/** The options every adapter takes (`apiKeyAuth()` adds `onDenied` and `passErrors`). */
export interface AuthOptions<Req> {
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
  /**
   * Refuse a key of the checksummed format (`[prefix_]kg0…`, see docs/security.md) whose checksum
   * fails with 401 `INVALID_CHECKSUM` at once: no cache lookup, no call to the key service. Keys of
   * any other format are not checked. Set false only if your service holds imported keys that
   * happen to look like that format. Default true.
   */
  rejectBadChecksums?: boolean;
  /** Let requests without a key through (without `req.apiKey`); an invalid key is still denied. Default false. */
  optional?: boolean;
  /** `realm` of the `WWW-Authenticate` challenge. Default `"api"`. */
  realm?: string;
  /** Status overrides per outcome, merged over the default table (see STATUS_PRESETS). Default: none. */
  policy?: StatusPolicyOverrides;
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
   * Tell callers in-band that their key is ending: an admitted request whose key expires within
   * `window` (ms; `true`: 7 days) gets `Deprecation: @<when the window began>` (RFC 9745) and
   * `Sunset: <its expiry>` (RFC 8594). A rerolled key's grace period is the end of its life, so
   * callers of the old key see both until the grace ends. Default false.
   */
  rotationHeaders?: boolean | { window: number };
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
  /**
   * Where answers are kept: `memoryStore()` (the default, one per apiKeyAuth(), `max` from
   * `cache.max`) or a shared one such as `redisStore()` from "keyguard/redis", whose invalidations
   * reach every instance. Not with `cache: false` or `cache.max` (give `max` to the store).
   */
  store?: Store;
  /**
   * After `max` unknown keys (the service answered NOT_FOUND) or malformed ones (refused without a
   * call: bad credentials, an over-long key, a failed checksum) from one client address within
   * `window` ms, that address's keys are answered 429 `TOO_MANY_UNKNOWN_KEYS` with `Retry-After`,
   * without a call to the key service, until the window ends; a key the verification cache holds
   * as valid still passes. Counted in the store (`redisStore()`: across the fleet). Default: off.
   */
  unknownKeyLimit?: UnknownKeyLimitOptions<Req> | false;
  /** Receives warnings (service down, failing open) and errors (misconfiguration). Default `defaultLogger`. */
  logger?: Logger;
  /**
   * Called synchronously once per request that reached a decision (admitted or denied; not for CORS
   * preflights let through, nor when `getKey` or an option function throws), before the request
   * goes on or is answered, with the outcome, the code, the keyId, where the answer came from and
   * the time the service took. A throw is logged (throttled) and changes nothing. Default: none.
   */
  onDecision?: DecisionHandler<Req>;
  /**
   * OpenTelemetry for the calls to the key service: a CLIENT span and a `http.client.request.duration`
   * sample per HTTP request (none for answers from the cache). `true`: the global providers;
   * `{ tracerProvider, meterProvider }`: those. Needs `@opentelemetry/api`. With `client`, set it
   * on `createClient()` instead. Default false.
   */
  telemetry?: boolean | TelemetryOptions;
  /**
   * TLS towards a key service served over HTTPS: `{ ca }` to trust the CA that signed its
   * certificate, `{ cert, key }` to present a client certificate (mutual TLS); PEM texts. Node.js
   * adapters only (the Web ones reach the service with `fetch`); with `client`, set it on
   * `createClient()` instead. Default: none.
   */
  tls?: ClientTlsOptions;
  /**
   * Lazy migration from another key service (docs/migration.md): a key the key service answers
   * NOT_FOUND is verified once at the old service (without a charge), its record read there and
   * imported (`keys.migrateKeys`, by its SHA-256) before the request is verified here, which charges
   * it once. The root key needs `create_key` on `intoApiId`. Default: off.
   */
  migrateFrom?: MigrateFromOptions;
  /**
   * Shadow verification (docs/migration.md): a sampled share of the verifications the key service
   * answered is sent to a second service after the decision, and disagreements are reported. Never
   * changes or delays an answer. Default: off.
   */
  shadow?: ShadowOptions<Req>;
}

export interface ApiKeyAuthOptions<
  Req extends IncomingMessage = IncomingMessage,
  Res extends ServerResponse = ServerResponse,
> extends AuthOptions<Req> {
  /** Answer denials yourself. Default: a problem+json response. */
  onDenied?: DeniedHandler<Req, Res>;
  /** Call `next(err)` with the denial instead of answering (for apps with an error handler). Default false. */
  passErrors?: boolean;
}

const DEFAULTS = Object.freeze({
  header: "X-API-Key",
  realm: "api",
  timeout: 1000,
  deadline: 2500,
  retry: Object.freeze({ attempts: 2, initialDelay: 100, factor: 2, maxDelay: 500, jitter: 0.2 }),
  cache: Object.freeze({ ttl: 30_000, negativeTtl: 5_000, max: 1000 }),
  staleMax: 1000,
  unknownKeyWindow: 60_000,
  rotationWindow: 7 * 86_400_000,
});

/** Every option name; the compiler fails when an option of ApiKeyAuthOptions is missing here. */
export const OPTION_NAMES = optionNames<ApiKeyAuthOptions>()({
  rootKey: true,
  baseUrl: true,
  client: true,
  bearer: true,
  header: true,
  getKey: true,
  permissions: true,
  cost: true,
  ratelimits: true,
  tags: true,
  rejectBadChecksums: true,
  optional: true,
  realm: true,
  policy: true,
  onDenied: true,
  passErrors: true,
  hideCredentials: true,
  allowPreflight: true,
  rateLimitHeaders: true,
  rotationHeaders: true,
  onServiceError: true,
  staleIfError: true,
  timeout: true,
  deadline: true,
  retry: true,
  cache: true,
  store: true,
  unknownKeyLimit: true,
  logger: true,
  onDecision: true,
  telemetry: true,
  tls: true,
  migrateFrom: true,
  shadow: true,
});

/** The names of {@link MigrateFromOptions}; the compiler fails when one is missing here. */
const MIGRATE_FROM_NAMES = optionNames<MigrateFromOptions>()({
  baseUrl: true,
  rootKey: true,
  client: true,
  apiId: true,
  intoApiId: true,
  migrationId: true,
  until: true,
});

/** The names of {@link ShadowOptions}; the compiler fails when one is missing here. */
const SHADOW_NAMES = optionNames<ShadowOptions<unknown>>()({
  baseUrl: true,
  rootKey: true,
  client: true,
  sample: true,
  onDisagreement: true,
});

/** The names of {@link CacheOptions}; the compiler fails when one is missing here. */
const CACHE_OPTION_NAMES = optionNames<CacheOptions>()({ ttl: true, negativeTtl: true, max: true });

/** The names of {@link UnknownKeyLimitOptions}; the compiler fails when one is missing here. */
const UNKNOWN_KEY_LIMIT_NAMES = optionNames<UnknownKeyLimitOptions<unknown>>()({ max: true, window: true, address: true });

/** Every name known (any other is refused): the options, and those of `cache` and `retry` as `cache.ttl`, …. */
const KNOWN_NAMES = Object.freeze([
  ...OPTION_NAMES,
  ...CACHE_OPTION_NAMES.map((k) => `cache.${k}`),
  ...UNKNOWN_KEY_LIMIT_NAMES.map((k) => `unknownKeyLimit.${k}`),
  ...RETRY_OPTION_NAMES.map((k) => `retry.${k}`),
  ...TLS_OPTION_NAMES.map((k) => `tls.${k}`),
  ...MIGRATE_FROM_NAMES.map((k) => `migrateFrom.${k}`),
  ...SHADOW_NAMES.map((k) => `shadow.${k}`),
]);

export interface ApiKeyAuthConfig<Req = IncomingMessage, Res = ServerResponse> {
  readonly client: KeyServiceClient;
  readonly extract: ExtractOptions;
  readonly getKey: ((req: Req) => unknown) | undefined;
  /** The request shape when no option depends on the request (computed here, once). */
  readonly fixedShape: ResolvedShape | undefined;
  /** One request's shape: only the option functions run and are checked; the static options were resolved here. */
  readonly resolveShape: ShapePlan<Req>["resolve"];
  readonly optional: boolean;
  /** Refuse keys of the checksummed format whose checksum fails, before the cache and the service. */
  readonly rejectBadChecksums: boolean;
  readonly denial: DenialContext;
  readonly onDenied: DeniedHandler<Req, Res> | undefined;
  readonly passErrors: boolean;
  readonly hideCredentials: boolean;
  readonly allowPreflight: boolean;
  /** undefined = off. */
  readonly rotationHeaders: RotationHeaderSettings | undefined;
  readonly onServiceError: "closed" | "open";
  /** ms; 0 = off. */
  readonly staleIfError: number;
  readonly staleMax: number;
  /** Normalised once: `options` go to every verifyKey call as they are. */
  readonly call: { readonly settings: CallSettings; readonly options: CallOptions };
  /** undefined = no cache. */
  readonly cache: StoreSettings | undefined;
  readonly store: Store | undefined;
  /** undefined = off. */
  readonly unknownKeyLimit: (UnknownKeyLimitSettings<Req> & { readonly store: CountingStore }) | undefined;
  readonly logger: Logger;
  readonly onDecision: DecisionHandler<Req> | undefined;
  /** undefined = off; `forget` is the decision core's. */
  readonly migrateFrom: Omit<LazyMigrationSettings, "forget"> | undefined;
  /** undefined = off. */
  readonly shadow: ShadowSettings<Req> | undefined;
}

const check: OptionChecks = optionChecks("apiKeyAuth", ConfigError);

function parseCache(v: unknown): (StoreSettings & { max: number | undefined }) | undefined {
  if (v === false) return undefined;
  if (v === undefined || v === true) return { ...DEFAULTS.cache, max: undefined };
  const c = check.object("cache", v, "Use false or { ttl, negativeTtl, max }.")!;
  return {
    ttl: check.duration("cache.ttl", c.ttl, { min: 0, default: DEFAULTS.cache.ttl }),
    negativeTtl: check.duration("cache.negativeTtl", c.negativeTtl, { min: 0, default: DEFAULTS.cache.negativeTtl }),
    max: c.max === undefined ? undefined : check.integer("cache.max", c.max, { min: 1, default: DEFAULTS.cache.max }),
  };
}

function parseRotationHeaders(v: unknown): RotationHeaderSettings | undefined {
  if (v === undefined || v === false) return undefined;
  if (v === true) return Object.freeze({ window: DEFAULTS.rotationWindow });
  const o = check.object("rotationHeaders", v, "Use true, false or { window } (ms before a key's expiry).")!;
  return Object.freeze({ window: check.duration("rotationHeaders.window", o.window, { min: 1, default: DEFAULTS.rotationWindow }) });
}

function parseStore(v: unknown, cache: ReturnType<typeof parseCache>): Store | undefined {
  if (v === undefined) return cache === undefined ? undefined : memoryStore({ max: cache.max ?? DEFAULTS.cache.max });
  const store = check.withMethods<Store>(
    "store",
    v,
    ["peek", "lookup", "settle", "invalidate", "subscribe"],
    "Pass memoryStore() or redisStore() (or an object implementing Store).",
  );
  if (cache === undefined) return check.fail("store", "store has no effect with cache: false; remove one of them.");
  if (cache.max !== undefined)
    return check.fail("cache", "cache.max is set by the store when you pass one: memoryStore({ max }) or redisStore({ max }).");
  return store;
}

/** A store that counts (see `Store.count`). */
type CountingStore = Store & Required<Pick<Store, "count">>;

function parseUnknownKeyLimit<Req>(v: unknown, store: Store | undefined): ApiKeyAuthConfig<Req>["unknownKeyLimit"] {
  if (v === undefined || v === false) return undefined;
  const fix = "Use { max, window } (e.g. { max: 20, window: 60000 }) or false.";
  const o = check.object("unknownKeyLimit", v, fix)!;
  if (o.max === undefined)
    return check.fail("unknownKeyLimit.max", `unknownKeyLimit needs max, the unknown keys one address may send per window. ${fix}`);
  const max = check.integer("unknownKeyLimit.max", o.max, { min: 1, max: 1_000_000 });
  const window = check.duration("unknownKeyLimit.window", o.window, { min: 1000, default: DEFAULTS.unknownKeyWindow });
  const address = check.func<(req: Req) => string | undefined>("unknownKeyLimit.address", o.address, "(req) => the client's address");
  // Without a cache there is no store: the counts are kept in this process.
  const counting = store ?? memoryStore({ max: 1 });
  if (typeof counting.count !== "function") {
    return check.fail(
      "unknownKeyLimit",
      "unknownKeyLimit counts in the store, and this store has no count(); use memoryStore() or redisStore(), or implement Store.count.",
    );
  }
  return Object.freeze({ max, window, address, store: counting as CountingStore });
}

function parseHeader(v: unknown): { name: string | undefined; label: string } {
  if (v === false) return { name: undefined, label: "" };
  const label = check.string("header", v, {
    pattern: /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/,
    default: DEFAULTS.header,
    fix: 'Use a header name like "X-API-Key", or false.',
  });
  if (label.toLowerCase() === "authorization") {
    return check.fail("header", 'header is "Authorization", which `bearer` already reads; pick another name or use false.');
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

/** Rethrows createClient()'s ConfigError as apiKeyAuth's, keeping the option name, the value shown and the fix. */
function asOurs<T>(build: () => T): T {
  try {
    return build();
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return check.fail(e.option, e.message.replace(/^createClient: /, ""), { shown: e.shown, fix: e.fix });
  }
}

function buildClient(
  options: { rootKey?: string; baseUrl?: string; client?: KeyServiceClient; tls?: ClientTlsOptions },
  logger: Logger,
  call: CallSettings,
  telemetry: TelemetrySettings,
  makeClient: ClientFactory,
): KeyServiceClient {
  if (options.client !== undefined) {
    if (typeof options.client !== "object" || options.client === null || typeof options.client.keys?.verifyKey !== "function") {
      return check.invalid("client", options.client, 'Pass createClient() from "keyguard/client".');
    }
    if (options.rootKey !== undefined || options.baseUrl !== undefined) {
      return check.fail("client", "pass either client or rootKey/baseUrl, not both; the client already holds them.");
    }
    if (telemetry !== undefined) {
      return check.fail(
        "telemetry",
        "telemetry is for the client apiKeyAuth() builds; with your own client, pass it to createClient({ telemetry }).",
      );
    }
    if (options.tls !== undefined) {
      return check.fail("tls", "tls is for the client apiKeyAuth() builds; with your own client, pass it to createClient({ tls }).");
    }
    return options.client;
  }
  const rootKey = options.rootKey ?? (typeof process === "undefined" ? undefined : process.env?.UNKEY_ROOT_KEY);
  if (typeof rootKey !== "string" || rootKey.trim() === "") {
    return check.fail("rootKey", "no root key. Set UNKEY_ROOT_KEY or pass { rootKey } (or a prebuilt { client }).");
  }
  // Failures are logged by the middleware, throttled; the client's per-call warnings go to debug.
  const clientLogger: Logger = {
    debug: (fields, message) => logger.debug?.(fields, message),
    warn: (fields, message) => logger.debug?.(fields, message),
    error: (fields, message) => logger.error(fields, message),
  };
  return asOurs(() =>
    makeClient({
      rootKey,
      baseUrl: options.baseUrl,
      logger: clientLogger,
      timeout: call.timeout,
      deadline: call.deadline,
      retry: call.retry ?? false,
      ...(telemetry === undefined ? {} : { telemetry }),
      ...(options.tls === undefined ? {} : { tls: options.tls }),
    }),
  );
}

/** A client for another key service (`migrateFrom`, `shadow`): its own root key, never UNKEY_ROOT_KEY. */
function sideClient(
  name: "migrateFrom" | "shadow",
  o: Record<string, unknown>,
  logger: Logger,
  call: CallSettings,
  makeClient: ClientFactory,
  telemetry: TelemetrySettings,
): KeyServiceClient {
  if (o.client !== undefined) {
    const client = o.client as KeyServiceClient;
    if (typeof client !== "object" || client === null || typeof client.keys?.verifyKey !== "function") {
      return check.invalid(`${name}.client`, o.client, 'Pass createClient() from "keyguard/client".');
    }
    if (o.rootKey !== undefined || o.baseUrl !== undefined) {
      return check.fail(`${name}.client`, `pass either ${name}.client or ${name}.rootKey/baseUrl, not both.`);
    }
    return client;
  }
  if (typeof o.rootKey !== "string" || o.rootKey.trim() === "") {
    return check.fail(`${name}.rootKey`, `${name} needs the other service's root key: pass ${name}.rootKey (or ${name}.client).`);
  }
  if (typeof o.baseUrl !== "string") {
    return check.fail(`${name}.baseUrl`, `${name} needs the other service's address: pass ${name}.baseUrl (or ${name}.client).`);
  }
  const quiet: Logger = {
    debug: (fields, message) => logger.debug?.(fields, message),
    warn: (fields, message) => logger.debug?.(fields, message),
    error: (fields, message) => logger.error(fields, message),
  };
  const { rootKey, baseUrl } = o;
  try {
    // With telemetry, its calls are traced and measured like the main client's (server.address tells them apart).
    return makeClient({
      rootKey,
      baseUrl,
      logger: quiet,
      timeout: call.timeout,
      deadline: call.deadline,
      retry: call.retry ?? false,
      ...(telemetry === undefined ? {} : { telemetry }),
    });
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    // createClient's message, naming the option as it sits here (`migrateFrom.baseUrl`).
    const option = `${name}.${e.option}`;
    const sentence = e.message.replace(/^createClient: /, "").replace(new RegExp(`\\b${e.option}\\b`), option);
    return check.fail(option, sentence, { shown: e.shown, fix: e.fix });
  }
}

function parseMigrateFrom(
  v: unknown,
  logger: Logger,
  call: ApiKeyAuthConfig["call"],
  makeClient: ClientFactory,
  into: () => KeyServiceClient,
  telemetry: TelemetrySettings,
): ApiKeyAuthConfig["migrateFrom"] {
  if (v === undefined) return undefined;
  const o = check.object("migrateFrom", v, "Use { baseUrl, rootKey, apiId, intoApiId, migrationId, until? }.")!;
  const id = (name: "apiId" | "intoApiId" | "migrationId", fix: string) =>
    check.string(`migrateFrom.${name}`, o[name], { pattern: /^[A-Za-z0-9_\-.:]{3,255}$/, fix });
  const apiId = id("apiId", "Pass the id of the API the keys live in at the old service (api_…).");
  const intoApiId = id("intoApiId", "Pass the id of the key service's API the keys move into (api_…).");
  const migrationId = id("migrationId", 'Pass the id of a "sha256" key migration of the key service (createKeyMigration).');
  let until: number | undefined;
  if (o.until instanceof Date) until = o.until.getTime();
  else if (o.until !== undefined) until = check.number("migrateFrom.until", o.until, { min: 0, max: 8.64e15 });
  if (until !== undefined && !Number.isFinite(until)) check.invalid("migrateFrom.until", o.until, "Pass a valid Date or Unix ms.");
  return Object.freeze({
    old: sideClient("migrateFrom", o, logger, call.settings, makeClient, telemetry),
    into: into(),
    apiId,
    intoApiId,
    migrationId,
    until,
    callOptions: call.options,
    logger,
  });
}

function parseShadow<Req>(
  v: unknown,
  logger: Logger,
  call: ApiKeyAuthConfig["call"],
  makeClient: ClientFactory,
  telemetry: TelemetrySettings,
): ShadowSettings<Req> | undefined {
  if (v === undefined) return undefined;
  const o = check.object("shadow", v, "Use { baseUrl, rootKey, sample?, onDisagreement? }.")!;
  const sample = check.number("shadow.sample", o.sample ?? 0.1, { min: 0, max: 1 });
  const onDisagreement = check.func<ShadowSettings<Req>["onDisagreement"] & object>(
    "shadow.onDisagreement",
    o.onDisagreement,
    "(report, req)",
  );
  return Object.freeze({
    client: sideClient("shadow", o, logger, call.settings, makeClient, telemetry),
    sample,
    onDisagreement,
    callOptions: call.options,
    logger,
    meter: telemetry === undefined ? undefined : () => telemetryMeter(telemetry),
  });
}

/** Plans the request shape of the checked shape options; a static permission query is parsed here, once. */
function planShapeOnce<Req>(options: ShapeOptions<Req>): ShapePlan<Req> {
  try {
    return planShape(options);
  } catch (e) {
    if (!(e instanceof PermissionQuerySyntaxError)) throw e;
    return check.fail("permissions", `permissions ${JSON.stringify(options.permissions)} is not a valid query: ${e.message}.`);
  }
}

/**
 * How an adapter builds the key-service client from the options: `createClient()` (undici's pool)
 * on Node, a client over `fetch` on the Web runtimes.
 */
export type ClientFactory = (options: ClientOptions) => KeyServiceClient;

type AnyOptions<Req, Res> = AuthOptions<Req> & { onDenied?: DeniedHandler<Req, Res>; passErrors?: boolean };

/** Parses the options of `apiKeyAuth()` (and of every other adapter) once. */
export function parseAuthOptions<Req, Res>(input: AnyOptions<Req, Res> | undefined, makeClient: ClientFactory): ApiKeyAuthConfig<Req, Res> {
  const options = check.options(input, "Pass an object such as { rootKey }, or nothing.") as AnyOptions<Req, Res> & Record<string, unknown>;
  const logger = check.logger(options.logger);
  // Refused, not warned about: a misspelled option (`premissions`) must not remove a check.
  check.unknownNames(givenOptionNames(options, ["cache", "retry", "unknownKeyLimit", "tls", "migrateFrom", "shadow"]), KNOWN_NAMES);

  const header = parseHeader(options.header);
  const extract: ExtractOptions = Object.freeze({
    bearer: check.boolean("bearer", options.bearer, true),
    header: header.name,
    headerLabel: header.label,
  });
  const getKey = check.func<(req: Req) => unknown>("getKey", options.getKey, "(req) => key");
  if (getKey === undefined && !extract.bearer && extract.header === undefined) {
    check.fail("header", "bearer is false and header is false, so no key could ever be read; enable one or pass getKey.");
  }

  const realm = check.string("realm", options.realm, {
    pattern: /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/,
    default: DEFAULTS.realm,
    fix: "Use printable ASCII without quotes or backslashes.",
  });

  if (typeof options.permissions !== "string") check.func("permissions", options.permissions, "(req) => query, or a query string");
  // What the key service would refuse on every request is refused now.
  for (const name of ["cost", "ratelimits", "tags"] as const) {
    const problem = typeof options[name] === "function" ? undefined : checkShapeOption(name, options[name]);
    if (problem !== undefined) check.fail(name, problem);
  }
  // The static options are copied into the plan: later changes to the caller's arrays change nothing.
  const shape = planShapeOnce({ permissions: options.permissions, cost: options.cost, ratelimits: options.ratelimits, tags: options.tags });

  const onServiceError = check.oneOf(
    "onServiceError",
    options.onServiceError,
    ["closed", "open"],
    "closed",
    "closed answers 503, open continues without a key",
  );
  const onDenied = check.func<DeniedHandler<Req, Res>>("onDenied", options.onDenied, "(err, req, res, next)");
  const passErrors = check.boolean("passErrors", options.passErrors, false);
  if (onDenied !== undefined && passErrors) check.fail("passErrors", "pass either onDenied or passErrors: true, not both.");

  const hideCredentials = check.boolean("hideCredentials", options.hideCredentials, false);
  if (hideCredentials && getKey !== undefined) {
    check.fail(
      "hideCredentials",
      "hideCredentials: true has no effect with getKey (apiKeyAuth does not know where your getter read the key); remove hideCredentials and delete that value yourself, e.g. inside getKey.",
    );
  }

  // Normalised by the client's own function, over the middleware's defaults (named in its errors).
  const call = normaliseCallSettings(check, { timeout: options.timeout, deadline: options.deadline, retry: options.retry }, DEFAULTS);
  const { timeout, deadline } = call.settings;
  if (timeout > deadline) {
    logger.warn(
      { timeout, deadline },
      `apiKeyAuth: timeout (${timeout} ms) is longer than deadline (${deadline} ms); each attempt is cut to the time left of the deadline`,
    );
  }
  const onDecision = check.func<DecisionHandler<Req>>("onDecision", options.onDecision, "(decision, req)");
  const telemetry = parseTelemetry(check, options.telemetry);
  const staleIfError = options.staleIfError === false ? 0 : check.duration("staleIfError", options.staleIfError, { min: 0, default: 0 });
  const cache = parseCache(options.cache);
  const store = parseStore(options.store, cache);
  const unknownKeyLimit = parseUnknownKeyLimit<Req>(options.unknownKeyLimit, store);

  const client = buildClient(options, logger, call.settings, telemetry, makeClient);
  const frozenCall = Object.freeze(call);
  return Object.freeze({
    client,
    extract,
    getKey,
    fixedShape: shape.fixed,
    resolveShape: shape.resolve,
    optional: check.boolean("optional", options.optional, false),
    rejectBadChecksums: check.boolean("rejectBadChecksums", options.rejectBadChecksums, true),
    denial: Object.freeze({
      policy: buildStatusPolicy(options.policy, logger),
      realm,
      keyHint: keyHint(extract, getKey !== undefined),
      rateLimitHeaders: check.boolean("rateLimitHeaders", options.rateLimitHeaders, true),
    }),
    onDenied,
    passErrors,
    hideCredentials,
    allowPreflight: check.boolean("allowPreflight", options.allowPreflight, true),
    rotationHeaders: parseRotationHeaders(options.rotationHeaders),
    onServiceError,
    staleIfError,
    staleMax: DEFAULTS.staleMax,
    call: frozenCall,
    cache: cache === undefined ? undefined : Object.freeze({ ttl: cache.ttl, negativeTtl: cache.negativeTtl }),
    store,
    unknownKeyLimit,
    logger,
    onDecision,
    migrateFrom: parseMigrateFrom(options.migrateFrom, logger, frozenCall, makeClient, () => client, telemetry),
    shadow: parseShadow<Req>(options.shadow, logger, frozenCall, makeClient, telemetry),
  });
}
