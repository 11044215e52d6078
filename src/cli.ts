#!/usr/bin/env node
// The `keyguard` command line: `keyguard serve` runs the local key service in the foreground.
import { parseArgs } from "node:util";
import type * as Local from "./local";

const USAGE = `Usage: keyguard serve [options]

Runs the local key service: the key service's v2 HTTP API, in-process, for development and demos.

Options:
  --port <n>        port to listen on (default 8787; 0 picks a free port)
  --host <addr>     address to listen on (default 127.0.0.1)
  --root-key <key>  root key holding every permission (default: env UNKEY_ROOT_KEY, else generated)
  --data <file>     keep the state in this JSON file (written atomically after each change);
                    without it the state lives in memory and is lost on exit
  --postgres <url>  keep the state in PostgreSQL (default: env KEYGUARD_POSTGRES_URL), with
  --redis <url>     the rate-limit counters in Redis (default: env KEYGUARD_REDIS_URL): for
                    several instances sharing one state; needs npm install pg ioredis
  --postgres-schema <name>
                    PostgreSQL schema of the tables (default: env KEYGUARD_POSTGRES_SCHEMA,
                    else keyguard)
  -h, --help        show this help

On start it prints the base URL, the root key and the API id. Point your app at them with
UNKEY_BASE_URL and UNKEY_ROOT_KEY. Only a generated root key is printed; one given with
--root-key or taken from UNKEY_ROOT_KEY is never shown. With --data, a restart reuses the stored
workspace, API and root keys (stored hashed); pass --root-key (or set UNKEY_ROOT_KEY) to keep
using the same root key.
`;

function usageError(message: string): never {
  process.stderr.write(`keyguard: ${message}\n\nRun "keyguard --help" for usage.\n`);
  process.exit(2);
}

async function loadLocal(): Promise<typeof Local> {
  try {
    return await import("./local");
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") {
      console.error('keyguard: "keyguard serve" needs express. Install it with: npm install express');
      process.exit(1);
    }
    throw err;
  }
}

/**
 * The root-key line of the banner. Only a generated key is printed: a key given with --root-key
 * or taken from UNKEY_ROOT_KEY may be a real secret and must not end up in terminal or CI logs.
 */
function rootKeyLine(service: Local.LocalKeyService, given: boolean): string {
  if (given) return "UNKEY_ROOT_KEY: (given with --root-key)";
  if (!service.rootKeyGenerated) return "UNKEY_ROOT_KEY: (from UNKEY_ROOT_KEY)";
  const note = service.restored ? "  (new; earlier root keys in the data file still work)" : "";
  return `UNKEY_ROOT_KEY=${service.rootKey}${note}`;
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
  const where = (url: string) => {
    try {
      const u = new URL(url);
      return `${u.hostname}${u.port ? `:${u.port}` : ""}`;
    } catch {
      return "(invalid URL)";
    }
  };
  return {
    options: { postgres, redis, ...(schema === undefined ? {} : { postgresSchema: schema }) },
    banner: `PostgreSQL at ${where(postgres)} (schema ${schema ?? "keyguard"}), rate-limit counters in Redis at ${where(redis)}`,
  };
}

async function main(argv: string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        port: { type: "string" },
        host: { type: "string" },
        "root-key": { type: "string" },
        data: { type: "string" },
        postgres: { type: "string" },
        redis: { type: "string" },
        "postgres-schema": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    usageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0) {
    console.log(USAGE);
    return;
  }
  if (positionals[0] !== "serve" || positionals.length > 1) {
    usageError(`unknown command ${JSON.stringify(positionals.join(" "))}; the only command is "serve".`);
  }
  const port = values.port === undefined ? 8787 : Number(values.port);
  if (!/^\d+$/.test(values.port ?? "0") || !Number.isInteger(port) || port > 65535) {
    usageError(`--port must be an integer 0..65535, got ${JSON.stringify(values.port)}.`);
  }
  const dataFile = values.data;
  if (dataFile !== undefined && dataFile.trim() === "") usageError("--data needs a file path.");
  const shared = sharedStorage(values, process.env, dataFile !== undefined);

  let running;
  try {
    // Loaded on demand: `--help` works even where the optional peer dependency express is missing.
    const { startLocalKeyService } = await loadLocal();
    running = await startLocalKeyService({ port, host: values.host, rootKey: values["root-key"], dataFile, ...shared?.options });
  } catch (err) {
    const e = err as Error & { code?: string };
    console.error(`keyguard: cannot start the local key service: ${e.message}`);
    process.exit(e.code === "LOCAL_SERVICE_CONFIG_ERROR" ? 2 : 1);
  }
  console.log(`keyguard local key service listening on ${running.baseUrl}`);
  console.log(`  UNKEY_BASE_URL=${running.baseUrl}`);
  console.log(`  ${rootKeyLine(running.service, values["root-key"] !== undefined)}`);
  console.log(`  API id:       ${running.apiId}`);
  console.log(`  workspace id: ${running.workspaceId}`);
  console.log(`  state:        ${shared ? shared.banner : dataFile ? `kept in ${dataFile}` : "in memory (lost on exit; use --data FILE to keep it)"}`);

  const stop = () => {
    running.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

void main(process.argv.slice(2));
