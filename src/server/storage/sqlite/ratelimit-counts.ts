// The SQLite store's counts of ratelimit.limit outcomes: one row per workspace, namespace and hour,
// added to (never replaced) by each write, and read back by a range of hours.
import type { RatelimitCount } from "../../records";
import type { RatelimitCountQuery } from "../seam";
import type { SqliteTables } from "./tables";

export function addCounts(tables: SqliteTables, counts: readonly RatelimitCount[]): void {
  const add = tables.stmt(
    `INSERT INTO ratelimit_counts (workspace_id, namespace_id, hour, passed, limited) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (workspace_id, namespace_id, hour) DO UPDATE SET passed = passed + excluded.passed, limited = limited + excluded.limited`,
  );
  for (const c of counts) add.run(c.workspaceId, c.namespaceId, c.hour, c.passed, c.limited);
}

export function readCounts(tables: SqliteTables, query: RatelimitCountQuery): RatelimitCount[] {
  const read = tables.stmt(
    "SELECT hour, passed, limited FROM ratelimit_counts WHERE workspace_id = ? AND namespace_id = ? AND hour >= ? AND hour < ?",
  );
  return [...new Set(query.namespaceIds)].flatMap((namespaceId) =>
    read.all(query.workspaceId, namespaceId, query.from, query.until).map((row) => ({
      workspaceId: query.workspaceId,
      namespaceId,
      hour: Number(row.hour),
      passed: Number(row.passed),
      limited: Number(row.limited),
    })),
  );
}
