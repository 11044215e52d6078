// The PostgreSQL store's verification events: a batch inserted by one statement (the batch as
// one JSON parameter), the retention delete, an analytics plan compiled to one SELECT with bound
// parameters, and the keys' last use.
import { POSTGRES_DIALECT, compilePlan } from "../analytics/sql";
import type { AnalyticsPlan, AnalyticsScope } from "../analytics/plan";
import type { VerificationEvent } from "../storage";
import type { Query } from "./postgres-tx";

const RECORD = `"time" bigint, workspace_id text, key_space_id text, key_id text, identity_id text, external_id text,
  outcome text, tags jsonb, spent_credits bigint, request_id text, region text`;

/** `t(name)`: the schema-qualified table name. */
export async function appendEvents(query: Query, t: (name: string) => string, events: readonly VerificationEvent[]): Promise<void> {
  if (events.length === 0) return;
  const rows = events.map((e) => ({
    time: e.time,
    workspace_id: e.workspaceId,
    key_space_id: e.keySpaceId,
    key_id: e.keyId,
    identity_id: e.identityId,
    external_id: e.externalId,
    outcome: e.outcome,
    tags: e.tags,
    spent_credits: e.spentCredits,
    request_id: e.requestId,
    region: e.region,
  }));
  await query(
    `WITH r AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(${RECORD})),
     ins AS (
       INSERT INTO ${t("key_verifications")} ("time", workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, spent_credits, request_id, region)
       SELECT "time", workspace_id, key_space_id, key_id, identity_id, external_id, outcome,
              ARRAY(SELECT jsonb_array_elements_text(r.tags)), spent_credits, request_id, region FROM r)
     INSERT INTO ${t("key_last_used")} AS u (key_id, at)
     SELECT key_id, max("time") FROM r GROUP BY key_id ORDER BY key_id
     ON CONFLICT (key_id) DO UPDATE SET at = GREATEST(u.at, EXCLUDED.at)`,
    [JSON.stringify(rows)],
  );
}

export async function deleteEventsBefore(query: Query, t: (name: string) => string, before: number): Promise<number> {
  const rows = await query<{ n: string }>(
    `WITH d AS (DELETE FROM ${t("key_verifications")} WHERE "time" < $1 RETURNING 1) SELECT count(*) AS n FROM d`,
    [before],
  );
  return Number(rows[0]?.n ?? 0);
}

export async function lastUsed(query: Query, t: (name: string) => string, keyIds: readonly string[]): Promise<Map<string, number>> {
  if (keyIds.length === 0) return new Map();
  const rows = await query<{ key_id: string; at: string }>(`SELECT key_id, at FROM ${t("key_last_used")} WHERE key_id = ANY($1::text[])`, [keyIds]);
  return new Map(rows.map((r) => [r.key_id, Number(r.at)]));
}

export async function queryEvents(query: Query, t: (name: string) => string, plan: AnalyticsPlan, scope: AnalyticsScope): Promise<Array<Record<string, unknown>>> {
  const q = compilePlan(plan, scope, t("key_verifications"), POSTGRES_DIALECT);
  const rows = await query<Record<string, unknown>>(q.text, q.params);
  return rows.map(q.read);
}
