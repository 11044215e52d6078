// The SQLite store's webhook outbox: one row per message (the message as JSON in `data`; status
// and due time as columns). The store runs one statement at a time, so a claim (select the due
// rows, push their due time past the lease) is atomic without row locks.
import type { WebhookMessage } from "../../records";
import type { WebhookQuery } from "../seam";
import type { SqliteTables } from "./tables";

function write(tables: SqliteTables, m: WebhookMessage): void {
  tables
    .stmt(
      `INSERT INTO webhook_outbox (id, workspace_id, endpoint_id, status, next_attempt_at, data) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, next_attempt_at = excluded.next_attempt_at, data = excluded.data`,
    )
    .run(m.id, m.workspaceId, m.endpointId, m.status, m.nextAttemptAt, JSON.stringify(m));
}

export function enqueueWebhooks(tables: SqliteTables, messages: readonly WebhookMessage[]): void {
  for (const m of messages) write(tables, m);
}

/** The caller runs it as one transaction. */
export function claimWebhooks(tables: SqliteTables, now: number, limit: number, leaseMs: number): WebhookMessage[] {
  const due = tables
    .stmt("SELECT data FROM webhook_outbox WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?")
    .all(now, limit)
    .map((row) => JSON.parse(String(row.data)) as WebhookMessage);
  for (const m of due) write(tables, { ...m, nextAttemptAt: now + leaseMs });
  return due;
}

export function settleWebhook(tables: SqliteTables, message: WebhookMessage): void {
  write(tables, message);
}

export function getWebhook(tables: SqliteTables, messageId: string): WebhookMessage | undefined {
  const row = tables.stmt("SELECT data FROM webhook_outbox WHERE id = ?").get(messageId);
  return row === undefined ? undefined : (JSON.parse(String(row.data)) as WebhookMessage);
}

/** The caller runs it on the transaction it belongs to. */
export function rescheduleWebhooks(tables: SqliteTables, workspaceId: string, endpointId: string, dueAt: number): number {
  const result = tables
    .stmt(
      `UPDATE webhook_outbox SET next_attempt_at = ?, data = json_set(data, '$.nextAttemptAt', ?)
       WHERE workspace_id = ? AND endpoint_id = ? AND status = 'pending'`,
    )
    .run(dueAt, dueAt, workspaceId, endpointId);
  return Number(result.changes);
}

const twice = (value: string | undefined): [string | null, string | null] => [value ?? null, value ?? null];

export function listWebhooks(tables: SqliteTables, query: WebhookQuery): WebhookMessage[] {
  const rows = tables
    .stmt(
      `SELECT data FROM webhook_outbox WHERE workspace_id = ?
       AND (? IS NULL OR endpoint_id = ?) AND (? IS NULL OR status = ?) AND (? IS NULL OR id <= ?)
       ORDER BY id DESC LIMIT ?`,
    )
    .all(query.workspaceId, ...twice(query.endpointId), ...twice(query.status), ...twice(query.from), query.limit);
  return rows.map((row) => JSON.parse(String(row.data)) as WebhookMessage);
}
