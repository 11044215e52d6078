// `keyguard import`: copies every recoverable key of an API of another key service (listed with
// `apis.listKeys {decrypt: true}`) into keyguard's service (`keys.migrateKeys` under a `sha256`
// migration, by the key's SHA-256), with progress on stderr and a summary on stdout. Keys the old
// service cannot give back wait for their first request (apiKeyAuth({ migrateFrom })). Exit code
// 0: done; 1: a service failed (the keys imported so far stay); 2: bad usage.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { createClient } from "../client/client";
import { keyHash } from "../protocol/key-hash";
import { migrationRecord } from "../protocol/migration-record";
import type { MigrateKeyData } from "../protocol/types";

export const IMPORT_USAGE = `Usage: keyguard import --from <url> --from-api <api_id> --into-api <api_id> --migration <mig_id>

Copies every recoverable key of an API of another key service (the hosted one, or another keyguard)
into this key service, with every setting (docs/migration.md). Keys that service cannot give back
(not recoverable) are not copied: apiKeyAuth({ migrateFrom }) moves each on its first request.
A key already here is left as it is, so the command can run again.

  --from <url>                 the other service's base URL
  --from-root-key-file <path>  its root key, from the first line of this file (default: env
                               KEYGUARD_FROM_ROOT_KEY); needs read_key and decrypt_key on the API
  --from-api <api_id>          the API there whose keys are copied
  --into <url>                 this key service's base URL (default: env UNKEY_BASE_URL)
  --root-key-file <path>       its root key, from the first line of this file (default: env
                               UNKEY_ROOT_KEY); needs create_key on --into-api
  --into-api <api_id>          the API here the keys go into
  --migration <mig_id>         a "sha256" key migration of this service's workspace
  -h, --help                   show this help
`;

function fail(message: string): never {
  process.stderr.write(`keyguard import: ${message}\n\n${IMPORT_USAGE}`);
  process.exit(2);
}

/** The first line of a root-key file, else the environment variable; never printed. */
function rootKey(file: string | undefined, env: string, flag: string): string {
  let key: string | undefined;
  if (file !== undefined) {
    try {
      key = readFileSync(file, "utf8").split(/\r?\n/)[0]?.trim();
    } catch (err) {
      fail(`cannot read ${flag} ${JSON.stringify(file)} (${(err as NodeJS.ErrnoException).code ?? "error"}).`);
    }
  } else {
    key = process.env[env];
  }
  if (key === undefined || key === "") fail(`no root key: pass ${flag} <path> or set ${env}.`);
  return key;
}

/** What a run did, for the summary. */
interface Tally {
  listed: number;
  imported: number;
  held: number;
  notRecoverable: number;
}

/** One progress line: a bar of the keys read so far against the pages' estimate, rewritten in place on a terminal. */
function progress(t: Tally, done: boolean): void {
  const handled = t.imported + t.held + t.notRecoverable;
  const width = 24;
  const filled = t.listed === 0 ? width : Math.round((handled / t.listed) * width);
  const line = `[${"#".repeat(filled)}${".".repeat(width - filled)}] ${handled} keys read: ${t.imported} imported, ${t.held} already here, ${t.notRecoverable} not recoverable`;
  if (process.stderr.isTTY) process.stderr.write(`\r${line}${done ? "\n" : ""}`);
  else process.stderr.write(`${line}\n`);
}

/** Runs `keyguard import <args>`; exits with the outcome's code. */
export async function importCommand(args: string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: false,
      options: {
        from: { type: "string" },
        "from-root-key-file": { type: "string" },
        "from-api": { type: "string" },
        into: { type: "string" },
        "root-key-file": { type: "string" },
        "into-api": { type: "string" },
        migration: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    // Node's message names the flag, never a value.
    fail((err as Error).message);
  }
  const { values } = parsed;
  if (values.help) {
    process.stdout.write(IMPORT_USAGE);
    return;
  }
  for (const flag of ["from", "from-api", "into-api", "migration"] as const) {
    if (values[flag] === undefined || values[flag] === "") fail(`--${flag} is required.`);
  }
  const into = values.into ?? process.env.UNKEY_BASE_URL;
  if (into === undefined || into === "") fail("no key service to import into: pass --into <url> or set UNKEY_BASE_URL.");
  const oldRootKey = rootKey(values["from-root-key-file"], "KEYGUARD_FROM_ROOT_KEY", "--from-root-key-file");
  const ownRootKey = rootKey(values["root-key-file"], "UNKEY_ROOT_KEY", "--root-key-file");
  const quiet = { warn() {}, error() {} };
  let old, here;
  try {
    old = createClient({ baseUrl: values.from, rootKey: oldRootKey, logger: quiet });
    here = createClient({ baseUrl: into, rootKey: ownRootKey, logger: quiet });
  } catch (err) {
    fail((err as Error).message.replace(/^createClient: /, ""));
  }
  const t: Tally = { listed: 0, imported: 0, held: 0, notRecoverable: 0 };
  try {
    let cursor: string | undefined;
    do {
      const page = await old.apis.listKeys({
        apiId: values["from-api"]!,
        decrypt: true,
        limit: 100,
        ...(cursor === undefined ? {} : { cursor }),
      });
      t.listed += page.length;
      const batch: MigrateKeyData[] = [];
      for (const info of page) {
        if (typeof info.plaintext === "string" && info.plaintext !== "") batch.push(migrationRecord(keyHash(info.plaintext), info));
        else t.notRecoverable++;
      }
      if (batch.length > 0) {
        const answer = await here.keys.migrateKeys({ migrationId: values.migration!, apiId: values["into-api"]!, keys: batch });
        t.imported += answer.migrated.length;
        t.held += answer.failed.length;
      }
      progress(t, false);
      cursor = page.pagination.hasMore ? page.pagination.cursor : undefined;
    } while (cursor !== undefined);
  } catch (err) {
    const e = err as { code?: unknown; status?: unknown; message?: unknown };
    if (t.listed > 0) progress(t, true);
    process.stderr.write(
      `keyguard import: stopped: ${typeof e.message === "string" ? e.message : String(err)}${e.status === undefined ? "" : ` (HTTP ${String(e.status)})`}; the keys imported so far stay, run it again to go on.\n`,
    );
    process.exit(1);
  } finally {
    await Promise.allSettled([old.close(), here.close()]);
  }
  progress(t, true);
  process.stdout.write(
    `${t.listed} keys listed: ${t.imported} imported, ${t.held} already here, ${t.notRecoverable} not recoverable (they move on their first request with apiKeyAuth({ migrateFrom }))\n`,
  );
}
