// The PostgreSQL store's audit log: one row per record (the record as jsonb in `data`, the
// filtered fields as columns, the target ids as an array with a GIN index).
import type { AuditQuery } from "../seam";
import type { AuditEvent } from "../../records";
import type { Query } from "./query";

/** `t(name)`: the schema-qualified table name. */
export async function appendAudit(query: Query, t: (name: string) => string, event: AuditEvent): Promise<void> {
  await query(
    `INSERT INTO ${t("audit_events")} (id, workspace_id, "time", actor_id, operation, targets, data) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [event.id, event.workspaceId, event.time, event.actorId, event.operation, event.targets, JSON.stringify(event)],
  );
}

/** One SELECT with bound parameters, newest first. */
export async function listAudit(query: Query, t: (name: string) => string, q: AuditQuery): Promise<AuditEvent[]> {
  const where = ["workspace_id = $1"];
  const params: unknown[] = [q.workspaceId];
  const add = (clause: (n: string) => string, value: unknown) => {
    if (value === undefined) return;
    params.push(value);
    where.push(clause(`$${params.length}`));
  };
  add((n) => `id <= ${n}`, q.from);
  add((n) => `actor_id = ${n}`, q.actorId);
  add((n) => `operation = ${n}`, q.operation);
  add((n) => `"time" >= ${n}`, q.since);
  add((n) => `"time" < ${n}`, q.until);
  add((n) => `targets @> ARRAY[${n}::text]`, q.targetId);
  params.push(q.limit);
  const rows = await query<{ data: AuditEvent }>(
    `SELECT data FROM ${t("audit_events")} WHERE ${where.join(" AND ")} ORDER BY id DESC LIMIT $${params.length}`,
    params,
  );
  return rows.map((r) => r.data);
}

export async function deleteAuditBefore(query: Query, t: (name: string) => string, before: number): Promise<number> {
  const rows = await query<{ n: string }>(
    `WITH d AS (DELETE FROM ${t("audit_events")} WHERE "time" < $1 RETURNING 1) SELECT count(*) AS n FROM d`,
    [before],
  );
  return Number(rows[0]?.n ?? 0);
}
