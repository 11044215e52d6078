// Options of the local key service, parsed once into a frozen config. Misconfiguration throws
// LocalServiceConfigError naming the option, the bad value and the fix.
import { readFileSync } from "node:fs";
import type { Logger } from "../logger";
import { HIDDEN, Hidden, type OptionChecks } from "../option-checks";
import { serviceChecks } from "./errors";
import { ENCRYPTION_KEY_ENV, parseEncryptionKey } from "./domain/key-vault";
import { ROOT_KEY_COMMAND, rootKeyWeakness } from "./domain/root-key-strength";
import type { InvalidationPublisher } from "../protocol/invalidation";
import type { Storage } from "./storage/seam";
import { parsePublicKeys, type PublicKeySource } from "./leaks/public-keys";

export interface LocalKeyServiceOptions {
  /**
   * Root key of the bootstrap workspace; holds every permission. 8..512 visible ASCII characters
   * (what a client can send in a header) with an estimated entropy of at least 128 bits (e.g.
   * `root_` + 48 hex digits: `echo "root_$(openssl rand -hex 24)"`; docs/security.md). Default:
   * env `UNKEY_ROOT_KEY`, else a newly generated key.
   */
  rootKey?: string;
  /** Clock in Unix ms; drives expiry, credit refills and rate-limit windows. Default: `Date.now`. */
  now?: () => number;
  /**
   * SQLite file holding the state (created when absent; one process per file): the same as
   * `storage: await sqliteStorage(dataFile)`, opened and closed by the service. Needs Node.js >= 22.13
   * or the `better-sqlite3` package. Default: none (state lives in memory only). Not together with `storage`.
   */
  dataFile?: string;
  /**
   * The service's storage, opened by the caller (e.g. `memoryStorage()`, `await sqliteStorage(file)`);
   * the service never closes it. Default: the SQLite `dataFile` when given, else a new memory storage.
   */
  storage?: Storage;
  /** @deprecated The former name of `storage` (0.2): use `storage`. */
  store?: Storage;
  /**
   * PostgreSQL connection URL: keep the state in PostgreSQL, shared by every service instance
   * started on it. Needs `redis` too; not with `dataFile` or `storage`. Needs the packages `pg` and
   * `ioredis`. Default: none.
   */
  postgres?: string;
  /**
   * Redis connection URL holding the rate-limit counters (with `postgres`): `redis://…`, or
   * `rediss://…` for TLS. Default: none.
   */
  redis?: string;
  /**
   * PEM file of the CA certificates that signed the `rediss://` server's certificate, trusted
   * besides Node's own (with `redis`; read at start). Default: none.
   */
  redisCaFile?: string;
  /**
   * The `redis` URL names one node of a Redis Cluster; the counters' scripts keep their keys in
   * one hash slot. Default: false.
   */
  redisCluster?: boolean;
  /**
   * PostgreSQL schema of the tables (with `postgres`); the Redis keys start with
   * `keyguard:<schema>:`. Default: `"keyguard"`.
   */
  postgresSchema?: string;
  /** Port to listen on (`startLocalKeyService` only). Default: `0` (any free port). */
  port?: number;
  /** Address to listen on (`startLocalKeyService` only). Default: `"127.0.0.1"`. */
  host?: string;
  /**
   * Serve HTTPS (`startLocalKeyService` only): the PEM files of the certificate (with its chain)
   * and of its private key, and optionally of the CA whose certificates clients must present
   * (mutual TLS). Read and checked at start; `reloadTls()` of the running service reads them again.
   * Default: none (plain HTTP).
   */
  tls?: TlsOptions;
  /**
   * How long `close()` of `startLocalKeyService` lets the requests in flight finish before it cuts
   * their connections, ms (`keyguard serve`: `--drain-timeout`, 10 s). Default: `1000`.
   */
  drainTimeoutMs?: number;
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
   * Take a caller's address for IP allow-lists and the failed-root-key limit from the last
   * `X-Forwarded-For` entry: the one the proxy in front of the service added (the entries before it
   * are the caller's own). Only behind one proxy you run. Default: false (the socket address).
   */
  trustProxy?: boolean;
  /**
   * After `max` failed root-key authentications (an unknown root key, or an Authorization header
   * that is not `Bearer <key>`) from one address within a sliding window of `windowMs`, that
   * address's requests are answered 429 `too_many_requests.authentication_failures` with
   * `Retry-After`, without looking at their root key, until the window ends. The address is the
   * one of `trustProxy`. Counted where the rate limits are (PostgreSQL + Redis: in Redis, shared by
   * every instance). `false` turns it off. Default: `{ max: 100, windowMs: 60000 }`.
   */
  rootKeyFailureLimit?: { max?: number; windowMs?: number } | false;
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
   * How long audit records (what `audit.listEvents` reads: every change made through the
   * operations, and every attempt refused for permissions) are kept, in days: older ones are
   * deleted by the service at start and every hour. A whole number 1..3650. Default: 365.
   */
  auditRetentionDays?: number;
  /**
   * Deliver webhooks to endpoints on loopback, private, link-local and other non-public addresses.
   * Off by default: an endpoint's URL is a request the service makes for whoever holds a root key
   * that may register one (server-side request forgery). Turn it on for tests and closed networks.
   */
  webhooksAllowPrivate?: boolean;
  /** How long a webhook message is retried before it is marked failed, in hours (whole number 1..168). Default: 24. */
  webhookRetryHours?: number;
  /**
   * How long a webhook message taken for delivery is kept from the other instances, in seconds
   * (whole number 15..3600; above the 10-second delivery timeout). A message whose instance died
   * while delivering it is delivered again once this is over. Default: 60.
   */
  webhookLeaseSeconds?: number;
  /**
   * How long before a key's `expires` its `key.expiring` webhook event is sent, in hours (whole
   * number 1..8760): the service scans every minute for keys expiring within this notice. Default: 72.
   */
  webhookExpiryNoticeHours?: number;
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
  /**
   * Receive GitHub's secret scanning reports at `POST /secret-scanning/github`: keys found in public
   * are disabled or flagged, as their API's `leakResponse` says (docs/security.md). Default: off
   * (that path answers 404).
   */
  secretScanning?: SecretScanningOptions;
}

export interface TlsOptions {
  /** PEM file of the server's certificate, followed by its intermediate certificates. */
  certFile: string;
  /** PEM file of the certificate's private key (unencrypted). */
  keyFile: string;
  /**
   * PEM file of the CA certificates that sign the clients' certificates: a client without such a
   * certificate is refused during the TLS handshake (mutual TLS). Default: none (no client certificate asked).
   */
  clientCaFile?: string;
}

export interface SecretScanningOptions {
  /**
   * Where the host's public keys are published (the JSON document `{ public_keys: [{ key_identifier,
   * key, is_current }] }`): an `https://` or `http://` URL, for GitHub
   * `https://api.github.com/meta/public_keys/secret_scanning` (fetched when first needed, kept, read
   * again for an unknown key identifier at most once a minute), or the path of a file holding it
   * (read at start, and again likewise).
   */
  publicKeys: string;
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
  readonly storage: Storage | undefined;
  /** PostgreSQL + Redis, when configured (the URLs are checked when the store opens). */
  readonly postgres:
    | {
        readonly postgres: string;
        readonly redis: string;
        readonly redisCaFile: string | undefined;
        readonly redisCluster: boolean | undefined;
        readonly schema: string | undefined;
      }
    | undefined;
  readonly port: number;
  readonly host: string;
  /** The TLS files, when the service serves HTTPS. */
  readonly tls: { readonly certFile: string; readonly keyFile: string; readonly clientCaFile: string | undefined } | undefined;
  /** The service's own listener is behind TLS (`tls` given): e.g. cookies it sets may be `Secure`. */
  readonly secure: boolean;
  readonly drainTimeoutMs: number;
  readonly logger: Logger;
  /** The 32-byte key-encryption key; undefined when none is configured. */
  readonly encryptionKey: Buffer | undefined;
  readonly storeKeys: boolean;
  readonly trustProxy: boolean;
  /** undefined = off. */
  readonly rootKeyFailureLimit: { readonly max: number; readonly windowMs: number } | undefined;
  readonly invalidate: InvalidationPublisher | undefined;
  /** Metrics at `/metrics`; undefined when off. */
  readonly metrics: { readonly token: string | undefined; readonly processMetrics: boolean } | undefined;
  /** Retention of verification events, ms. */
  readonly verificationRetentionMs: number;
  /** Retention of audit records, ms. */
  readonly auditRetentionMs: number;
  readonly webhooksAllowPrivate: boolean;
  /** How long a webhook message is retried, ms. */
  readonly webhookRetryMs: number;
  /** How long a message taken for delivery is kept from the other instances, ms. */
  readonly webhookLeaseMs: number;
  /** How long before a key's expiry its `key.expiring` event is sent, ms. */
  readonly webhookExpiryNoticeMs: number;
  readonly console: boolean;
  /** The secret scanning endpoint; undefined when off. */
  readonly secretScanning: { readonly publicKeys: PublicKeySource } | undefined;
}

/** Every option's name: the compiler checks the list against LocalKeyServiceOptions. */
const KNOWN: readonly string[] = Object.freeze(
  Object.keys({
    rootKey: true,
    now: true,
    dataFile: true,
    storage: true,
    store: true,
    postgres: true,
    redis: true,
    redisCaFile: true,
    redisCluster: true,
    postgresSchema: true,
    port: true,
    host: true,
    tls: true,
    drainTimeoutMs: true,
    logger: true,
    encryptionKey: true,
    encryptionKeyFile: true,
    storeKeys: true,
    trustProxy: true,
    rootKeyFailureLimit: true,
    invalidate: true,
    metrics: true,
    verificationRetentionDays: true,
    auditRetentionDays: true,
    webhooksAllowPrivate: true,
    webhookRetryHours: true,
    webhookLeaseSeconds: true,
    webhookExpiryNoticeHours: true,
    console: true,
    secretScanning: true,
  } satisfies Record<keyof LocalKeyServiceOptions, true>),
);

const KEY_FORMS = "Use 32 bytes written as 64 hex digits or as base64, e.g. from `openssl rand -base64 32`.";

const check: OptionChecks = serviceChecks();

/** The key-encryption key from `encryptionKey`, `encryptionKeyFile` or the environment. Never echoes it. */
function encryptionKeyOf(options: LocalKeyServiceOptions, env: NodeJS.ProcessEnv): Buffer | undefined {
  const { encryptionKey, encryptionKeyFile } = options;
  if (encryptionKey !== undefined && encryptionKeyFile !== undefined) {
    check.invalid("encryptionKeyFile", encryptionKeyFile, "Pass either encryptionKey or encryptionKeyFile, not both.");
  }
  let text: unknown;
  let source: string;
  if (encryptionKeyFile !== undefined) {
    const file = check.string("encryptionKeyFile", encryptionKeyFile, { pattern: /\S/, fix: "Pass the path of a file holding the key." });
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      check.invalid("encryptionKeyFile", file, `The file cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"}).`);
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
  if (!key) check.invalid(source, HIDDEN, KEY_FORMS, source === "encryptionKeyFile" ? `${source} (its content)` : source);
  return key;
}

/** A connection URL as the service's messages show it: never (it may hold a password). */
const A_URL = new Hidden("<a URL, hidden>");

/** `postgres` and `redis`: both or neither, and then neither `dataFile` nor `storage`. URLs are never echoed. */
function parseShared(
  options: LocalKeyServiceOptions,
  dataFile: string | undefined,
  storage: Storage | undefined,
  storageName: string,
): LocalServiceConfig["postgres"] {
  const { postgresSchema, redisCaFile, redisCluster } = options;
  const url = (option: "postgres" | "redis", example: string) => {
    const value = options[option];
    if (value !== undefined && (typeof value !== "string" || value.trim() === "")) {
      check.invalid(option, typeof value === "string" ? A_URL : value, `Pass a URL such as ${example}.`);
    }
    return value;
  };
  const postgres = url("postgres", "postgres://user:password@127.0.0.1:5432/keyguard");
  const redis = url("redis", "redis://127.0.0.1:6379");
  if (postgres === undefined && redis === undefined) {
    for (const [name, value] of Object.entries({ postgresSchema, redisCaFile, redisCluster })) {
      if (value !== undefined) check.invalid(name, value, "It applies only with postgres and redis; pass those too or drop it.");
    }
    return undefined;
  }
  if (postgres === undefined)
    return check.invalid("redis", A_URL, "Pass postgres too: PostgreSQL holds the state, Redis only the rate-limit counters.");
  if (redis === undefined)
    return check.invalid("postgres", A_URL, "Pass redis too: PostgreSQL holds the state, Redis the rate-limit counters.");
  if (dataFile !== undefined) check.invalid("dataFile", dataFile, "Pass either dataFile or postgres and redis, not both.");
  if (storage !== undefined)
    check.invalid(storageName, new Hidden("<a Storage>"), `Pass either ${storageName} or postgres and redis, not both.`);
  if (postgresSchema !== undefined && typeof postgresSchema !== "string")
    check.invalid("postgresSchema", postgresSchema, 'Pass a schema name such as "keyguard".');
  // The CA file and the cluster switch are checked (the file read) with the URL, when the store opens.
  return Object.freeze({ postgres, redis, redisCaFile, redisCluster, schema: postgresSchema });
}

const TLS_KEYS: readonly string[] = Object.keys({ certFile: true, keyFile: true, clientCaFile: true } satisfies Record<
  keyof TlsOptions,
  true
>);

/** `tls`: the paths of its files (read, and checked together, where the server listens). */
function parseTls(value: LocalKeyServiceOptions["tls"]): LocalServiceConfig["tls"] {
  const given = check.object("tls", value, "Pass { certFile, keyFile } (and clientCaFile for mutual TLS).");
  if (given === undefined) return undefined;
  check.unknownNames(
    Object.keys(given).map((k) => `tls.${k}`),
    TLS_KEYS.map((k) => `tls.${k}`),
  );
  const file = (name: string, optional: boolean) =>
    check.string(`tls.${name}`, given[name], { pattern: /\S/, fix: "Pass the path of a PEM file.", optional });
  return Object.freeze({ certFile: file("certFile", false)!, keyFile: file("keyFile", false)!, clientCaFile: file("clientCaFile", true) });
}

const METRICS_KEYS: readonly string[] = Object.keys({ token: true, processMetrics: true } satisfies Record<keyof MetricsOptions, true>);

/** `metrics`: off, on, or on with a token (never echoed) and without the process metrics. */
function parseMetrics(metrics: LocalKeyServiceOptions["metrics"]): LocalServiceConfig["metrics"] {
  if (metrics === undefined || metrics === false) return undefined;
  if (metrics === true) return Object.freeze({ token: undefined, processMetrics: true });
  const given = check.object("metrics", metrics, "Pass true, false or { token, processMetrics }.")!;
  check.unknownNames(
    Object.keys(given).map((k) => `metrics.${k}`),
    METRICS_KEYS.map((k) => `metrics.${k}`),
  );
  // The token is a secret: never echo it.
  const token = check.string("metrics.token", given.token, {
    pattern: /^[\x21-\x7e]{16,512}$/,
    secret: true,
    optional: true,
    fix: "Use 16..512 printable characters without spaces, e.g. from `openssl rand -base64 24`.",
  });
  return Object.freeze({ token, processMetrics: check.boolean("metrics.processMetrics", given.processMetrics, true) });
}

const GITHUB_KEYS = "https://api.github.com/meta/public_keys/secret_scanning";

/** `secretScanning`: its public keys from a URL, or from a file read (and checked) now. */
function parseSecretScanning(value: LocalKeyServiceOptions["secretScanning"]): LocalServiceConfig["secretScanning"] {
  const given = check.object("secretScanning", value, `Pass { publicKeys: "${GITHUB_KEYS}" } (or a file path).`);
  if (given === undefined) return undefined;
  check.unknownNames(
    Object.keys(given).map((k) => `secretScanning.${k}`),
    ["secretScanning.publicKeys"],
  );
  const where = check.string("secretScanning.publicKeys", given.publicKeys, {
    pattern: /\S/,
    fix: `Pass the URL of the host's public keys (GitHub: ${GITHUB_KEYS}) or the path of a file holding that JSON document.`,
  });
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(where)) {
    const url = check.url("secretScanning.publicKeys", where, { protocols: ["https:", "http:"], example: GITHUB_KEYS, show: "origin" });
    return Object.freeze({ publicKeys: Object.freeze({ kind: "url" as const, url }) });
  }
  let text: string;
  try {
    text = readFileSync(where, "utf8");
  } catch (err) {
    return check.invalid(
      "secretScanning.publicKeys",
      where,
      `The file cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"}).`,
    );
  }
  try {
    parsePublicKeys(text);
  } catch (err) {
    check.invalid(
      "secretScanning.publicKeys",
      where,
      `The file is not a public keys document (${(err as Error).message}): it holds { "public_keys": [{ "key_identifier", "key" }] } with PEM ECDSA P-256 keys.`,
    );
  }
  return Object.freeze({ publicKeys: Object.freeze({ kind: "file" as const, path: where }) });
}

export function parseOptions(input: LocalKeyServiceOptions = {}, env: NodeJS.ProcessEnv = process.env): LocalServiceConfig {
  const options = check.options(input, "Pass an object or nothing.") as LocalKeyServiceOptions;
  const logger = check.logger(options.logger);
  // Refused, not warned about: a misspelled `rootkey` would leave the service with a random root key.
  check.unknownNames(Object.keys(options), KNOWN);
  // The client's rule (createClient, apiKeyAuth, the console): a key it cannot send in a header is of no use.
  const rootKey = check.string(
    options.rootKey !== undefined ? "rootKey" : "UNKEY_ROOT_KEY",
    options.rootKey ?? (env.UNKEY_ROOT_KEY || undefined),
    {
      pattern: /^[\x21-\x7e]{8,512}$/,
      secret: true,
      fix: "Use 8..512 visible ASCII characters (no spaces, control or non-ASCII characters), or leave it unset to generate one.",
      optional: true,
    },
  );
  const weakness = rootKey === undefined ? undefined : rootKeyWeakness(rootKey);
  if (weakness !== undefined) {
    check.invalid(
      options.rootKey !== undefined ? "rootKey" : "UNKEY_ROOT_KEY",
      HIDDEN,
      `The root key is too easy to guess: ${weakness}. Make one with: ${ROOT_KEY_COMMAND}`,
    );
  }
  const now = check.func<() => number>("now", options.now, "returning Unix milliseconds, e.g. () => Date.now()") ?? Date.now;
  const dataFile = check.string("dataFile", options.dataFile, {
    pattern: /\S/,
    fix: "Pass a file path, or leave it unset to keep state in memory.",
    optional: true,
  });
  // `store`, the former name, still works; both at once is a mistake.
  if (options.storage !== undefined && options.store !== undefined) {
    check.invalid("store", new Hidden("<a Storage>"), "It is the former name of storage: pass storage only.");
  }
  const storageName = options.storage === undefined && options.store !== undefined ? "store" : "storage";
  const storage = options.storage ?? options.store;
  if (storage !== undefined) {
    const s = storage as Partial<Storage> | null;
    if (
      typeof s !== "object" ||
      s === null ||
      typeof s.transaction !== "function" ||
      typeof s.direct !== "object" ||
      typeof s.close !== "function"
    ) {
      check.invalid(
        storageName,
        storage,
        "It is not a Storage (transaction, direct, close). Pass a Storage, e.g. memoryStorage() from keyguard/server, or leave it unset.",
      );
    }
    if (dataFile !== undefined) check.invalid("dataFile", dataFile, `Pass either dataFile or ${storageName}, not both.`);
  }
  const postgres = parseShared(options, dataFile, storage, storageName);
  const port = check.integer("port", options.port ?? 0, { min: 0, max: 65535, note: "0 picks any free one" });
  const host = check.string("host", options.host, { pattern: /./, default: "127.0.0.1", fix: 'Use an address such as "127.0.0.1".' });
  const tls = parseTls(options.tls);
  const drainTimeoutMs = check.integer("drainTimeoutMs", options.drainTimeoutMs, { min: 0, max: 600_000, default: 1000, unit: "ms" });
  const encryptionKey = encryptionKeyOf(options, env);
  const storeKeys = check.boolean("storeKeys", options.storeKeys, false);
  if (storeKeys && !encryptionKey) {
    check.invalid(
      "storeKeys",
      storeKeys,
      `Storing keys needs a key-encryption key: set ${ENCRYPTION_KEY_ENV}, encryptionKey or encryptionKeyFile.`,
    );
  }
  const trustProxy = check.boolean("trustProxy", options.trustProxy, false);
  const rootKeyFailureLimit = parseRootKeyFailureLimit(options.rootKeyFailureLimit);
  const invalidate = check.withMethods<InvalidationPublisher>(
    "invalidate",
    options.invalidate,
    ["invalidate"],
    "Pass an object with an invalidate(message) method, e.g. await redisStore({ url }) from keyguard/redis.",
  );
  const metrics = parseMetrics(options.metrics);
  const withConsole = check.boolean("console", options.console, false);
  const retentionDays = check.integer("verificationRetentionDays", options.verificationRetentionDays, {
    min: 1,
    max: 3650,
    default: 30,
    unit: "days",
  });
  const verificationRetentionMs = retentionDays * 86_400_000;
  const auditRetentionMs =
    check.integer("auditRetentionDays", options.auditRetentionDays, { min: 1, max: 3650, default: 365, unit: "days" }) * 86_400_000;
  return Object.freeze({
    rootKey,
    now,
    dataFile,
    storage,
    postgres,
    port,
    host,
    tls,
    secure: tls !== undefined,
    drainTimeoutMs,
    logger,
    encryptionKey,
    storeKeys,
    trustProxy,
    rootKeyFailureLimit,
    invalidate,
    verificationRetentionMs,
    auditRetentionMs,
    webhooksAllowPrivate: check.boolean("webhooksAllowPrivate", options.webhooksAllowPrivate, false),
    webhookRetryMs:
      check.integer("webhookRetryHours", options.webhookRetryHours, { min: 1, max: 168, default: 24, unit: "hours" }) * 3_600_000,
    webhookLeaseMs:
      check.integer("webhookLeaseSeconds", options.webhookLeaseSeconds, { min: 15, max: 3600, default: 60, unit: "seconds" }) * 1000,
    webhookExpiryNoticeMs:
      check.integer("webhookExpiryNoticeHours", options.webhookExpiryNoticeHours, { min: 1, max: 8760, default: 72, unit: "hours" }) *
      3_600_000,
    console: withConsole,
    metrics,
    secretScanning: parseSecretScanning(options.secretScanning),
  });
}

const ROOT_KEY_FAILURE_KEYS: readonly string[] = Object.keys({ max: true, windowMs: true } satisfies Record<
  keyof Exclude<LocalKeyServiceOptions["rootKeyFailureLimit"], false | undefined>,
  true
>);

/** `rootKeyFailureLimit`: on by default (100 failures a minute per address), `false` for off. */
function parseRootKeyFailureLimit(value: unknown): LocalServiceConfig["rootKeyFailureLimit"] {
  if (value === false) return undefined;
  const given = check.object("rootKeyFailureLimit", value, "Use { max, windowMs } (e.g. { max: 100, windowMs: 60000 }) or false.") ?? {};
  check.unknownNames(
    Object.keys(given).map((k) => `rootKeyFailureLimit.${k}`),
    ROOT_KEY_FAILURE_KEYS.map((k) => `rootKeyFailureLimit.${k}`),
  );
  return Object.freeze({
    max: check.integer("rootKeyFailureLimit.max", given.max, { min: 1, max: 1_000_000, default: 100 }),
    windowMs: check.integer("rootKeyFailureLimit.windowMs", given.windowMs, { min: 1000, max: 86_400_000, default: 60_000, unit: "ms" }),
  });
}
