// The PostgreSQL store's audit log: one row per record (the record as jsonb in `data`, the
// filtered fields and its place in the chain as columns, the target ids as an array with a GIN
// index), and each workspace's chain head (`audit_chain`), whose row a transaction appending to
// the workspace's log holds locked until it ends: appends to one workspace, from any instance,
// take their turns, and the chain stays one line.
import type { AuditChainCursor, AuditQuery } from "../seam";
import type { AuditEvent } from "../../records";
import { chainTemplate, GENESIS_HASH, type ChainHead } from "../../domain/audit-chain";
import { row, runPart, type Params, type Part, type Query } from "./query";

/**
 * The append of `unchained` to its workspace's chain, as a statement part (query.ts; its entries
 * named from `n`, written only `when` that condition holds): inside a transaction, or with the
 * other writes of an optimistic one, as the head stays locked until it ends. The upsert of the
 * head locks it, places the record after it and hashes it there (`chainTemplate`'s holes filled
 * with the head it read), and the record is inserted from what it returns. `prev_hash` keeps the
 * head's previous hash for that `RETURNING`.
 */
export function appendAuditPart(t: (name: string) => string, unchained: AuditEvent, p: Params, n: string, when?: string): Part {
  const { before, between, after } = chainTemplate(unchained);
  // Its place is written by the statement: a copy without it (undefined, which JSON leaves out; a
  // `delete` would make the copy a slow dictionary).
  const data: AuditEvent = Object.assign({}, unchained);
  data.seq = undefined;
  data.prevHash = undefined;
  data.hash = undefined;
  const workspace = p.add(data.workspaceId);
  const genesis = p.add(GENESIS_HASH);
  const [b, m, a] = [p.add(before), p.add(between), p.add(after)];
  const hashAt = (prev: string, seq: string) =>
    `encode(sha256(convert_to(${b}::text || ${prev} || ${m}::text || ${seq} || ${a}::text, 'UTF8')), 'hex')`;
  return {
    ctes: [
      `${n}c AS (
       INSERT INTO ${t("audit_chain")} AS c (workspace_id, seq, hash, prev_hash) ${row([workspace, "1", hashAt(`${genesis}::text`, "'1'"), genesis], when)}
       ON CONFLICT (workspace_id) DO UPDATE SET seq = c.seq + 1, prev_hash = c.hash, hash = ${hashAt("c.hash", "(c.seq + 1)::text")}
       RETURNING seq, prev_hash, hash)`,
      `${n}e AS (
       INSERT INTO ${t("audit_events")} (id, workspace_id, "time", actor_id, operation, targets, chain_seq, data)
       SELECT ${p.add(data.id)}, ${workspace}, ${p.add(data.time)}, ${p.add(data.actorId)}, ${p.add(data.operation)}, ${p.add(data.targets)}, c.seq,
         ${p.add(JSON.stringify(data))}::jsonb || jsonb_build_object('seq', c.seq, 'prevHash', c.prev_hash, 'hash', c.hash) FROM ${n}c AS c)`,
    ],
    answer: "null",
  };
}

/** Appends `unchained` to its chain: inside a transaction (see `appendAuditPart`). */
export async function appendAudit(query: Query, t: (name: string) => string, unchained: AuditEvent): Promise<void> {
  await runPart(query, (p) => appendAuditPart(t, unchained, p, "w"));
}

/** Every workspace with an audit log, and its chain's head (seq 0 when none of its records is chained). */
export async function auditHeads(query: Query, t: (name: string) => string): Promise<Map<string, ChainHead>> {
  const rows = await query<{ workspace_id: string; seq: string | null; hash: string | null }>(
    `SELECT w.workspace_id, c.seq, c.hash
     FROM (SELECT DISTINCT workspace_id FROM ${t("audit_events")} UNION SELECT workspace_id FROM ${t("audit_chain")}) AS w
     LEFT JOIN ${t("audit_chain")} AS c ON c.workspace_id = w.workspace_id`,
  );
  return new Map(rows.map((r) => [r.workspace_id, { seq: Number(r.seq ?? 0), hash: r.hash ?? GENESIS_HASH }]));
}

/** A workspace's records in chain order, after `after`, at most `limit` (the columns win over `data`). */
export async function readAuditChain(
  query: Query,
  t: (name: string) => string,
  workspaceId: string,
  after: AuditChainCursor | undefined,
  limit: number,
): Promise<AuditEvent[]> {
  const columns = `id, workspace_id, "time", actor_id, operation, chain_seq, data`;
  type Row = {
    id: string;
    workspace_id: string;
    time: string;
    actor_id: string;
    operation: string;
    chain_seq: string | null;
    data: AuditEvent;
  };
  const out: Row[] = [];
  if (after === undefined || after.seq === undefined) {
    out.push(
      ...(await query<Row>(
        `SELECT ${columns} FROM ${t("audit_events")} WHERE workspace_id = $1 AND chain_seq IS NULL AND id > $2 ORDER BY id LIMIT $3`,
        [workspaceId, after?.id ?? "", limit],
      )),
    );
  }
  if (out.length < limit) {
    const [seq, id] = after?.seq === undefined ? [0, ""] : [after.seq, after.id];
    out.push(
      ...(await query<Row>(
        `SELECT ${columns} FROM ${t("audit_events")} WHERE workspace_id = $1 AND chain_seq IS NOT NULL AND (chain_seq, id) > ($2, $3)
         ORDER BY chain_seq, id LIMIT $4`,
        [workspaceId, seq, id, limit - out.length],
      )),
    );
  }
  return out.map((r) => {
    const event: AuditEvent = {
      ...r.data,
      id: r.id,
      workspaceId: r.workspace_id,
      time: Number(r.time),
      actorId: r.actor_id,
      operation: r.operation,
    };
    if (r.chain_seq === null) delete event.seq;
    else event.seq = Number(r.chain_seq);
    return event;
  });
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
