// The SQLite store's audit log: one row per record (the record as JSON in `data`, the filtered
// fields as columns) and a link table from each target id to its records.
import type { AuditQuery } from "../seam";
import type { AuditEvent } from "../../records";
import type { SqlValue } from "./driver";
import type { SqliteTables } from "./tables";

export function appendAudit(tables: SqliteTables, event: AuditEvent): void {
  tables
    .stmt("INSERT INTO audit_events (id, workspace_id, time, actor_id, operation, data) VALUES (?, ?, ?, ?, ?, ?)")
    .run(event.id, event.workspaceId, event.time, event.actorId, event.operation, JSON.stringify(event));
  const link = tables.stmt("INSERT OR IGNORE INTO audit_targets (target, audit_id) VALUES (?, ?)");
  for (const target of event.targets) link.run(target, event.id);
}

/** One SELECT with bound parameters; the statement text depends only on which filters are given. */
export function listAudit(tables: SqliteTables, query: AuditQuery): AuditEvent[] {
  const where = ["workspace_id = ?"];
  const params: SqlValue[] = [query.workspaceId];
  const add = (clause: string, value: SqlValue | undefined) => {
    if (value === undefined) return;
    where.push(clause);
    params.push(value);
  };
  add("id <= ?", query.from);
  add("actor_id = ?", query.actorId);
  add("operation = ?", query.operation);
  add("time >= ?", query.since);
  add("time < ?", query.until);
  add("id IN (SELECT audit_id FROM audit_targets WHERE target = ?)", query.targetId);
  params.push(query.limit);
  return tables
    .stmt(`SELECT data FROM audit_events WHERE ${where.join(" AND ")} ORDER BY id DESC LIMIT ?`)
    .all(...params)
    .map((row) => JSON.parse(String(row.data)) as AuditEvent);
}

/** Deletes the records older than `before` and their links (the caller runs it as one transaction). */
export function deleteAuditBefore(tables: SqliteTables, before: number): number {
  tables.stmt("DELETE FROM audit_targets WHERE audit_id IN (SELECT id FROM audit_events WHERE time < ?)").run(before);
  return tables.stmt("DELETE FROM audit_events WHERE time < ?").run(before).changes;
}
