// The SQLite store's audit log: one row per record (the record as JSON in `data`, the filtered
// fields and its place in the chain as columns), a link table from each target id to its records,
// and each workspace's chain head (`audit_chain`). The store runs one write at a time (its mutex,
// BEGIN IMMEDIATE for another process), so reading the head and moving it need no other lock.
import type { AuditChainCursor, AuditQuery } from "../seam";
import type { AuditEvent } from "../../records";
import { chainAfter, GENESIS_HASH, type ChainHead } from "../../domain/audit-chain";
import type { SqlValue } from "./driver";
import type { SqliteTables } from "./tables";

/** Appends `event` at the end of its workspace's chain (the caller runs it as one transaction). */
export function appendAudit(tables: SqliteTables, unchained: AuditEvent): void {
  const row = tables.stmt("SELECT seq, hash FROM audit_chain WHERE workspace_id = ?").get(unchained.workspaceId);
  const head: ChainHead = row ? { seq: Number(row.seq), hash: String(row.hash) } : { seq: 0, hash: GENESIS_HASH };
  const { event, head: next } = chainAfter(unchained, head);
  tables
    .stmt("INSERT INTO audit_events (id, workspace_id, time, actor_id, operation, chain_seq, data) VALUES (?, ?, ?, ?, ?, ?, ?)")
    .run(event.id, event.workspaceId, event.time, event.actorId, event.operation, next.seq, JSON.stringify(event));
  tables
    .stmt(
      "INSERT INTO audit_chain (workspace_id, seq, hash) VALUES (?, ?, ?) ON CONFLICT (workspace_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
    )
    .run(event.workspaceId, next.seq, next.hash);
  linkTargets(tables, event);
}

/** At most this many target links in one statement (a record's targets are mostly one to three). */
const LINKS_PER_STATEMENT = 4;
const LINK_SQL = Array.from(
  { length: LINKS_PER_STATEMENT + 1 },
  (_, n) => `INSERT OR IGNORE INTO audit_targets (target, audit_id) VALUES ${Array.from({ length: n }, () => "(?, ?)").join(", ")}`,
);

/** Links each target of `event` to it, up to LINKS_PER_STATEMENT in one statement. */
function linkTargets(tables: SqliteTables, event: AuditEvent): void {
  const { targets, id } = event;
  for (let at = 0; at < targets.length; at += LINKS_PER_STATEMENT) {
    const n = Math.min(LINKS_PER_STATEMENT, targets.length - at);
    const params: string[] = [];
    for (let i = at; i < at + n; i++) params.push(targets[i]!, id);
    tables.stmt(LINK_SQL[n]!).run(...params);
  }
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
  tables
    .stmt(
      "DELETE FROM audit_targets WHERE (target, audit_id) IN " +
        "(SELECT t.value, e.id FROM audit_events e, json_each(e.data, '$.targets') t WHERE e.time < ?)",
    )
    .run(before);
  return tables.stmt("DELETE FROM audit_events WHERE time < ?").run(before).changes;
}

/** Every workspace with an audit log, and its chain's head (seq 0 when none of its records is chained). */
export function auditHeads(tables: SqliteTables): Map<string, ChainHead> {
  const heads = new Map<string, ChainHead>();
  for (const row of tables.stmt("SELECT DISTINCT workspace_id FROM audit_events").all()) {
    heads.set(String(row.workspace_id), { seq: 0, hash: GENESIS_HASH });
  }
  for (const row of tables.stmt("SELECT workspace_id, seq, hash FROM audit_chain").all()) {
    heads.set(String(row.workspace_id), { seq: Number(row.seq), hash: String(row.hash) });
  }
  return heads;
}

/**
 * A workspace's records in chain order (those without a place first, by id; then by place and id),
 * after `after`, at most `limit`. The columns win over `data`: a change to either shows.
 */
export function readAuditChain(
  tables: SqliteTables,
  workspaceId: string,
  after: AuditChainCursor | undefined,
  limit: number,
): AuditEvent[] {
  const columns = "id, workspace_id, time, actor_id, operation, chain_seq, data";
  const out: AuditEvent[] = [];
  if (after === undefined || after.seq === undefined) {
    const rows = tables
      .stmt(`SELECT ${columns} FROM audit_events WHERE workspace_id = ? AND chain_seq IS NULL AND id > ? ORDER BY id LIMIT ?`)
      .all(workspaceId, after?.id ?? "", limit);
    out.push(...rows.map(chainRecord));
  }
  if (out.length < limit) {
    const [seq, id] = after?.seq === undefined ? [0, ""] : [after.seq, after.id];
    const rows = tables
      .stmt(
        `SELECT ${columns} FROM audit_events WHERE workspace_id = ? AND chain_seq IS NOT NULL AND (chain_seq > ? OR (chain_seq = ? AND id > ?)) ORDER BY chain_seq, id LIMIT ?`,
      )
      .all(workspaceId, seq, seq, id, limit - out.length);
    out.push(...rows.map(chainRecord));
  }
  return out;
}

function chainRecord(row: Record<string, SqlValue>): AuditEvent {
  const event = JSON.parse(String(row.data)) as AuditEvent;
  event.id = String(row.id);
  event.workspaceId = String(row.workspace_id);
  event.time = Number(row.time);
  event.actorId = String(row.actor_id);
  event.operation = String(row.operation);
  if (row.chain_seq === null) delete event.seq;
  else event.seq = Number(row.chain_seq);
  return event;
}
