// The PostgreSQL store's verification events: a batch inserted by one statement (the batch as one
// JSON parameter, an array per event) with its counts added to the rollups, the retention delete
// in small batches, an analytics plan compiled to one SELECT with bound parameters, and the keys'
// last use.
import { POSTGRES_DIALECT, compilePlan } from "../../analytics/sql";
import { BUCKET_MS, type AnalyticsPlan, type AnalyticsScope } from "../../analytics/plan";
import { ROLLUP_TABLES, routeRollup, type RollupTable } from "../../analytics/rollup";
import type { VerificationEvent } from "../../records";
import type { Query } from "./query";

/**
 * An event as the batch sends it: an array of its fields in the order `EVENT_ROWS` reads them
 * (half the bytes of the event as an object; the whole statement costs PostgreSQL a fifth less
 * CPU).
 */
const eventRow = (e: VerificationEvent) => [
  e.time,
  e.workspaceId,
  e.keySpaceId,
  e.keyId,
  e.identityId,
  e.externalId,
  e.outcome,
  e.tags,
  e.spentCredits,
  e.requestId,
  e.region,
];
const EVENT_ROWS = `SELECT (e->>0)::bigint AS "time", e->>1 AS workspace_id, e->>2 AS key_space_id, e->>3 AS key_id, e->>4 AS identity_id,
              e->>5 AS external_id, e->>6 AS outcome, ARRAY(SELECT jsonb_array_elements_text(e->7)) AS tags,
              (e->>8)::bigint AS spent_credits, e->>9 AS request_id, e->>10 AS region
       FROM jsonb_array_elements($1::jsonb) AS e`;

const DIMENSIONS = "workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, region";
const keyOf = (r: RollupTable) => ["workspace_id", "bucket", ...r.dimensions.filter((d) => d !== "workspace_id")].join(", ");

/** The CTE adding the batch `r` to a rollup table (grouped and ordered by its key: each row once, locks in one order). */
const rollupCte = (t: (name: string) => string, r: RollupTable, i: number): string => {
  const ms = BUCKET_MS[r.unit];
  const dims = r.dimensions.join(", ");
  return `rollup${i} AS (
       INSERT INTO ${t(r.table)} AS p (bucket, ${dims}, n, spent_credits)
       SELECT ("time" / ${ms}) * ${ms}, ${dims}, count(*), sum(spent_credits) FROM r
       GROUP BY 1, ${dims} ORDER BY ${keyOf(r).replace("bucket", "1")}
       ON CONFLICT (${keyOf(r)}) DO UPDATE SET n = p.n + EXCLUDED.n, spent_credits = p.spent_credits + EXCLUDED.spent_credits)`;
};

/** `t(name)`: the schema-qualified table name. */
export async function appendEvents(query: Query, t: (name: string) => string, events: readonly VerificationEvent[]): Promise<void> {
  if (events.length === 0) return;
  await query(
    `WITH r AS (${EVENT_ROWS}),
     ins AS (
       INSERT INTO ${t("key_verifications")} ("time", ${DIMENSIONS}, spent_credits, request_id)
       SELECT "time", ${DIMENSIONS}, spent_credits, request_id FROM r),
     ${ROLLUP_TABLES.map((r, i) => rollupCte(t, r, i)).join(",\n     ")}
     INSERT INTO ${t("key_last_used")} AS u (key_id, at)
     SELECT key_id, max("time") FROM r GROUP BY key_id ORDER BY key_id
     ON CONFLICT (key_id) DO UPDATE SET at = GREATEST(u.at, EXCLUDED.at)`,
    [JSON.stringify(events.map(eventRow))],
  );
}

/** Rows one retention statement deletes (short statements: no long lock, no long transaction). */
const RETENTION_BATCH = 5000;

/** The CTE taking the deleted events `d` off the bucket of a rollup table that `before` cuts (starting at `$n`). */
const subtractCte = (t: (name: string) => string, r: RollupTable, i: number, param: number): string => {
  const ms = BUCKET_MS[r.unit];
  const dims = r.dimensions.join(", ");
  const match = ["bucket", ...r.dimensions].map((c) => `p.${c} = x.${c}`).join(" AND ");
  return `cut${i} AS (
       UPDATE ${t(r.table)} AS p SET n = p.n - x.n, spent_credits = p.spent_credits - x.spent_credits
       FROM (SELECT ("time" / ${ms}) * ${ms} AS bucket, ${dims}, count(*) AS n, sum(spent_credits) AS spent_credits
             FROM d WHERE "time" >= $${param} GROUP BY 1, ${dims}) AS x
       WHERE ${match})`;
};

/**
 * Deletes the events older than `before` in batches, each taking its events off the rollup
 * buckets `before` cuts (in the same statement), then the rollup rows of buckets wholly older;
 * the events deleted. Stops between two batches once `signal` is aborted.
 */
export async function deleteEventsBefore(query: Query, t: (name: string) => string, before: number, signal?: AbortSignal): Promise<number> {
  const events = t("key_verifications");
  const cuts = ROLLUP_TABLES.map((r) => Math.floor(before / BUCKET_MS[r.unit]) * BUCKET_MS[r.unit]);
  const step = `WITH d AS (
       DELETE FROM ${events} WHERE ctid IN (SELECT ctid FROM ${events} WHERE "time" < $1 LIMIT ${RETENTION_BATCH})
       RETURNING "time", ${DIMENSIONS}, spent_credits),
     ${ROLLUP_TABLES.map((r, i) => subtractCte(t, r, i, i + 2)).join(",\n     ")}
     SELECT count(*) AS n FROM d`;
  let deleted = 0;
  for (let n = RETENTION_BATCH; n === RETENTION_BATCH && !signal?.aborted; deleted += n) {
    n = Number((await query<{ n: string }>(step, [before, ...cuts]))[0]?.n ?? 0);
  }
  for (const r of ROLLUP_TABLES) {
    const table = t(r.table);
    const wholly = `DELETE FROM ${table} WHERE ctid IN (SELECT ctid FROM ${table} WHERE bucket <= $1 LIMIT ${RETENTION_BATCH}) RETURNING 1`;
    let n = RETENTION_BATCH;
    while (n === RETENTION_BATCH && !signal?.aborted) {
      n = Number(
        (await query<{ n: string }>(`WITH d AS (${wholly}) SELECT count(*) AS n FROM d`, [before - BUCKET_MS[r.unit]]))[0]?.n ?? 0,
      );
    }
  }
  return deleted;
}

/** Moves each id's last use forward to its time (never back), in one statement. */
export async function markUsed(query: Query, t: (name: string) => string, uses: ReadonlyMap<string, number>): Promise<void> {
  if (uses.size === 0) return;
  const ids = [...uses.keys()].sort();
  await query(
    `INSERT INTO ${t("key_last_used")} AS u (key_id, at) SELECT * FROM unnest($1::text[], $2::bigint[])
     ON CONFLICT (key_id) DO UPDATE SET at = GREATEST(u.at, EXCLUDED.at)`,
    [ids, ids.map((id) => uses.get(id)!)],
  );
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
  const q = compilePlan(plan, scope, t, POSTGRES_DIALECT, routeRollup(plan));
  const rows = await query<Record<string, unknown>>(q.text, q.params);
  return rows.map(q.read);
}
