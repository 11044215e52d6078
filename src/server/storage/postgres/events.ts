// The PostgreSQL store's verification events: a batch inserted by one statement (the batch as
// one JSON parameter), the retention delete, an analytics plan compiled to one SELECT with bound
// parameters, and the keys' last use.
import { POSTGRES_DIALECT, compilePlan } from "../../analytics/sql";
import type { AnalyticsPlan, AnalyticsScope } from "../../analytics/plan";
import type { VerificationEvent } from "../seam";
import type { Query } from "./tx";

// The events' own field names: the batch is sent as JSON.stringify(events), no per-event copy.
const RECORD = `"time" bigint, "workspaceId" text, "keySpaceId" text, "keyId" text, "identityId" text, "externalId" text,
  outcome text, tags jsonb, "spentCredits" bigint, "requestId" text, region text`;

/** `t(name)`: the schema-qualified table name. */
export async function appendEvents(query: Query, t: (name: string) => string, events: readonly VerificationEvent[]): Promise<void> {
  if (events.length === 0) return;
  await query(
    `WITH r AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(${RECORD})),
     ins AS (
       INSERT INTO ${t("key_verifications")} ("time", workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, spent_credits, request_id, region)
       SELECT "time", "workspaceId", "keySpaceId", "keyId", "identityId", "externalId", outcome,
              ARRAY(SELECT jsonb_array_elements_text(r.tags)), "spentCredits", "requestId", region FROM r)
     INSERT INTO ${t("key_last_used")} AS u (key_id, at)
     SELECT "keyId", max("time") FROM r GROUP BY "keyId" ORDER BY "keyId"
     ON CONFLICT (key_id) DO UPDATE SET at = GREATEST(u.at, EXCLUDED.at)`,
    [JSON.stringify(events)],
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
  const rows = await query<{ key_id: string; at: string }>(`SELECT key_id, at FROM ${t("key_last_used")} WHERE key_id = ANY($1::text[])`, [
    keyIds,
  ]);
  return new Map(rows.map((r) => [r.key_id, Number(r.at)]));
}

export async function queryEvents(
  query: Query,
  t: (name: string) => string,
  plan: AnalyticsPlan,
  scope: AnalyticsScope,
): Promise<Array<Record<string, unknown>>> {
  const q = compilePlan(plan, scope, t("key_verifications"), POSTGRES_DIALECT);
  const rows = await query<Record<string, unknown>>(q.text, q.params);
  return rows.map(q.read);
}
