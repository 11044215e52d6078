// `keyguard audit verify`: checks the audit chain of a store (--data, --postgres) or of an NDJSON
// export of audit.listEvents, and names the first record changed, removed or inserted. Exit code
// 0: every chain holds; 1: a record was changed, removed or inserted; 2: bad usage or an unreadable source.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { AuditVerdict } from "../server/storage/audit-verify";

export const AUDIT_USAGE = `Usage: keyguard audit verify --data <file.db>
       keyguard audit verify --postgres <url> [--postgres-schema <name>]
       keyguard audit verify <export.ndjson>

Checks the hash chain of the audit log (docs/security.md, "The audit chain"): of every workspace
of a SQLite data file or a PostgreSQL schema (read only, while the service runs), or of one
workspace's NDJSON export (audit.listEvents with Accept: application/x-ndjson, no filters).
Names the first record changed, removed or inserted. Exit code 0: intact; 1: tampered; 2: usage.
`;

function fail(message: string): never {
  process.stderr.write(`keyguard audit verify: ${message}\n\n${AUDIT_USAGE}`);
  process.exit(2);
}

/** Runs `keyguard audit <args>`; exits with the outcome's code. */
export async function auditCommand(args: string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        data: { type: "string" },
        postgres: { type: "string" },
        "postgres-schema": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    fail((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(AUDIT_USAGE);
    return;
  }
  if (positionals[0] !== "verify")
    fail(`unknown command ${JSON.stringify(["audit", ...positionals].join(" "))}; the command is "audit verify".`);
  const file = positionals[1];
  const sources = [values.data, values.postgres, file].filter((s) => s !== undefined).length;
  if (positionals.length > 2 || sources !== 1) fail("give one source: --data <file.db>, --postgres <url> or an NDJSON export file.");
  if (values["postgres-schema"] !== undefined && values.postgres === undefined) fail("--postgres-schema goes with --postgres.");
  try {
    const verdicts = await verdictsOf(values.data, values.postgres, values["postgres-schema"] ?? "keyguard", file);
    let tampered = false;
    for (const verdict of verdicts) {
      const line = describe(verdict);
      if (verdict.problem) tampered = true;
      (verdict.problem ? process.stderr : process.stdout).write(`${line}\n`);
    }
    if (verdicts.length === 0) process.stdout.write("no audit records\n");
    process.exit(tampered ? 1 : 0);
  } catch (err) {
    process.stderr.write(`keyguard audit verify: ${(err as Error).message}\n`);
    process.exit(2);
  }
}

async function verdictsOf(
  data: string | undefined,
  postgres: string | undefined,
  schema: string,
  file: string | undefined,
): Promise<AuditVerdict[]> {
  const { verifyExportedAudit, verifyStoredAudit } = await import("../server/storage/audit-verify");
  if (file !== undefined) return [verifyExportedAudit(readFileSync(file, "utf8"))];
  const reader =
    data !== undefined
      ? await (await import("../server/storage/sqlite/audit-reader")).openSqliteAuditReader(data)
      : await (await import("../server/storage/postgres/audit-reader")).openPostgresAuditReader(postgres!, schema);
  try {
    return await verifyStoredAudit(reader);
  } finally {
    await reader.close();
  }
}

/** One line per workspace: what holds, or the first record changed, removed or inserted. */
function describe(v: AuditVerdict): string {
  const who = v.workspaceId === undefined ? "export" : v.workspaceId;
  const s = v.summary;
  if (v.problem) return `${who}: ${v.problem.kind.toUpperCase()}: ${v.problem.message}`;
  const notes: string[] = [];
  if (s.unchained > 0) notes.push(`${s.unchained} from before the chain, not covered`);
  if (s.firstSeq !== undefined && s.firstSeq > 1) notes.push(`#1..#${s.firstSeq - 1} deleted earlier (audit retention)`);
  const chained = s.records - s.unchained;
  const range = chained === 0 ? "no chained records" : `#${s.firstSeq ?? 1}..#${s.head.seq} intact`;
  return `${who}: ok: ${s.records} records, ${range}, head ${s.head.hash}${notes.length > 0 ? ` (${notes.join("; ")})` : ""}`;
}
