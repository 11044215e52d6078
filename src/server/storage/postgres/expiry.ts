// The PostgreSQL store's claim of key.expiring notices: one statement takes the keys due (by the
// index on `data`'s `expires`), skipping rows another transaction holds (`FOR UPDATE SKIP
// LOCKED`), and marks each in `data` (`expiryNoticeFor`). Instances scanning together never take
// the same key; a key taken by a transaction that rolls back is taken again by the next scan.
import type { ExpiringKey } from "../../records";
import type { Query } from "./query";

const EXPIRES = "(data->>'expires')::bigint";

export async function claimExpiryNotices(query: Query, keys: string, from: number, until: number, limit: number): Promise<ExpiringKey[]> {
  const rows = await query<{ id: string; workspace_id: string; api_id: string; expires: number }>(
    `UPDATE ${keys} AS k SET data = jsonb_set(k.data, '{expiryNoticeFor}', k.data->'expires')
     FROM (SELECT id FROM ${keys}
           WHERE data ? 'expires' AND ${EXPIRES} > $1 AND ${EXPIRES} <= $2
             AND data->'expiryNoticeFor' IS DISTINCT FROM data->'expires'
           ORDER BY ${EXPIRES}, id LIMIT $3 FOR UPDATE SKIP LOCKED) AS due
     WHERE k.id = due.id
     RETURNING k.id, k.workspace_id, k.api_id, (k.data->>'expires')::float8 AS expires`,
    [from, until, limit],
  );
  return rows.map((r) => ({ keyId: r.id, workspaceId: r.workspace_id, apiId: r.api_id, expires: Number(r.expires) }));
}
