// The SQLite store's claim of key.expiring notices: keys by their expiry (an index on `data`'s
// `expires`), each taken marked in `data` (`expiryNoticeFor`). The store runs one statement at a
// time and the caller runs the claim as one transaction, so no other claim sees a key between
// the select and the mark.
import type { ExpiringKey } from "../../records";
import type { SqliteTables } from "./tables";

const EXPIRES = "json_extract(data, '$.expires')";

export function claimExpiryNotices(tables: SqliteTables, from: number, until: number, limit: number): ExpiringKey[] {
  const rows = tables
    .stmt(
      `SELECT id, workspace_id, api_id, ${EXPIRES} AS expires FROM keys
       WHERE ${EXPIRES} IS NOT NULL AND ${EXPIRES} > ? AND ${EXPIRES} <= ?
         AND json_extract(data, '$.expiryNoticeFor') IS NOT ${EXPIRES}
       ORDER BY ${EXPIRES}, id LIMIT ?`,
    )
    .all(from, until, limit);
  const mark = tables.stmt("UPDATE keys SET data = json_set(data, '$.expiryNoticeFor', json_extract(data, '$.expires')) WHERE id = ?");
  return rows.map((row) => {
    mark.run(String(row.id));
    return { keyId: String(row.id), workspaceId: String(row.workspace_id), apiId: String(row.api_id), expires: Number(row.expires) };
  });
}
