// The PostgreSQL store's webhook outbox: one row per message (the message as jsonb in `data`;
// status and due time as columns). A claim takes due rows with `FOR UPDATE SKIP LOCKED` and pushes
// their due time past the lease in the same statement: instances never take the same message twice
// within a lease, and one that crashes mid-delivery leaves it to be taken again.
import type { WebhookMessage } from "../../records";
import type { WebhookQuery } from "../seam";
import { runPart, where, type Params, type Part, type Query } from "./query";

/** The insert of `messages` into the outbox, as a statement part (query.ts; its entry named `n`; only `when` it holds). */
export function enqueuePart(t: (name: string) => string, messages: readonly WebhookMessage[], p: Params, n: string, when?: string): Part {
  return {
    ctes: [
      `${n} AS (INSERT INTO ${t("webhook_outbox")} (id, workspace_id, endpoint_id, status, next_attempt_at, data)
     SELECT m->>'id', m->>'workspaceId', m->>'endpointId', m->>'status', (m->>'nextAttemptAt')::bigint, m
     FROM jsonb_array_elements(${p.add(JSON.stringify(messages))}::jsonb) AS m${where(when)})`,
    ],
    answer: "null",
  };
}

export async function enqueueWebhooks(query: Query, t: (name: string) => string, messages: readonly WebhookMessage[]): Promise<void> {
  if (messages.length === 0) return;
  await runPart(query, (p) => enqueuePart(t, messages, p, "w"));
}

export async function claimWebhooks(
  query: Query,
  t: (name: string) => string,
  now: number,
  limit: number,
  leaseMs: number,
): Promise<WebhookMessage[]> {
  const rows = await query<{ data: WebhookMessage }>(
    `UPDATE ${t("webhook_outbox")} AS o SET next_attempt_at = $2
     FROM (SELECT id FROM ${t("webhook_outbox")} WHERE status = 'pending' AND next_attempt_at <= $1
           ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED) AS due
     WHERE o.id = due.id RETURNING o.data`,
    [now, now + leaseMs, limit],
  );
  return rows.map((r) => r.data);
}

export async function settleWebhook(query: Query, t: (name: string) => string, m: WebhookMessage): Promise<void> {
  await query(`UPDATE ${t("webhook_outbox")} SET status = $2, next_attempt_at = $3, data = $4 WHERE id = $1`, [
    m.id,
    m.status,
    m.nextAttemptAt,
    JSON.stringify(m),
  ]);
}

export async function getWebhook(query: Query, t: (name: string) => string, messageId: string): Promise<WebhookMessage | undefined> {
  const rows = await query<{ data: WebhookMessage }>(`SELECT data FROM ${t("webhook_outbox")} WHERE id = $1`, [messageId]);
  return rows[0]?.data;
}

export async function rescheduleWebhooks(
  query: Query,
  t: (name: string) => string,
  workspaceId: string,
  endpointId: string,
  dueAt: number,
): Promise<number> {
  const rows = await query<{ id: string }>(
    `UPDATE ${t("webhook_outbox")} SET next_attempt_at = $3, data = jsonb_set(data, '{nextAttemptAt}', to_jsonb($3::bigint))
     WHERE workspace_id = $1 AND endpoint_id = $2 AND status = 'pending' RETURNING id`,
    [workspaceId, endpointId, dueAt],
  );
  return rows.length;
}

export async function listWebhooks(query: Query, t: (name: string) => string, q: WebhookQuery): Promise<WebhookMessage[]> {
  const rows = await query<{ data: WebhookMessage }>(
    `SELECT data FROM ${t("webhook_outbox")} WHERE workspace_id = $1 AND ($2::text IS NULL OR endpoint_id = $2)
     AND ($3::text IS NULL OR status = $3) AND ($4::text IS NULL OR id <= $4) ORDER BY id DESC LIMIT $5`,
    [q.workspaceId, q.endpointId ?? null, q.status ?? null, q.from ?? null, q.limit],
  );
  return rows.map((r) => r.data);
}
