// The filters of an audit query (`Storage.listAudit`) over one record, for the memory store: what
// the SQL of the SQLite and PostgreSQL stores says in a WHERE clause.
import type { AuditQuery } from "./seam";
import type { AuditEvent } from "../records";

/** Whether `event` is one `query` returns (its position from `query.from` included). */
export function matchesAudit(event: AuditEvent, query: AuditQuery): boolean {
  return (
    event.workspaceId === query.workspaceId &&
    (query.from === undefined || event.id <= query.from) &&
    (query.actorId === undefined || event.actorId === query.actorId) &&
    (query.operation === undefined || event.operation === query.operation) &&
    (query.targetId === undefined || event.targets.includes(query.targetId)) &&
    (query.since === undefined || event.time >= query.since) &&
    (query.until === undefined || event.time < query.until)
  );
}
