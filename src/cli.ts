#!/usr/bin/env node
// The `keyguard` command line: `keyguard serve` runs the local key service in the foreground;
// `keyguard migrate` imports a JSON state file of an earlier version into a SQLite data file.
import { readFileSync, statSync } from "node:fs";
import { parseArgs } from "node:util";
import { ConfigError } from "./config-error";
import type * as Local from "./local";

const USAGE = `Usage: keyguard serve [options]
       keyguard migrate <state.json> --data <file.db>

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
  --invalidate-redis <url> announce key changes on this Redis, so that apiKeyAuth() apps whose
                           redisStore() uses it forget changed keys at once (default: env
                           KEYGUARD_INVALIDATE_REDIS_URL, else the --redis URL; needs ioredis)
  --invalidate-prefix <p>  the apps' redisStore() prefix (default keyguard:)
  --encryption-key-file <path>
                           file holding the key-encryption key for recoverable keys (32 bytes,
                           hex or base64; default: env KEYGUARD_ENCRYPTION_KEY)
  --store-keys             the bootstrap API stores keys: createKey {recoverable: true} keeps an
                           encrypted copy that getKey/listKeys {decrypt: true} return (needs an
                           encryption key)
  --no-console             do not serve the web console (by default at the base URL, /)
  --trust-proxy            take the caller's address for IP allow lists from the first
                           X-Forwarded-For entry (only behind your own proxy)
  --metrics                serve Prometheus metrics at GET /metrics (needs npm install prom-client)
  --metrics-token-file <path>
                           scrapes must send Authorization: Bearer <the first line of this file>
                           (default: env KEYGUARD_METRICS_TOKEN, else no token)
  --verification-retention-days <n>
                           keep verification events (analytics.getVerifications) n days
                           (1..3650, default 30; older ones are deleted)
  -h, --help               show this help

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
    const why = e.code === "ENOENT" ? "no such file" : e.code === "EACCES" ? "permission denied" : e.code === "EISDIR" ? "it is a directory" : e.message;
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
 * `--postgres`/`--redis` (or their env variables): both or neither, not with `--data`. The banner
 * names the servers by host and port only: a URL may hold a password.
 */
function sharedStorage(
  values: { postgres?: string; redis?: string; "postgres-schema"?: string },
  env: NodeJS.ProcessEnv,
  withData: boolean,
): { options: { postgres: string; redis: string; postgresSchema?: string }; banner: string } | undefined {
  const postgres = values.postgres ?? (env.KEYGUARD_POSTGRES_URL || undefined);
  const redis = values.redis ?? (env.KEYGUARD_REDIS_URL || undefined);
  const schema = values["postgres-schema"] ?? (env.KEYGUARD_POSTGRES_SCHEMA || undefined);
  if (postgres === undefined && redis === undefined) {
    if (schema !== undefined && values["postgres-schema"] !== undefined) usageError("--postgres-schema needs --postgres and --redis.");
    return undefined;
  }
  if (postgres === undefined) usageError("--redis needs --postgres too (or env KEYGUARD_POSTGRES_URL): PostgreSQL holds the state, Redis the rate-limit counters.");
  if (redis === undefined) usageError("--postgres needs --redis too (or env KEYGUARD_REDIS_URL): PostgreSQL holds the state, Redis the rate-limit counters.");
  if (withData) usageError("--data cannot be combined with --postgres/--redis (or KEYGUARD_POSTGRES_URL/KEYGUARD_REDIS_URL): choose one storage.");

  return {
    options: { postgres, redis, ...(schema === undefined ? {} : { postgresSchema: schema }) },
    banner: `PostgreSQL at ${hostOf(postgres)} (schema ${schema ?? "keyguard"}), rate-limit counters in Redis at ${hostOf(redis)}`,
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
 * else the `--redis` URL) and under which prefix; undefined when nowhere. The rules are redisStore()'s
 * (src/redis/redis-store.ts), said here by flag. The URL is never shown: it may hold a password.
 */
function invalidation(
  values: { "invalidate-redis"?: string; "invalidate-prefix"?: string; redis?: string },
  env: NodeJS.ProcessEnv,
  sharedRedis: string | undefined,
): { url: string; prefix: string } | undefined {
  const prefix = values["invalidate-prefix"] ?? "keyguard:";
  const [url, from] =
    values["invalidate-redis"] !== undefined
      ? [values["invalidate-redis"], "--invalidate-redis"]
      : env.KEYGUARD_INVALIDATE_REDIS_URL
        ? [env.KEYGUARD_INVALIDATE_REDIS_URL, "KEYGUARD_INVALIDATE_REDIS_URL"]
        : [sharedRedis, values.redis !== undefined ? "--redis" : "KEYGUARD_REDIS_URL"];
  if (url === undefined) {
    if (values["invalidate-prefix"] !== undefined) usageError("--invalidate-prefix needs --invalidate-redis (or --redis).");
    return undefined;
  }
  if (url.trim() === "") usageError(`${from} needs a Redis URL.`);
  if (!/^rediss?:\/\//.test(url)) usageError(`${from} must be a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379 (the value is not shown: it may hold a password).`);
  if (!/^[\x21-\x7e]{0,64}$/.test(prefix)) {
    usageError(`--invalidate-prefix must be the apps' redisStore() prefix: up to 64 printable ASCII characters without spaces, e.g. "keyguard:", got ${JSON.stringify(prefix)}.`);
  }
  return { url, prefix };
}

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        port: { type: "string" },
        host: { type: "string" },
        "root-key": { type: "string" },
        "root-key-file": { type: "string" },
        data: { type: "string" },
        "encryption-key-file": { type: "string" },
        "store-keys": { type: "boolean" },
        "trust-proxy": { type: "boolean" },
        metrics: { type: "boolean" },
        "metrics-token-file": { type: "string" },
        "no-console": { type: "boolean" },
        "verification-retention-days": { type: "string" },
        postgres: { type: "string" },
        redis: { type: "string" },
        "postgres-schema": { type: "string" },
        "invalidate-redis": { type: "string" },
        "invalidate-prefix": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    usageError((err as Error).message);
  }
}

type Values = ReturnType<typeof parse>["values"];

/** The flags `migrate` takes: any other (every flag of serve) is refused, so a new one cannot be forgotten. */
const MIGRATE_FLAGS: ReadonlySet<string> = new Set(["data", "help"]);

async function migrate(positionals: string[], values: Values): Promise<void> {
  const extra = Object.keys(values).find((flag) => !MIGRATE_FLAGS.has(flag));
  if (extra !== undefined) usageError(`keyguard migrate takes no --${extra}.`);
  if (positionals.length !== 2) usageError("keyguard migrate needs one JSON state file: keyguard migrate <state.json> --data <file.db>");
  if (values.data === undefined || values.data.trim() === "") usageError("keyguard migrate needs --data <file.db>: the new SQLite file to import into.");
  // Its own module: migrating needs no HTTP service.
  const { migrateStateFile } = await import("./local/migrate");
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

async function serve(positionals: string[], values: Values): Promise<void> {
  if (positionals.length > 1) usageError(`keyguard serve takes no arguments, got ${JSON.stringify(positionals.slice(1).join(" "))}.`);
  const port = values.port === undefined ? 8787 : Number(values.port);
  if (!/^\d+$/.test(values.port ?? "0") || !Number.isInteger(port) || port > 65535) {
    usageError(`--port must be an integer 0..65535, got ${JSON.stringify(values.port)}.`);
  }
  const dataFile = values.data;
  if (dataFile !== undefined && dataFile.trim() === "") usageError("--data needs a file path.");
  if (values["root-key"] !== undefined && values["root-key-file"] !== undefined) {
    usageError("give the root key with --root-key or with --root-key-file, not both.");
  }
  const rootKey = values["root-key-file"] !== undefined ? readSecretFile(values["root-key-file"], "--root-key-file", "the root key") : values["root-key"];
  const given = values["root-key-file"] !== undefined ? "--root-key-file" : values["root-key"] !== undefined ? "--root-key" : undefined;
  const retention = values["verification-retention-days"];
  if (retention !== undefined && !(/^\d{1,4}$/.test(retention) && Number(retention) >= 1 && Number(retention) <= 3650)) {
    usageError(`--verification-retention-days must be a whole number of days 1..3650, got ${JSON.stringify(retention)}.`);
  }
  const shared = sharedStorage(values, process.env, dataFile !== undefined);
  const invalidate = invalidation(values, process.env, shared?.options.redis);
  if (values["metrics-token-file"] !== undefined && !values.metrics) usageError("--metrics-token-file needs --metrics.");
  const metricsToken = values["metrics-token-file"] !== undefined
    ? readSecretFile(values["metrics-token-file"], "--metrics-token-file", "the metrics token")
    : (values.metrics && process.env.KEYGUARD_METRICS_TOKEN) || undefined;
  // The rule of the metrics option's token (src/local/options.ts), said here by where the token came from.
  if (metricsToken !== undefined && !/^[\x21-\x7e]{16,512}$/.test(metricsToken)) {
    const from = values["metrics-token-file"] !== undefined ? "the file of --metrics-token-file" : "KEYGUARD_METRICS_TOKEN";
    usageError(`${from} must hold a metrics token of 16..512 printable characters without spaces, e.g. from \`openssl rand -base64 24\`.`);
  }

  let running;
  let publisher: { invalidate: Local.LocalKeyServiceOptions["invalidate"]; close(): Promise<void> } | undefined;
  try {
    // Loaded on demand: `--help` and usage errors answer without loading the service.
    const { startLocalKeyService } = await import("./local");
    if (invalidate !== undefined) {
      const { redisStore } = await import("./redis");
      const store = await redisStore({ url: invalidate.url, prefix: invalidate.prefix });
      publisher = { invalidate: store, close: () => store.close() };
    }
    running = await startLocalKeyService({
      port,
      host: values.host,
      rootKey,
      dataFile,
      encryptionKeyFile: values["encryption-key-file"],
      storeKeys: values["store-keys"],
      trustProxy: values["trust-proxy"],
      ...(values.metrics && { metrics: { ...(metricsToken === undefined ? {} : { token: metricsToken }) } }),
      console: values["no-console"] !== true,
      ...(retention !== undefined && { verificationRetentionDays: Number(retention) }),
      ...shared?.options,
      ...(publisher && { invalidate: publisher.invalidate }),
    });
  } catch (err) {
    await publisher?.close();
    const e = err as Error & { code?: string };
    console.error(`keyguard: cannot start the local key service: ${e.message}`);
    process.exit(exitCodeOf(err));
  }
  console.log(`keyguard local key service listening on ${running.baseUrl}`);
  console.log(`  UNKEY_BASE_URL=${running.baseUrl}`);
  if (values["no-console"] !== true) console.log(`  console:      ${running.baseUrl}/  (sign in with the root key)`);
  console.log(`  ${rootKeyLine(running.service, given)}`);
  console.log(`  API id:       ${running.apiId}`);
  console.log(`  workspace id: ${running.workspaceId}`);
  if (values.metrics) console.log(`  metrics:      ${running.baseUrl}/metrics${metricsToken === undefined ? "" : " (with the metrics token as bearer token)"}`);
  console.log(`  state:        ${shared ? shared.banner : dataFile ? `kept in ${dataFile}` : "in memory (lost on exit; use --data FILE to keep it)"}`);
  if (invalidate !== undefined) console.log(`  key changes:  announced on Redis at ${hostOf(invalidate.url)} (prefix ${invalidate.prefix})`);

  const stop = () => {
    running
      .close()
      .then(() => publisher?.close())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
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

async function main(argv: string[]): Promise<void> {
  quietSqliteWarning();
  const { values, positionals } = parse(argv);
  const flags = Object.keys(values).map((flag) => `--${flag}`);
  if (values.help || (positionals.length === 0 && flags.length === 0)) {
    console.log(USAGE);
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
