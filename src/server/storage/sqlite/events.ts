// The SQLite store's verification events: the batch insert, the retention delete, an analytics
// plan compiled to one SELECT with bound parameters, and the keys' last use.
import { SQLITE_DIALECT, compilePlan } from "../../analytics/sql";
import type { AnalyticsPlan, AnalyticsScope } from "../../analytics/plan";
import type { VerificationEvent } from "../seam";
import type { SqlConnection, SqlValue } from "./driver";
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
      params[p++] = tagsText(e.tags);
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
}

export function deleteEventsBefore(tables: SqliteTables, before: number): number {
  return tables.stmt("DELETE FROM key_verifications WHERE time < ?").run(before).changes;
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

/** Runs the plan (its text is ours and varies: prepared, not cached). */
export function queryEvents(db: SqlConnection, plan: AnalyticsPlan, scope: AnalyticsScope): Array<Record<string, unknown>> {
  const q = compilePlan(plan, scope, "key_verifications", SQLITE_DIALECT);
  return db
    .prepare(q.text)
    .all(...q.params)
    .map(q.read);
}
