// Options of the local key service, parsed once into a frozen config. Misconfiguration throws
// LocalServiceConfigError naming the option, the bad value and the fix.
import { readFileSync } from "node:fs";
import { ConfigError, type ConfigErrorDetails } from "../config-error";
import { defaultLogger, type Logger } from "../logger";
import { ENCRYPTION_KEY_ENV, parseEncryptionKey } from "./domain/key-vault";
import type { InvalidationPublisher } from "../protocol/invalidation";
import type { Store } from "./storage/seam";
import { warnUnknownOptions } from "../unknown-options";

export interface LocalKeyServiceOptions {
  /**
   * Root key of the bootstrap workspace; holds every permission. 8..512 visible ASCII characters
   * (what a client can send in a header). Default: env `UNKEY_ROOT_KEY`, else a newly generated key.
   */
  rootKey?: string;
  /** Clock in Unix ms; drives expiry, credit refills and rate-limit windows. Default: `Date.now`. */
  now?: () => number;
  /**
   * SQLite file holding the state (created when absent; one process per file): the same as
   * `store: await sqliteStore(dataFile)`, opened and closed by the service. Needs Node.js >= 22.13
   * or the `better-sqlite3` package. Default: none (state lives in memory only). Not together with `store`.
   */
  dataFile?: string;
  /**
   * A store opened by the caller (e.g. `memoryStore()`, `await sqliteStore(file)`); the service
   * never closes it. Default: the SQLite `dataFile` when given, else a new memory store.
   */
  store?: Store;
  /**
   * PostgreSQL connection URL: keep the state in PostgreSQL, shared by every service instance
   * started on it. Needs `redis` too; not with `dataFile` or `store`. Needs the packages `pg` and
   * `ioredis`. Default: none.
   */
  postgres?: string;
  /** Redis connection URL holding the rate-limit counters (with `postgres`). Default: none. */
  redis?: string;
  /**
   * PostgreSQL schema of the tables (with `postgres`); the Redis keys start with
   * `keyguard:<schema>:`. Default: `"keyguard"`.
   */
  postgresSchema?: string;
  /** Port to listen on (`startLocalKeyService` only). Default: `0` (any free port). */
  port?: number;
  /** Address to listen on (`startLocalKeyService` only). Default: `"127.0.0.1"`. */
  host?: string;
  /** Where unexpected errors and persistence failures are reported. Default: `defaultLogger` (stderr). */
  logger?: Logger;
  /**
   * Key-encryption key for recoverable keys: 32 bytes as 64 hex digits or base64. Never stored in
   * the state. Default: `encryptionKeyFile`, else env `KEYGUARD_ENCRYPTION_KEY`, else none (no API
   * can store keys).
   */
  encryptionKey?: string;
  /** File holding the key-encryption key (same forms as `encryptionKey`). Not together with it. */
  encryptionKeyFile?: string;
  /** The bootstrap API stores keys (keeps an encrypted copy of each recoverable key). Needs an encryption key. Default: false. */
  storeKeys?: boolean;
  /**
   * Take a caller's address for API IP allow lists from the first `X-Forwarded-For` entry, as
   * production does. Only behind a proxy you run: a caller can write that header. Default: false
   * (the socket address).
   */
  trustProxy?: boolean;
  /**
   * Where to announce key changes, so that every `apiKeyAuth()` sharing that bus forgets its
   * remembered answers at once: e.g. `await redisStore({ url })` from `keyguard/redis` on the Redis
   * your apps' stores use. After each change that succeeded (updateKey, deleteKey, updateCredits,
   * rerollKey, a key's permissions and roles: by keyId; deleting a permission, role or API, setting
   * a role's permissions, changing or deleting an identity: everything), before the answer. Default: none.
   */
  invalidate?: InvalidationPublisher;
  /**
   * How long verification events (what `analytics.getVerifications` reads) are kept, in days:
   * older ones are deleted by the service every few minutes, and a query asking for them is
   * refused (`query_range_exceeds_retention`). A whole number 1..3650. Default: 30.
   */
  verificationRetentionDays?: number;
  /**
   * Serve the web console at `/` (its files at `/console/…`), next to the API: sign in with a root
   * key, manage APIs, keys, permissions, roles and root keys, watch verifications. Its files come
   * from the package (built by `npm run build`). Default: false (`keyguard serve` turns it on);
   * when off, every path outside `/v2/` answers 404 as before.
   */
  console?: boolean;
  /**
   * Serve Prometheus metrics at `GET /metrics` (requests, verification outcomes, latencies, store
   * calls and errors, and the process metrics): `true`, or `{ token, processMetrics }`. Needs the
   * package `prom-client`. Default: off (`/metrics` is an unknown route and prom-client is not loaded).
   */
  metrics?: boolean | MetricsOptions;
}

export interface MetricsOptions {
  /**
   * A scrape must send `Authorization: Bearer <token>` (at least 16 characters). The metrics hold
   * no secret, only counts and timings. Default: none (leave access to the network).
   */
  token?: string;
  /**
   * Also serve the process metrics (`process_*`, `nodejs_*`: CPU, memory, event loop, GC),
   * collected once per process and shared by every service in it. Turn off when your app exports
   * them already. Default: true.
   */
  processMetrics?: boolean;
}

export interface LocalServiceConfig {
  readonly rootKey: string | undefined;
  readonly now: () => number;
  readonly dataFile: string | undefined;
  readonly store: Store | undefined;
  /** PostgreSQL + Redis, when configured (the URLs are checked when the store opens). */
  readonly postgres: { readonly postgres: string; readonly redis: string; readonly schema: string | undefined } | undefined;
  readonly port: number;
  readonly host: string;
  readonly logger: Logger;
  /** The 32-byte key-encryption key; undefined when none is configured. */
  readonly encryptionKey: Buffer | undefined;
  readonly storeKeys: boolean;
  readonly trustProxy: boolean;
  readonly invalidate: InvalidationPublisher | undefined;
  /** Metrics at `/metrics`; undefined when off. */
  readonly metrics: { readonly token: string | undefined; readonly processMetrics: boolean } | undefined;
  /** Retention of verification events, ms. */
  readonly verificationRetentionMs: number;
  readonly console: boolean;
}

/**
 * A bad option given to the local key service (or to one of its stores), or a data file it cannot
 * use. `option` names the option (or environment variable) at fault; `"options"` when the fault is
 * not one option's (e.g. a data file of another program).
 */
export class LocalServiceConfigError extends ConfigError {
  override readonly name: string = "LocalServiceConfigError";
  override readonly code: string = "LOCAL_SERVICE_CONFIG_ERROR";
  constructor(message: string, details: { readonly option?: string } & ConfigErrorDetails = {}) {
    super(details.option ?? "options", message, details);
  }
}

/** Every option's name: the compiler checks the list against LocalKeyServiceOptions. */
const KNOWN: readonly string[] = Object.freeze(
  Object.keys({
    rootKey: true,
    now: true,
    dataFile: true,
    store: true,
    postgres: true,
    redis: true,
    postgresSchema: true,
    port: true,
    host: true,
    logger: true,
    encryptionKey: true,
    encryptionKeyFile: true,
    storeKeys: true,
    trustProxy: true,
    invalidate: true,
    metrics: true,
    verificationRetentionDays: true,
    console: true,
  } satisfies Record<keyof LocalKeyServiceOptions, true>),
);

const KEY_FORMS = "Use 32 bytes written as 64 hex digits or as base64, e.g. from `openssl rand -base64 32`.";

/** The key-encryption key from `encryptionKey`, `encryptionKeyFile` or the environment. Never echoes it. */
function encryptionKeyOf(options: LocalKeyServiceOptions, env: NodeJS.ProcessEnv): Buffer | undefined {
  const { encryptionKey, encryptionKeyFile } = options;
  if (encryptionKey !== undefined && encryptionKeyFile !== undefined) {
    fail("encryptionKeyFile", encryptionKeyFile, "Pass either encryptionKey or encryptionKeyFile, not both.");
  }
  let text: unknown;
  let source: string;
  if (encryptionKeyFile !== undefined) {
    if (typeof encryptionKeyFile !== "string" || encryptionKeyFile.trim() === "") {
      fail("encryptionKeyFile", encryptionKeyFile, "Pass the path of a file holding the key.");
    }
    try {
      text = readFileSync(encryptionKeyFile, "utf8");
    } catch (err) {
      fail("encryptionKeyFile", encryptionKeyFile, `The file cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"}).`);
    }
    source = "encryptionKeyFile";
  } else if (encryptionKey !== undefined) {
    text = encryptionKey;
    source = "encryptionKey";
  } else {
    text = env[ENCRYPTION_KEY_ENV] || undefined;
    source = ENCRYPTION_KEY_ENV;
    if (text === undefined) return undefined;
  }
  const key = typeof text === "string" ? parseEncryptionKey(text) : undefined;
  // The value is a secret: never echo it.
  if (!key) fail(source, HIDDEN, KEY_FORMS, source === "encryptionKeyFile" ? `${source} (its content)` : source);
  return key;
}

/** What a message shows in place of a value it must not echo (a secret, a URL that may hold a password), as it is: `<hidden>`. */
class Placeholder {
  constructor(readonly text: string) {}
}
const HIDDEN = new Placeholder("<hidden>");
const A_URL = new Placeholder("<a URL, hidden>");

/** Throws the error for `option`; `label` is how the message names it (default: the option's name). */
function fail(option: string, value: unknown, fix: string, label = option): never {
  const shown =
    value instanceof Placeholder ? value.text : typeof value === "string" ? JSON.stringify(value) : typeof value === "function" ? "a function" : String(value);
  throw new LocalServiceConfigError(`keyguard/local: invalid option ${label} = ${shown}. ${fix}`, { option, shown, fix });
}

/** `postgres` and `redis`: both or neither, and then neither `dataFile` nor `store`. URLs are never echoed. */
function parseShared(options: LocalKeyServiceOptions, dataFile: string | undefined, store: Store | undefined): LocalServiceConfig["postgres"] {
  const { postgres, redis, postgresSchema } = options;
  const hidden = (v: unknown) => (typeof v === "string" ? A_URL : v);
  if (postgres !== undefined && (typeof postgres !== "string" || postgres.trim() === "")) {
    fail("postgres", hidden(postgres), "Pass a URL such as postgres://user:password@127.0.0.1:5432/keyguard.");
  }
  if (redis !== undefined && (typeof redis !== "string" || redis.trim() === "")) fail("redis", hidden(redis), "Pass a URL such as redis://127.0.0.1:6379.");
  if (postgres === undefined && redis === undefined) {
    if (postgresSchema !== undefined) fail("postgresSchema", postgresSchema, "It applies only with postgres and redis; pass those too or drop it.");
    return undefined;
  }
  if (postgres === undefined) fail("redis", A_URL, "Pass postgres too: PostgreSQL holds the state, Redis only the rate-limit counters.");
  if (redis === undefined) fail("postgres", A_URL, "Pass redis too: PostgreSQL holds the state, Redis the rate-limit counters.");
  if (dataFile !== undefined) fail("dataFile", dataFile, "Pass either dataFile or postgres and redis, not both.");
  if (store !== undefined) fail("store", new Placeholder("<a Store>"), "Pass either store or postgres and redis, not both.");
  if (postgresSchema !== undefined && typeof postgresSchema !== "string") fail("postgresSchema", postgresSchema, 'Pass a schema name such as "keyguard".');
  return Object.freeze({ postgres, redis, schema: postgresSchema });
}

const METRICS_KEYS: readonly string[] = Object.keys({ token: true, processMetrics: true } satisfies Record<keyof MetricsOptions, true>);

/** `metrics`: off, on, or on with a token (never echoed) and without the process metrics. */
function parseMetrics(metrics: LocalKeyServiceOptions["metrics"]): LocalServiceConfig["metrics"] {
  if (metrics === undefined || metrics === false) return undefined;
  if (metrics === true) return Object.freeze({ token: undefined, processMetrics: true });
  if (typeof metrics !== "object" || metrics === null || Array.isArray(metrics)) {
    fail("metrics", metrics, "Pass true, false or { token, processMetrics }.");
  }
  const unknown = Object.keys(metrics).find((k) => !METRICS_KEYS.includes(k));
  if (unknown !== undefined) fail(`metrics.${unknown}`, new Placeholder("<given>"), `metrics takes ${METRICS_KEYS.join(" and ")}.`);
  const { token, processMetrics = true } = metrics;
  // The token is a secret: never echo it.
  if (token !== undefined && (typeof token !== "string" || !/^[\x21-\x7e]{16,512}$/.test(token))) {
    fail("metrics.token", HIDDEN, "Use 16..512 printable characters without spaces, e.g. from `openssl rand -base64 24`.");
  }
  if (typeof processMetrics !== "boolean") fail("metrics.processMetrics", processMetrics, "Pass true or false.");
  return Object.freeze({ token, processMetrics });
}

export function parseOptions(options: LocalKeyServiceOptions = {}, env: NodeJS.ProcessEnv = process.env): LocalServiceConfig {
  if (typeof options !== "object" || options === null) fail("options", options, "Pass an object or nothing.");
  const logger = options.logger ?? defaultLogger;
  if (typeof logger.warn !== "function" || typeof logger.error !== "function") {
    fail("logger", logger, "Pass an object with warn(fields, msg) and error(fields, msg) methods.");
  }
  warnUnknownOptions("keyguard/server", Object.keys(options), KNOWN, logger);
  const rootKey = options.rootKey ?? (env.UNKEY_ROOT_KEY || undefined);
  // The client's rule (createClient, apiKeyAuth, the console): a key it cannot send in a header is of no use.
  if (rootKey !== undefined && (typeof rootKey !== "string" || !/^[\x21-\x7e]{8,512}$/.test(rootKey))) {
    // The value is a secret: never echo it.
    fail(
      options.rootKey !== undefined ? "rootKey" : "UNKEY_ROOT_KEY",
      HIDDEN,
      "Use 8..512 visible ASCII characters (no spaces, control or non-ASCII characters), or leave it unset to generate one.",
    );
  }
  const now = options.now ?? Date.now;
  if (typeof now !== "function") fail("now", now, "Pass a function returning Unix milliseconds, e.g. () => Date.now().");
  const dataFile = options.dataFile;
  if (dataFile !== undefined && (typeof dataFile !== "string" || dataFile.trim() === "")) {
    fail("dataFile", dataFile, "Pass a file path, or leave it unset to keep state in memory.");
  }
  const store = options.store;
  if (store !== undefined) {
    const s = store as Partial<Store> | null;
    if (typeof s !== "object" || s === null || typeof s.transaction !== "function" || typeof s.direct !== "object" || typeof s.close !== "function") {
      throw new LocalServiceConfigError(
        "keyguard/local: invalid option store: it is not a Store (transaction, direct, close). " +
          "Pass a Store, e.g. memoryStore() from keyguard/local, or leave it unset.",
        { option: "store" },
      );
    }
    if (dataFile !== undefined) fail("dataFile", dataFile, "Pass either dataFile or store, not both.");
  }
  const postgres = parseShared(options, dataFile, store);
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail("port", port, "Use an integer 0..65535 (0 picks any free one).");
  const host = options.host ?? "127.0.0.1";
  if (typeof host !== "string" || host === "") fail("host", host, 'Use an address such as "127.0.0.1".');
  const encryptionKey = encryptionKeyOf(options, env);
  const storeKeys = options.storeKeys ?? false;
  if (typeof storeKeys !== "boolean") fail("storeKeys", storeKeys, "Pass true or false.");
  if (storeKeys && !encryptionKey) {
    fail("storeKeys", storeKeys, `Storing keys needs a key-encryption key: set ${ENCRYPTION_KEY_ENV}, encryptionKey or encryptionKeyFile.`);
  }
  const trustProxy = options.trustProxy ?? false;
  if (typeof trustProxy !== "boolean") fail("trustProxy", trustProxy, "Pass true or false.");
  const invalidate = options.invalidate;
  if (invalidate !== undefined && (typeof invalidate !== "object" || invalidate === null || typeof invalidate.invalidate !== "function")) {
    fail("invalidate", invalidate, "Pass an object with an invalidate(message) method, e.g. await redisStore({ url }) from keyguard/redis.");
  }
  const metrics = parseMetrics(options.metrics);
  const withConsole = options.console ?? false;
  if (typeof withConsole !== "boolean") fail("console", withConsole, "Pass true to serve the web console at /, or false.");
  const retentionDays = options.verificationRetentionDays ?? 30;
  if (!Number.isInteger(retentionDays) || retentionDays < 1 || retentionDays > 3650) {
    fail("verificationRetentionDays", retentionDays, "Use a whole number of days 1..3650 (default 30).");
  }
  const verificationRetentionMs = retentionDays * 86_400_000;
  return Object.freeze({ rootKey, now, dataFile, store, postgres, port, host, logger, encryptionKey, storeKeys, trustProxy, invalidate, verificationRetentionMs, console: withConsole, metrics });
}
