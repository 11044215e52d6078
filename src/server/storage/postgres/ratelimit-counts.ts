// The PostgreSQL store's counts of ratelimit.limit outcomes: one row per workspace, namespace and
// hour, added to (never replaced) by each write, so that every instance sharing the store adds its
// own; the batch is one statement (one JSON parameter), its rows locked in key order.
import type { RatelimitCount } from "../../records";
import type { RatelimitCountQuery } from "../seam";
import type { Query } from "./query";

/** `t(name)`: the schema-qualified table name. */
export async function addCounts(query: Query, t: (name: string) => string, counts: readonly RatelimitCount[]): Promise<void> {
  if (counts.length === 0) return;
  await query(
    `INSERT INTO ${t("ratelimit_counts")} AS c (workspace_id, namespace_id, hour, passed, limited)
     SELECT "workspaceId", "namespaceId", hour, sum(passed), sum(limited)
     FROM jsonb_to_recordset($1::jsonb) AS x("workspaceId" text, "namespaceId" text, hour bigint, passed bigint, limited bigint)
     GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
     ON CONFLICT (workspace_id, namespace_id, hour)
     DO UPDATE SET passed = c.passed + EXCLUDED.passed, limited = c.limited + EXCLUDED.limited`,
    [JSON.stringify(counts)],
  );
}

export async function readCounts(query: Query, t: (name: string) => string, q: RatelimitCountQuery): Promise<RatelimitCount[]> {
  if (q.namespaceIds.length === 0) return [];
  const rows = await query<{ namespace_id: string; hour: string; passed: string; limited: string }>(
    `SELECT namespace_id, hour, passed, limited FROM ${t("ratelimit_counts")}
     WHERE workspace_id = $1 AND namespace_id = ANY($2::text[]) AND hour >= $3 AND hour < $4`,
    [q.workspaceId, [...q.namespaceIds], q.from, q.until],
  );
  return rows.map((r) => ({
    workspaceId: q.workspaceId,
    namespaceId: r.namespace_id,
    hour: Number(r.hour),
    passed: Number(r.passed),
    limited: Number(r.limited),
  }));
}
