// The SQLite store's rollups (analytics/rollup.ts): each appended batch counted per bucket in
// memory, then added to every rollup table by multi-row upserts in the batch's transaction; the
// events the retention deletes from a bucket it cuts taken off again; and the deletion of the
// buckets wholly past the retention, a few hundred rows per call.
import { BUCKET_MS } from "../../analytics/plan";
import { ROLLUP_TABLES, type RollupDimension, type RollupTable } from "../../analytics/rollup";
import type { VerificationEvent } from "../../records";
import type { SqlValue } from "./driver";
import type { SqliteTables } from "./tables";

/** Rows per upsert statement. */
const ROWS_PER_UPSERT = 50;

/** An event's dimensions as the tables hold them (tags as stored JSON text). */
export type StoredEvent = Record<RollupDimension, string> & { time: number; spent_credits: number };

const keyOf = (r: RollupTable) => ["workspace_id", "bucket", ...r.dimensions.filter((d) => d !== "workspace_id")];
const UPSERTS = new Map<string, string>();
function upsertOf(r: RollupTable, rows: number): string {
  const id = `${r.table}/${rows}`;
  let sql = UPSERTS.get(id);
  if (sql === undefined) {
    const columns = ["bucket", ...r.dimensions, "n", "spent_credits"];
    const row = `(${columns.map(() => "?").join(", ")})`;
    sql =
      `INSERT INTO ${r.table} (${columns.join(", ")}) VALUES ${Array(rows).fill(row).join(", ")} ` +
      `ON CONFLICT (${keyOf(r).join(", ")}) DO UPDATE SET n = n + excluded.n, spent_credits = spent_credits + excluded.spent_credits`;
    UPSERTS.set(id, sql);
  }
  return sql;
}

/** `events` counted per bucket of `r` and its dimensions: rows of [bucket, ...dimensions, n, spent_credits]. */
function countsOf(r: RollupTable, events: readonly StoredEvent[], sign: 1 | -1, from = -Infinity): SqlValue[][] {
  const ms = BUCKET_MS[r.unit];
  const rows = new Map<string, SqlValue[]>();
  for (const e of events) {
    if (e.time < from) continue;
    const bucket = Math.floor(e.time / ms) * ms;
    const values = r.dimensions.map((d) => e[d]);
    const id = `${bucket}\0${values.join("\0")}`;
    const row = rows.get(id);
    if (row) {
      (row[row.length - 2] as number) += sign;
      (row[row.length - 1] as number) += sign * e.spent_credits;
    } else rows.set(id, [bucket, ...values, sign, sign * e.spent_credits]);
  }
  return [...rows.values()];
}

/** `events` as the tables hold them, their tags as stored (`tags[i]`). */
export function storedEvents(events: readonly VerificationEvent[], tags: readonly string[]): StoredEvent[] {
  return events.map((e, i) => ({
    time: e.time,
    workspace_id: e.workspaceId,
    key_space_id: e.keySpaceId,
    key_id: e.keyId,
    identity_id: e.identityId,
    external_id: e.externalId,
    outcome: e.outcome,
    tags: tags[i]!,
    region: e.region,
    spent_credits: e.spentCredits,
  }));
}

/** Adds `events` to every rollup table. Runs inside the append's transaction. */
export function addToRollups(tables: SqliteTables, events: readonly StoredEvent[]): void {
  for (const r of ROLLUP_TABLES) {
    const rows = countsOf(r, events, 1);
    for (let from = 0; from < rows.length; from += ROWS_PER_UPSERT) {
      const chunk = rows.slice(from, from + ROWS_PER_UPSERT);
      tables.stmt(upsertOf(r, chunk.length)).run(...chunk.flat());
    }
  }
}

/**
 * Takes `events`, about to be deleted as older than `before`, off the rollup buckets `before`
 * cuts (those starting at or after `before` − their unit): a bucket wholly older is deleted
 * whole later, the others stay the sum of the events still stored. Runs in the deletion's transaction.
 */
export function subtractFromRollups(tables: SqliteTables, events: readonly StoredEvent[], before: number): void {
  for (const r of ROLLUP_TABLES) {
    const ms = BUCKET_MS[r.unit];
    const rows = countsOf(r, events, -1, Math.floor(before / ms) * ms);
    if (rows.length === 0) continue;
    // The counts are negative: the upsert adds them to rows that exist (a bucket holds every event it counts).
    for (let from = 0; from < rows.length; from += ROWS_PER_UPSERT) {
      const chunk = rows.slice(from, from + ROWS_PER_UPSERT);
      tables.stmt(upsertOf(r, chunk.length)).run(...chunk.flat());
    }
  }
}

/**
 * Deletes at most `limit` rows of rollup tables whose whole bucket is older than `before`; the
 * rows deleted (0: none left). A bucket still holding events at or after `before` is kept.
 */
export function deleteRollupBatch(tables: SqliteTables, before: number, limit: number): number {
  for (const r of ROLLUP_TABLES) {
    const key = keyOf(r).join(", ");
    const deleted = tables
      .stmt(`DELETE FROM ${r.table} WHERE (${key}) IN (SELECT ${key} FROM ${r.table} WHERE bucket <= ? LIMIT ?)`)
      .run(before - BUCKET_MS[r.unit], limit).changes;
    if (deleted > 0) return deleted;
  }
  return 0;
}
