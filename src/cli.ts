#!/usr/bin/env node
// The `keyguard` command line: `keyguard serve` runs the local key service in the foreground;
// `keyguard migrate` imports a JSON state file of an earlier version into a SQLite data file;
// `keyguard audit verify` checks the audit chain (src/cli/audit.ts); `keyguard import` copies the
// recoverable keys of another key service's API (src/cli/import.ts).
import { readFileSync, statSync } from "node:fs";
import { ConfigError, describeValue } from "./config-error";
import { nearestName } from "./unknown-options";
import type * as Local from "./server";

const USAGE = `Usage: keyguard serve [options]
       keyguard migrate <state.json> --data <file.db>
       keyguard --version
       keyguard audit verify (--data <file.db> | --postgres <url> | <export.ndjson>)
       keyguard import --from <url> --from-api <api_id> --into-api <api_id> --migration <mig_id>

keyguard serve runs the local key service: the key service's v2 HTTP API, for development, demos
and self-hosting on one machine.

Options of serve:
  --port <n>               port to listen on (default 8787; 0 picks a free port)
  --host <addr>            address to listen on (default 127.0.0.1)
  --root-key-file <path>   read the root key (holding every permission) from the first line of
                           this file
  --root-key <key>         the root key itself. Every user of the machine can read it in the
                           process list (ps): prefer --root-key-file or env UNKEY_ROOT_KEY.
                           Default: env UNKEY_ROOT_KEY, else a generated key
  --data <file.db>         keep the state in this SQLite file (created when absent; one process
                           per file); without it the state lives in memory and is lost on exit
  --postgres <url>         keep the state in PostgreSQL (default: env KEYGUARD_POSTGRES_URL), with
  --redis <url>            the rate-limit counters in Redis (default: env KEYGUARD_REDIS_URL): for
                           several instances sharing one state; needs npm install pg ioredis
  --postgres-schema <name> PostgreSQL schema of the tables (default: env KEYGUARD_POSTGRES_SCHEMA,
                           else keyguard)
  --redis-ca-file <path>   PEM file of the CA that signed a rediss:// Redis's certificate, trusted
                           besides Node's own (default: env KEYGUARD_REDIS_CA_FILE)
  --redis-cluster          the --redis URL names a node of a Redis Cluster (default: env
                           KEYGUARD_REDIS_CLUSTER=true)
  --invalidate-redis <url> announce key changes on this Redis, so that apiKeyAuth() apps whose
                           redisStore() uses it forget changed keys at once (default: env
                           KEYGUARD_INVALIDATE_REDIS_URL, else the --redis URL; needs ioredis)
  --invalidate-prefix <p>  the apps' redisStore() prefix (default keyguard:)
  --tls-cert <file>        serve HTTPS with this PEM certificate (and its chain), with
  --tls-key <file>         this PEM private key; both read again on SIGHUP, for new connections
                           (a file that cannot be used keeps the certificate in use)
  --tls-client-ca <file>   with --tls-cert: require a client certificate signed by a CA in this
                           PEM file (mutual TLS)
  --drain-timeout <s>      on SIGTERM or SIGINT, stop accepting and let the requests in flight
                           finish for up to this many seconds (default 10), then write the
                           buffered verification events and exit
  --encryption-key-file <path>
                           file holding the key-encryption key for recoverable keys (32 bytes,
                           hex or base64; default: env KEYGUARD_ENCRYPTION_KEY)
  --store-keys             the bootstrap API stores keys: createKey {recoverable: true} keeps an
                           encrypted copy that getKey/listKeys {decrypt: true} return (needs an
                           encryption key)
  --no-console             do not serve the web console (by default at the base URL, /)
  --trust-proxy            take the caller's address for IP allow lists from the first
                           X-Forwarded-For entry (only behind your own proxy)
  --root-key-failure-limit <n>
                           after n failed root keys from one address in a minute, answer
                           that address 429 until the minute has passed (default 100; 0: off)
  --metrics                serve Prometheus metrics at GET /metrics (needs npm install prom-client)
  --metrics-token-file <path>
                           scrapes must send Authorization: Bearer <the first line of this file>
                           (default: env KEYGUARD_METRICS_TOKEN, else no token)
  --verification-retention-days <n>
                           keep verification events (analytics.getVerifications) n days
                           (1..3650, default 30; older ones are deleted)
  --audit-retention-days <n>
                           keep audit records (audit.listEvents) n days
                           (1..3650, default 365; older ones are deleted)
  --webhooks-allow-private deliver webhooks to loopback, private and link-local addresses too
                           (refused by default: tests and closed networks only)
  --webhook-retry-hours <n>
                           retry a webhook message n hours before marking it failed (1..168, default 24)
  --webhook-lease-seconds <n>
                           keep a message taken for delivery from the other instances n seconds:
                           after a crash it is delivered again then (15..3600, default 60)
  --webhook-expiry-notice-hours <n>
                           send key.expiring n hours before a key expires (1..8760, default 72)
  --key-migration <id>     register a "sha256" key migration with this id at start (kept when it
                           exists), for keys.migrateKeys and apiKeyAuth({ migrateFrom }): see
                           docs/migration.md
  --secret-scanning-keys <url|file>
                           receive GitHub's secret scanning reports at POST
                           /secret-scanning/github, checked with the public keys published at
                           this URL (GitHub: https://api.github.com/meta/public_keys/secret_scanning)
                           or held in this file; reported keys are disabled or flagged
  -h, --help               show this help
  -v, --version            print keyguard's version

keyguard audit verify checks the audit log's hash chain and names the first record changed,
removed or inserted (keyguard audit --help).

keyguard import copies every recoverable key of an API of another key service into this one
(keyguard import --help, docs/migration.md).

keyguard migrate imports a JSON state file written by keyguard 0.1's --data into a new SQLite
file, once; it refuses a file that already holds a state and leaves the JSON file as it is.

The console is a web page for people: sign in with a root key to manage APIs, keys, permissions,
roles and root keys, and to watch verifications. It uses the same HTTP API as any client.

On start serve prints the base URL, the root key and the API id. Point your app at them with
UNKEY_BASE_URL and UNKEY_ROOT_KEY. Only a generated root key is printed; one given with
--root-key, --root-key-file or UNKEY_ROOT_KEY is never shown. With --data, a restart reuses the
stored workspace, API and root keys (stored hashed); give the same root key again to keep using it.
`;

function usageError(message: string): never {
  process.stderr.write(`keyguard: ${message}\n\nRun "keyguard --help" for usage.\n`);
  process.exit(2);
}

/** Exit code of a command that failed with `err`: 2 for a configuration error (a bad flag, file or variable), else 1. */
function exitCodeOf(err: unknown): number {
  return err instanceof ConfigError ? 2 : 1;
}

/**
 * The root-key line of the banner. Only a generated key is printed: a key given with --root-key,
 * --root-key-file or UNKEY_ROOT_KEY may be a real secret and must not end up in terminal or CI logs.
 */
function rootKeyLine(service: Local.LocalKeyService, given: string | undefined): string {
  if (given) return `UNKEY_ROOT_KEY: (given with ${given})`;
  if (!service.rootKeyGenerated) return "UNKEY_ROOT_KEY: (from UNKEY_ROOT_KEY)";
  const note = service.restored ? "  (new; earlier root keys in the data file still work)" : "";
  return `UNKEY_ROOT_KEY=${service.rootKey}${note}`;
}

/** The secret in `file` (given with `flag`): its first line, trimmed. Never echoes the file's content. */
function readSecretFile(file: string, flag: string, what: string): string {
  if (file.trim() === "") usageError(`${flag} needs a file path.`);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why =
      e.code === "ENOENT"
        ? "no such file"
        : e.code === "EACCES"
          ? "permission denied"
          : e.code === "EISDIR"
            ? "it is a directory"
            : e.message;
    usageError(`cannot read ${flag} ${JSON.stringify(file)}: ${why}.`);
  }
  const key = text.split(/\r?\n/, 1)[0]!.trim();
  if (key === "") usageError(`${flag} ${JSON.stringify(file)} is empty: put ${what} on its first line.`);
  if (process.platform !== "win32" && (statSync(file).mode & 0o077) !== 0) {
    process.stderr.write(`keyguard: warning: ${file} can be read by other users; restrict it with: chmod 600 ${file}\n`);
  }
  return key;
}

/**
 * `--postgres`, `--redis` and `--postgres-schema`, else their env variables. The rules (both or
 * neither, not with --data) are the service's; a schema from the environment is used only with a
 * server, so that a variable set for other programs does not stop a start on SQLite.
 */
function sharedStorage(
  values: { postgres?: string; redis?: string; "postgres-schema"?: string; "redis-ca-file"?: string; "redis-cluster"?: boolean },
  env: NodeJS.ProcessEnv,
): { postgres?: string; redis?: string; postgresSchema?: string; redisCaFile?: string; redisCluster?: boolean } {
  const postgres = values.postgres ?? (env.KEYGUARD_POSTGRES_URL || undefined);
  const redis = values.redis ?? (env.KEYGUARD_REDIS_URL || undefined);
  const servers = postgres !== undefined || redis !== undefined;
  const schema = values["postgres-schema"] ?? (servers ? env.KEYGUARD_POSTGRES_SCHEMA || undefined : undefined);
  const caFile = values["redis-ca-file"] ?? (servers ? env.KEYGUARD_REDIS_CA_FILE || undefined : undefined);
  const clusterEnv = servers ? env.KEYGUARD_REDIS_CLUSTER || undefined : undefined;
  if (clusterEnv !== undefined && !/^(true|false|1|0)$/.test(clusterEnv)) {
    usageError(`KEYGUARD_REDIS_CLUSTER must be true or false, got ${JSON.stringify(clusterEnv)}.`);
  }
  const cluster = values["redis-cluster"] ?? (clusterEnv === undefined ? undefined : /^(true|1)$/.test(clusterEnv));
  return {
    ...(postgres !== undefined && { postgres }),
    ...(redis !== undefined && { redis }),
    ...(schema !== undefined && { postgresSchema: schema }),
    ...(caFile !== undefined && { redisCaFile: caFile }),
    ...(cluster !== undefined && { redisCluster: cluster }),
  };
}

/** host:port of a URL, for the banner: a URL may hold a password. */
function hostOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}${u.port ? `:${u.port}` : ""}`;
  } catch {
    return "(invalid URL)";
  }
}

/**
 * Where `serve` announces key changes (`--invalidate-redis`, else env KEYGUARD_INVALIDATE_REDIS_URL,
 * else the `--redis` URL of a state on PostgreSQL + Redis, with its CA file and cluster switch) and
 * under which prefix; undefined when nowhere. `from` is how the command line names the URL's
 * source. redisStore() checks them all.
 */
function invalidation(
  values: { "invalidate-redis"?: string; "invalidate-prefix"?: string; redis?: string },
  env: NodeJS.ProcessEnv,
  shared: { postgres?: string; redis?: string; redisCaFile?: string; redisCluster?: boolean },
): { url: string; from: string; prefix: string | undefined; caFile?: string; cluster?: boolean } | undefined {
  const prefix = values["invalidate-prefix"];
  const [url, from] =
    values["invalidate-redis"] !== undefined
      ? [values["invalidate-redis"], "--invalidate-redis"]
      : env.KEYGUARD_INVALIDATE_REDIS_URL
        ? [env.KEYGUARD_INVALIDATE_REDIS_URL, "KEYGUARD_INVALIDATE_REDIS_URL"]
        : [shared.postgres !== undefined ? shared.redis : undefined, values.redis !== undefined ? "--redis" : "KEYGUARD_REDIS_URL"];
  if (url === undefined) {
    if (prefix !== undefined) usageError("--invalidate-prefix needs --invalidate-redis (or --redis).");
    return undefined;
  }
  // The state's Redis: reached as the store reaches it.
  if (from === "--redis" || from === "KEYGUARD_REDIS_URL") {
    return {
      url,
      from,
      prefix,
      ...(shared.redisCaFile !== undefined && { caFile: shared.redisCaFile }),
      ...(shared.redisCluster !== undefined && { cluster: shared.redisCluster }),
    };
  }
  return { url, from, prefix };
}

/** How the command line names an option: by flag, or by the variable or file its value came from. */
type Names = Readonly<Record<string, string>>;

/** Any of `names` as a whole word of a sentence: not part of a longer name, a path (keyguard/redis) or a URL (redis://). */
const wordsOf = (names: readonly string[]) =>
  new RegExp(`(?<![\\w./:-])(?:${names.map((n) => n.replaceAll(".", "\\.")).join("|")})(?![\\w/:-])`, "g");

/**
 * A configuration error of the service or of redisStore() said by flag: its option becomes the flag
 * (or variable) in `names`, and so do the options its advice names. The rule and the advice stay
 * the library's, so the two cannot disagree. Undefined when the option has no flag or the error no
 * advice: then the library's message is shown as it is. Values are shown as the library shows
 * them, which never echoes a secret.
 */
function byFlag(err: ConfigError, names: Names): string | undefined {
  const label = names[err.option];
  if (label === undefined || err.fix === undefined) return undefined;
  const fix = err.fix.replace(wordsOf(Object.keys(names)), (option) => names[option]!);
  const advice = fix.charAt(0).toUpperCase() + fix.slice(1);
  return `invalid ${label}${err.shown === undefined ? "" : ` = ${err.shown}`}. ${advice}`;
}

/** The flags of every command: their kind, and the value's name the messages show. */
const FLAGS = {
  port: { value: "<n>" },
  host: { value: "<addr>" },
  "root-key": { value: "<key>" },
  "root-key-file": { value: "<path>" },
  data: { value: "<file.db>" },
  "encryption-key-file": { value: "<path>" },
  "store-keys": { value: false },
  "trust-proxy": { value: false },
  "root-key-failure-limit": { value: "<n>" },
  metrics: { value: false },
  "metrics-token-file": { value: "<path>" },
  "no-console": { value: false },
  "verification-retention-days": { value: "<n>" },
  "audit-retention-days": { value: "<n>" },
  "webhooks-allow-private": { value: false },
  "webhook-retry-hours": { value: "<n>" },
  "webhook-lease-seconds": { value: "<n>" },
  "webhook-expiry-notice-hours": { value: "<n>" },
  "secret-scanning-keys": { value: "<url|file>" },
  postgres: { value: "<url>" },
  redis: { value: "<url>" },
  "postgres-schema": { value: "<name>" },
  "redis-ca-file": { value: "<path>" },
  "redis-cluster": { value: false },
  "drain-timeout": { value: "<s>" },
  "invalidate-redis": { value: "<url>" },
  "invalidate-prefix": { value: "<p>" },
  "tls-cert": { value: "<file>" },
  "tls-key": { value: "<file>" },
  "tls-client-ca": { value: "<file>" },
  "key-migration": { value: "<id>" },
  help: { value: false, short: "h" },
  version: { value: false, short: "v" },
} as const satisfies Record<string, { value: string | false; short?: string }>;

type Flag = keyof typeof FLAGS;
type Values = { -readonly [F in Flag]?: (typeof FLAGS)[F]["value"] extends string ? string : boolean };

const SHORT: Readonly<Record<string, Flag>> = Object.fromEntries(
  Object.entries(FLAGS).flatMap(([name, flag]) => ("short" in flag ? [[flag.short, name as Flag]] : [])),
);

/**
 * The command line's flags and positionals, in keyguard's words: `--flag value`, `--flag=value`,
 * `-h`, `-v`, and `--` before positionals that start with a dash. A value may start with a single
 * dash (`--drain-timeout -1` is refused by its check, not taken for a flag); a flag's value that is
 * itself a flag (`--data --port 1`) is missing. Flag names only in messages: a value may be a secret.
 */
function parse(argv: readonly string[]): { values: Values; positionals: string[] } {
  const values: Record<string, string | boolean> = {};
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    let name: string;
    let inline: string | undefined;
    if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      [name, inline] = eq === -1 ? [arg.slice(2), undefined] : [arg.slice(2, eq), arg.slice(eq + 1)];
    } else if (/^-[^-\d]$/.test(arg)) {
      const long = SHORT[arg.slice(1)];
      if (long === undefined) usageError(`unknown flag ${arg}; the short flags are -h (--help) and -v (--version).`);
      name = long;
    } else if (/^-[^-\d]./.test(arg)) {
      usageError(`unknown flag ${arg}: flags longer than one letter start with two dashes (--flag).`);
    } else {
      positionals.push(arg);
      continue;
    }
    if (!Object.hasOwn(FLAGS, name)) {
      const near = nearestName(name, Object.keys(FLAGS));
      usageError(`unknown flag --${name}${near === undefined ? "" : ` (did you mean --${near}?)`}.`);
    }
    const flag = FLAGS[name as Flag];
    if (Object.hasOwn(values, name)) usageError(`--${name} is given twice.`);
    if (flag.value === false) {
      if (inline !== undefined) usageError(`--${name} takes no value.`);
      values[name] = true;
      continue;
    }
    const next = argv[i + 1];
    const value = inline ?? (next === undefined || next.startsWith("--") ? undefined : (i++, next));
    if (value === undefined) usageError(`--${name} needs a value: --${name} ${flag.value}.`);
    values[name] = value;
  }
  return { values: values as Values, positionals };
}

/** The flags `migrate` takes: any other (every flag of serve) is refused, so a new one cannot be forgotten. */
const MIGRATE_FLAGS: ReadonlySet<Flag> = new Set<Flag>(["data", "help"]);

async function migrate(positionals: string[], values: Values): Promise<void> {
  const extra = Object.keys(values).find((flag) => !MIGRATE_FLAGS.has(flag as Flag));
  if (extra !== undefined) usageError(`keyguard migrate takes no --${extra}.`);
  if (positionals.length !== 2) usageError("keyguard migrate needs one JSON state file: keyguard migrate <state.json> --data <file.db>");
  if (values.data === undefined || values.data.trim() === "")
    usageError("keyguard migrate needs --data <file.db>: the new SQLite file to import into.");
  // Its own module: migrating needs no HTTP service.
  const { migrateStateFile } = await import("./server/storage/migrate-json");
  try {
    const counts = await migrateStateFile(positionals[1]!, values.data);
    const summary = Object.entries(counts)
      .map(([table, n]) => `${n} ${table}`)
      .join(", ");
    console.log(`keyguard: imported ${positionals[1]} into ${values.data}: ${summary}.`);
    console.log(`Serve it with: keyguard serve --data ${values.data}`);
  } catch (err) {
    const e = err as Error & { code?: string };
    console.error(`keyguard: ${e.message}`);
    process.exit(exitCodeOf(err));
  }
}

/**
 * A number flag's value for the service's option: a whole number as a number, anything else as
 * given, so that the service's own rule refuses it in the same words as a number out of range
 * (`invalid --port = "abc". Use a whole number 0..65535 …`, said by {@link byFlag}).
 */
function numeric(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  return /^\d+$/.test(value) ? Number(value) : (value as unknown as number);
}

/** `--drain-timeout` in seconds (the service takes ms: its rule is said here, in the flag's unit). */
function drainTimeout(value: string | undefined): number {
  if (value === undefined) return 10;
  const seconds = /^\d+$/.test(value) ? Number(value) : undefined;
  if (seconds === undefined || seconds > 600) {
    usageError(`invalid --drain-timeout = ${describeValue(seconds ?? value)}. Use a whole number of seconds 0..600.`);
  }
  return seconds;
}

/** `--tls-cert`, `--tls-key` and `--tls-client-ca`: the first two together, the third with them. */
function tlsFiles(values: Values): Local.TlsOptions | undefined {
  const { "tls-cert": certFile, "tls-key": keyFile, "tls-client-ca": clientCaFile } = values;
  if (certFile === undefined && keyFile === undefined) {
    if (clientCaFile !== undefined) usageError("--tls-client-ca needs --tls-cert and --tls-key: mutual TLS is served over HTTPS.");
    return undefined;
  }
  if (certFile === undefined) usageError("--tls-key needs --tls-cert: the certificate that key belongs to.");
  if (keyFile === undefined) usageError("--tls-cert needs --tls-key: the certificate's private key.");
  return { certFile, keyFile, ...(clientCaFile !== undefined && { clientCaFile }) };
}

/**
 * A listening error that is the command line's (exit 2): a --host that does not resolve, or that
 * is not an address of this machine. Undefined for any other (a port in use: exit 1).
 */
function listenProblem(err: unknown, host: string): string | undefined {
  const e = err as NodeJS.ErrnoException & { hostname?: string };
  if (e?.syscall === "getaddrinfo" && (e.code === "ENOTFOUND" || e.code === "EAI_AGAIN")) {
    return `invalid --host = ${JSON.stringify(host)}: no such host (${e.code}). Use an address of this machine, e.g. 127.0.0.1, 0.0.0.0 or ::.`;
  }
  if (e?.code === "EADDRNOTAVAIL") {
    return `invalid --host = ${JSON.stringify(host)}: not an address of this machine (EADDRNOTAVAIL). Use one of its addresses, e.g. 127.0.0.1, 0.0.0.0 or ::.`;
  }
  return undefined;
}

/** The error code under `err` (its causes included), e.g. ECONNREFUSED. */
function codeUnder(err: unknown): string | undefined {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === "string" && /^E[A-Z_]+$/.test(e.code)) return e.code;
  }
  return undefined;
}

/** What a failed start means for the operator: the error's code and what the service does now. */
function startAdvice(err: unknown): string {
  if (!(err instanceof Error) || (err as { code?: unknown }).code !== "STORE_UNAVAILABLE") return "";
  const code = codeUnder(err.cause);
  return (
    `${code === undefined ? "" : ` (${code})`}. The service did not start: PostgreSQL and Redis must be reachable when it ` +
    "starts (once running, it answers 503 while either is away and reconnects by itself). Start it again once they are up."
  );
}

/**
 * The logger of the Redis that announces key changes, in the service's words (redisStore()'s own
 * are an app's: "answering from memory"). Until the service has started its warnings are held: a
 * start that fails says why itself; one held warning is said once the service is up.
 */
function announcerLogger(where: string): { logger: Local.LocalKeyServiceOptions["logger"] & object; started(): void } {
  let held: string | undefined;
  let up = false;
  const say = (line: string) => console.error(line);
  return {
    logger: {
      warn: (fields) => {
        const code = typeof fields.code === "string" ? fields.code : typeof fields.error === "string" ? fields.error : "error";
        const line =
          `keyguard: cannot announce key changes on Redis at ${where} (${code}): they are kept and announced when it is back; ` +
          "until then apps may answer from their cache for a changed key (up to its TTL)";
        if (up) say(line);
        else held = line;
      },
      error: (fields, message) => say(`keyguard: ${message} ${JSON.stringify(fields)}`),
    },
    started() {
      up = true;
      if (held !== undefined) say(held);
    },
  };
}

/** How the command line names `option`'s value: its flag, else the variable it came from, else both. */
function sourceOf(flag: string, given: boolean, env: string, fromEnv: boolean): string {
  return given ? flag : fromEnv ? env : `${flag} (or ${env})`;
}

async function serve(positionals: string[], values: Values): Promise<void> {
  if (positionals.length > 1) usageError(`keyguard serve takes no arguments, got ${JSON.stringify(positionals.slice(1).join(" "))}.`);
  const env = process.env;
  const port = numeric(values.port) ?? 8787;
  const retention = numeric(values["verification-retention-days"]);
  const auditRetention = numeric(values["audit-retention-days"]);
  const webhookRetry = numeric(values["webhook-retry-hours"]);
  const webhookLease = numeric(values["webhook-lease-seconds"]);
  const expiryNotice = numeric(values["webhook-expiry-notice-hours"]);
  const failureLimit = numeric(values["root-key-failure-limit"]);
  const drainSeconds = drainTimeout(values["drain-timeout"]);
  const keyMigration = values["key-migration"];
  if (keyMigration !== undefined && !/^[A-Za-z0-9_\-.:]{3,255}$/.test(keyMigration)) {
    usageError("invalid --key-migration. Use an id of 3 to 255 letters, digits, _, -, . or : (e.g. mig_hosted).");
  }
  if (values["root-key"] !== undefined && values["root-key-file"] !== undefined) {
    usageError("give the root key with --root-key or with --root-key-file, not both.");
  }
  const rootKey =
    values["root-key-file"] !== undefined ? readSecretFile(values["root-key-file"], "--root-key-file", "the root key") : values["root-key"];
  const given = values["root-key-file"] !== undefined ? "--root-key-file" : values["root-key"] !== undefined ? "--root-key" : undefined;
  const shared = sharedStorage(values, env);
  const invalidate = invalidation(values, env, shared);
  if (values["metrics-token-file"] !== undefined && !values.metrics) usageError("--metrics-token-file needs --metrics.");
  const tls = tlsFiles(values);
  const metricsToken =
    values["metrics-token-file"] !== undefined
      ? readSecretFile(values["metrics-token-file"], "--metrics-token-file", "the metrics token")
      : (values.metrics && env.KEYGUARD_METRICS_TOKEN) || undefined;

  // The service's options (and the store's it opens) by flag: what its errors name.
  const serviceNames: Names = {
    rootKey: given === "--root-key-file" ? "--root-key-file (its content)" : "--root-key",
    UNKEY_ROOT_KEY: "UNKEY_ROOT_KEY",
    dataFile: "--data",
    postgres: sourceOf("--postgres", values.postgres !== undefined, "KEYGUARD_POSTGRES_URL", shared.postgres !== undefined),
    redis: sourceOf("--redis", values.redis !== undefined, "KEYGUARD_REDIS_URL", shared.redis !== undefined),
    postgresSchema: sourceOf(
      "--postgres-schema",
      values["postgres-schema"] !== undefined,
      "KEYGUARD_POSTGRES_SCHEMA",
      shared.postgresSchema !== undefined,
    ),
    schema: sourceOf(
      "--postgres-schema",
      values["postgres-schema"] !== undefined,
      "KEYGUARD_POSTGRES_SCHEMA",
      shared.postgresSchema !== undefined,
    ),
    redisCaFile: sourceOf(
      "--redis-ca-file",
      values["redis-ca-file"] !== undefined,
      "KEYGUARD_REDIS_CA_FILE",
      shared.redisCaFile !== undefined,
    ),
    redisCluster: sourceOf(
      "--redis-cluster",
      values["redis-cluster"] !== undefined,
      "KEYGUARD_REDIS_CLUSTER",
      shared.redisCluster !== undefined,
    ),
    drainTimeoutMs: "--drain-timeout",
    port: "--port",
    host: "--host",
    encryptionKeyFile: "--encryption-key-file",
    KEYGUARD_ENCRYPTION_KEY: "KEYGUARD_ENCRYPTION_KEY",
    storeKeys: "--store-keys",
    "rootKeyFailureLimit.max": "--root-key-failure-limit",
    "metrics.token": values["metrics-token-file"] !== undefined ? "--metrics-token-file (its content)" : "KEYGUARD_METRICS_TOKEN",
    verificationRetentionDays: "--verification-retention-days",
    auditRetentionDays: "--audit-retention-days",
    webhookRetryHours: "--webhook-retry-hours",
    webhookLeaseSeconds: "--webhook-lease-seconds",
    webhookExpiryNoticeHours: "--webhook-expiry-notice-hours",
    "secretScanning.publicKeys": "--secret-scanning-keys",
    "tls.certFile": "--tls-cert",
    "tls.keyFile": "--tls-key",
    "tls.clientCaFile": "--tls-client-ca",
  };
  let running;
  let publisher: { invalidate: Local.LocalKeyServiceOptions["invalidate"]; prefix: string; close(): Promise<void> } | undefined;
  const announcer = invalidate && announcerLogger(hostOf(invalidate.url));
  let names: Names = {};
  try {
    // Loaded on demand: `--help` and usage errors answer without loading the service.
    const { startLocalKeyService } = await import("./server");
    if (invalidate !== undefined) {
      names = {
        url: invalidate.from,
        prefix: "--invalidate-prefix",
        caFile: serviceNames.redisCaFile!,
        cluster: serviceNames.redisCluster!,
      };
      const { redisStore } = await import("./redis");
      const { url, prefix, caFile, cluster } = invalidate;
      const store = await redisStore({
        url,
        ...(prefix !== undefined && { prefix }),
        ...(caFile !== undefined && { caFile }),
        ...(cluster !== undefined && { cluster }),
        logger: announcer!.logger,
      });
      publisher = { invalidate: store, prefix: store.prefix, close: () => store.close() };
    }
    names = serviceNames;
    running = await startLocalKeyService({
      port,
      host: values.host,
      ...(tls && { tls }),
      drainTimeoutMs: drainSeconds * 1000,
      rootKey,
      dataFile: values.data,
      encryptionKeyFile: values["encryption-key-file"],
      storeKeys: values["store-keys"],
      trustProxy: values["trust-proxy"],
      ...(failureLimit !== undefined && { rootKeyFailureLimit: failureLimit === 0 ? false : { max: failureLimit } }),
      ...(values.metrics && { metrics: { ...(metricsToken === undefined ? {} : { token: metricsToken }) } }),
      console: values["no-console"] !== true,
      ...(retention !== undefined && { verificationRetentionDays: retention }),
      ...(auditRetention !== undefined && { auditRetentionDays: auditRetention }),
      ...(webhookRetry !== undefined && { webhookRetryHours: webhookRetry }),
      ...(webhookLease !== undefined && { webhookLeaseSeconds: webhookLease }),
      ...(expiryNotice !== undefined && { webhookExpiryNoticeHours: expiryNotice }),
      ...(values["webhooks-allow-private"] && { webhooksAllowPrivate: true }),
      ...(values["secret-scanning-keys"] !== undefined && { secretScanning: { publicKeys: values["secret-scanning-keys"] } }),
      ...shared,
      ...(publisher && { invalidate: publisher.invalidate }),
    });
  } catch (err) {
    await publisher?.close();
    const said = err instanceof ConfigError ? byFlag(err, names) : listenProblem(err, values.host ?? "127.0.0.1");
    if (said !== undefined) usageError(said);
    const e = err as Error & { code?: string };
    console.error(`keyguard: cannot start the local key service: ${e.message}${startAdvice(err)}`);
    process.exit(exitCodeOf(err));
  }
  console.log(`keyguard local key service listening on ${running.baseUrl}`);
  console.log(`  UNKEY_BASE_URL=${running.baseUrl}`);
  if (values["no-console"] !== true) console.log(`  console:      ${running.baseUrl}/  (sign in with the root key)`);
  console.log(`  ${rootKeyLine(running.service, given)}`);
  console.log(`  API id:       ${running.apiId}`);
  console.log(`  workspace id: ${running.workspaceId}`);
  if (values.metrics)
    console.log(
      `  metrics:      ${running.baseUrl}/metrics${metricsToken === undefined ? "" : " (with the metrics token as bearer token)"}`,
    );
  const state =
    shared.postgres !== undefined && shared.redis !== undefined
      ? `PostgreSQL at ${hostOf(shared.postgres)} (schema ${shared.postgresSchema ?? "keyguard"}), rate-limit counters in Redis at ${hostOf(shared.redis)}`
      : values.data
        ? `kept in ${values.data}`
        : "in memory (lost on exit; use --data FILE to keep it)";
  console.log(`  state:        ${state}`);
  if (values["secret-scanning-keys"] !== undefined) console.log(`  secret scanning: ${running.baseUrl}/secret-scanning/github`);
  if (invalidate !== undefined && publisher)
    console.log(`  key changes:  announced on Redis at ${hostOf(invalidate.url)} (prefix ${publisher.prefix})`);
  if (tls)
    console.log(
      `  TLS:          ${tls.certFile}${tls.clientCaFile === undefined ? "" : `, client certificates from ${tls.clientCaFile}`} (SIGHUP reloads)`,
    );
  if (keyMigration !== undefined) {
    // Kept when it exists (a restart, or another instance of the fleet registered it first).
    await running.service.createKeyMigration({ migrationId: keyMigration, algorithm: "sha256" }).catch((err: unknown) => {
      if (!(err instanceof Error && /already exists/.test(err.message))) throw err;
    });
    console.log(`  key migration: ${keyMigration} (sha256; keys.migrateKeys imports under it)`);
  }
  // From the process's start (Node.js's own start and the loading of the modules included) to the
  // moment the service answers.
  console.log(`keyguard: ready in ${Math.round(performance.now())} ms (since the process started)`);
  announcer?.started();
  if (tls) {
    process.on("SIGHUP", () => {
      try {
        running.reloadTls();
        console.log(`keyguard: SIGHUP: reloaded the TLS certificate from ${tls.certFile} (new connections use it)`);
      } catch (err) {
        const said = err instanceof ConfigError ? byFlag(err, serviceNames) : undefined;
        console.error(`keyguard: SIGHUP: kept the TLS certificate in use: ${said ?? (err as Error).message}`);
      }
    });
  }

  // A signal drains: no new connections, the requests in flight finish (within --drain-timeout),
  // the buffered verification events are written, the stores closed. Should any of that hang, the
  // process exits anyway, 5 s after the drain's bound.
  const stop = (signal: string) => {
    // close() stops accepting before it returns; the line is printed after it, so that whoever reads
    // "draining" can count on new connections being refused.
    const closed = running.close();
    console.log(`keyguard: ${signal}: draining (up to ${drainSeconds} s for the requests in flight), then exiting`);
    setTimeout(
      () => {
        console.error("keyguard: the shutdown did not finish in time; exiting");
        process.exit(1);
      },
      drainSeconds * 1000 + 5000,
    ).unref();
    closed
      .then(() => publisher?.close())
      .then(
        () => {
          console.log("keyguard: stopped");
          process.exit(0);
        },
        (err: unknown) => {
          console.error(`keyguard: the shutdown failed: ${(err as Error).message}`);
          process.exit(1);
        },
      );
  };
  process.once("SIGINT", () => stop("SIGINT"));
  process.once("SIGTERM", () => stop("SIGTERM"));
}

/**
 * Node.js 22 warns on stderr that node:sqlite is experimental each time it is loaded. The CLI uses
 * it on purpose (the data file's driver), so it drops that one warning in its own process; every
 * other warning is printed as usual.
 */
function quietSqliteWarning(): void {
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === "string" ? warning : warning?.message;
    if (typeof text === "string" && text.startsWith("SQLite is an experimental feature")) return;
    emit(warning, ...rest);
  }) as typeof process.emitWarning;
}

/** The package's version, from its package.json (next to src/ and dist/). */
function version(): string {
  return (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;
}

async function main(argv: string[]): Promise<void> {
  quietSqliteWarning();
  // `keyguard audit …` has its own flags (src/cli/audit.ts).
  if (argv[0] === "audit") return (await import("./cli/audit")).auditCommand(argv.slice(1));
  // `keyguard import …` too (src/cli/import.ts).
  if (argv[0] === "import") return (await import("./cli/import")).importCommand(argv.slice(1));
  const { values, positionals } = parse(argv);
  const flags = Object.keys(values).map((flag) => `--${flag}`);
  if (values.help || (positionals.length === 0 && flags.length === 0)) {
    console.log(USAGE);
    return;
  }
  if (values.version) {
    console.log(`keyguard ${version()}`);
    return;
  }
  if (positionals.length === 0) {
    // Flags without a command (e.g. "serve" forgotten): a script must not take the usage for success.
    // Flag names only: a value may be a secret (--root-key).
    usageError(`no command given with ${flags.join(", ")}: put "serve" or "migrate" first (keyguard serve [options]).`);
  }
  if (positionals[0] === "serve") return serve(positionals, values);
  if (positionals[0] === "migrate") return migrate(positionals, values);
  usageError(`unknown command ${JSON.stringify(positionals.join(" "))}; the commands are "serve" and "migrate".`);
}

void main(process.argv.slice(2));
