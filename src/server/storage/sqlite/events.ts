// The SQLite store's verification events: the batch insert (with its rollups), the retention
// delete in small batches, an analytics plan compiled to one SELECT with bound parameters, and
// the keys' last use.
import { SQLITE_DIALECT, compilePlan, type CompiledQuery } from "../../analytics/sql";
import type { AnalyticsPlan, AnalyticsScope } from "../../analytics/plan";
import { routeRollup } from "../../analytics/rollup";
import type { VerificationEvent } from "../../records";
import type { SqlConnection, SqlValue } from "./driver";
import { addToRollups, deleteRollupBatch, storedEvents, subtractFromRollups, type StoredEvent } from "./rollups";
import type { SqliteTables } from "./tables";

/** Rows per INSERT statement (11 parameters each). */
const ROWS_PER_INSERT = 50;
const PARAMS_PER_ROW = 11;
const COLUMNS = "time, workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, spent_credits, request_id, region";
/** The INSERT of `rows` rows, built once per size: the same string each time, so the statement cache finds it without rebuilding or rehashing it. */
const INSERTS: string[] = [];
const insertOf = (rows: number): string =>
  (INSERTS[rows] ??=
    `INSERT INTO key_verifications (${COLUMNS}) VALUES ${Array(rows).fill("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}`);

/** Tags as the column holds them: a JSON array (most verifications have none). */
const tagsText = (tags: readonly string[]): string => (tags.length === 0 ? "[]" : JSON.stringify(tags));

export function appendEvents(tables: SqliteTables, events: readonly VerificationEvent[]): void {
  const touch = tables.stmt(
    "INSERT INTO key_last_used (key_id, at) VALUES (?, ?) ON CONFLICT (key_id) DO UPDATE SET at = max(at, excluded.at)",
  );
  const latest = new Map<string, number>();
  const tags = events.map((e) => tagsText(e.tags));
  // One parameter array, filled in place chunk after chunk (no per-chunk copies of the events).
  const params: SqlValue[] = new Array<SqlValue>(Math.min(events.length, ROWS_PER_INSERT) * PARAMS_PER_ROW);
  for (let from = 0; from < events.length; from += ROWS_PER_INSERT) {
    const rows = Math.min(ROWS_PER_INSERT, events.length - from);
    if (rows * PARAMS_PER_ROW !== params.length) params.length = rows * PARAMS_PER_ROW;
    let p = 0;
    for (let i = from; i < from + rows; i++) {
      const e = events[i]!;
      params[p++] = e.time;
      params[p++] = e.workspaceId;
      params[p++] = e.keySpaceId;
      params[p++] = e.keyId;
      params[p++] = e.identityId;
      params[p++] = e.externalId;
      params[p++] = e.outcome;
      params[p++] = tags[i]!;
      params[p++] = e.spentCredits;
      params[p++] = e.requestId;
      params[p++] = e.region;
      const last = latest.get(e.keyId);
      if (last === undefined || e.time > last) latest.set(e.keyId, e.time);
    }
    // Full chunks share one cached statement; the last, shorter one is prepared once per size.
    tables.stmt(insertOf(rows)).run(...params);
  }
  for (const [keyId, at] of latest) touch.run(keyId, at);
  addToRollups(tables, storedEvents(events, tags));
}

/**
 * One step of the retention: deletes at most `limit` events older than `before` (the oldest
 * first), taking them off the rollup buckets `before` cuts; when none is left, at most `limit`
 * rollup rows of buckets wholly older. The events deleted, and whether anything is left to delete.
 * Runs in one transaction (`atomically`).
 */
export function deleteEventsBatch(
  tables: SqliteTables,
  before: number,
  limit: number,
  atomically: <T>(fn: () => T) => T,
): { events: number; done: boolean } {
  const events = atomically(() => {
    const rows = tables
      .stmt(
        "SELECT rowid AS id, time, workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, region, spent_credits " +
          "FROM key_verifications WHERE time < ? ORDER BY time LIMIT ?",
      )
      .all(before, limit) as unknown as Array<StoredEvent & { id: number }>;
    if (rows.length === 0) return 0;
    subtractFromRollups(tables, rows, before);
    tables.stmt(`DELETE FROM key_verifications WHERE rowid IN (${rows.map(() => "?").join(", ")})`).run(...rows.map((r) => r.id));
    return rows.length;
  });
  if (events > 0) return { events, done: false };
  return { events: 0, done: deleteRollupBatch(tables, before, limit) === 0 };
}

export function lastUsed(tables: SqliteTables, keyIds: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  const get = tables.stmt("SELECT at FROM key_last_used WHERE key_id = ?");
  for (const id of keyIds) {
    const row = get.get(id);
    if (row) out.set(id, Number(row.at));
  }
  return out;
}

/** Moves each id's last use forward to its time (never back). */
export function markUsed(tables: SqliteTables, uses: ReadonlyMap<string, number>): void {
  const touch = tables.stmt(
    "INSERT INTO key_last_used (key_id, at) VALUES (?, ?) ON CONFLICT (key_id) DO UPDATE SET at = max(at, excluded.at)",
  );
  for (const [id, at] of uses) touch.run(id, at);
}

/** The plan as one SELECT, over the rollups where its shape allows (`raw`: over the events only). */
export function compileQuery(plan: AnalyticsPlan, scope: AnalyticsScope, raw = false): CompiledQuery {
  return compilePlan(plan, scope, (name) => name, SQLITE_DIALECT, raw ? undefined : routeRollup(plan));
}

/** Runs a compiled query on `db` (its text is ours and varies: prepared, not cached). */
export function runQuery(db: SqlConnection, q: CompiledQuery): Array<Record<string, unknown>> {
  return db
    .prepare(q.text)
    .all(...q.params)
    .map(q.read);
}
