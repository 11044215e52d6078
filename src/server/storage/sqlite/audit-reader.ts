// The audit chain of a SQLite data file, read for `keyguard audit verify` without opening the store:
// no lock on the file (a running `keyguard serve` keeps it), no migration, reads only.
import { existsSync } from "node:fs";
import { LocalServiceConfigError } from "../../errors";
import type { AuditChainSource } from "../audit-verify";
import { auditHeads, readAuditChain } from "./audit";
import { openConnection } from "./driver";
import { checkFileKind } from "./open";
import { MIGRATIONS } from "./schema";
import { SqliteTables } from "./tables";

/** Version of the schema that brought the audit chain. */
const CHAIN_VERSION = MIGRATIONS.findIndex((sql) => sql.includes("audit_chain")) + 1;

export async function openSqliteAuditReader(file: string): Promise<AuditChainSource & { close(): void }> {
  if (!existsSync(file)) throw new LocalServiceConfigError(`keyguard audit verify: ${JSON.stringify(file)} does not exist.`);
  checkFileKind(file);
  const db = await openConnection(file);
  const version = Number(Object.values(db.prepare("PRAGMA user_version").get() ?? { v: 0 })[0]);
  if (version < CHAIN_VERSION) {
    db.close();
    throw new LocalServiceConfigError(
      `keyguard audit verify: ${JSON.stringify(file)} has no audit chain yet (schema version ${version}): start keyguard serve --data on it once.`,
    );
  }
  const tables = new SqliteTables(db);
  return {
    auditHeads: async () => auditHeads(tables),
    readAuditChain: async (workspaceId, after, limit) => readAuditChain(tables, workspaceId, after, limit),
    close: () => db.close(),
  };
}
