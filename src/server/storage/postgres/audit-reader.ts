// The audit chain of a PostgreSQL schema, read for `keyguard audit verify` without opening the
// store: no Redis, no migration, reads only (a running fleet goes on meanwhile).
import type * as PgModule from "pg";
import { LocalServiceConfigError } from "../../errors";
import { loadPeer } from "../../peer-module";
import type { AuditChainSource } from "../audit-verify";
import { auditHeads, readAuditChain } from "./audit";
import type { Query } from "./query";
import { quoteIdent } from "./schema";

export async function openPostgresAuditReader(url: string, schema: string): Promise<AuditChainSource & { close(): Promise<void> }> {
  const pg = await loadPeer<typeof PgModule>("pg", "keyguard audit verify --postgres", () => import("pg"));
  const pool = new pg.Pool({ connectionString: url, max: 1, application_name: "keyguard audit verify" });
  pool.on("error", () => undefined);
  const query: Query = async <R>(text: string, params?: readonly unknown[]) => (await pool.query(text, params as unknown[])).rows as R[];
  const s = quoteIdent(schema);
  const t = (name: string) => `${s}.${name}`;
  try {
    const found = await query<{ n: string }>(
      "SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'audit_chain'",
      [schema],
    );
    if (Number(found[0]!.n) === 0) {
      throw new LocalServiceConfigError(
        `keyguard audit verify: the PostgreSQL schema ${schema} has no audit chain (no keyguard tables, or written by an earlier version: start keyguard serve on it once).`,
      );
    }
  } catch (err) {
    await pool.end();
    throw err;
  }
  return {
    auditHeads: () => auditHeads(query, t),
    readAuditChain: (workspaceId, after, limit) => readAuditChain(query, t, workspaceId, after, limit),
    close: () => pool.end(),
  };
}
