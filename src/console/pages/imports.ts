// Keys moved into an API (on its settings page): what keys.migrateKeys imported over the last 24
// hours, by hour, read from the audit log (each call's record counts its imported and refused keys).
// A lazy migration (apiKeyAuth({ migrateFrom })) imports each key on its first request, one call
// each, so the hourly imports are that many first requests the old service answered; when they
// stay at zero, the old service is no longer asked for new keys. Shown only when there was an
// import in the period, to a root key that may read the audit log.
import type { AuditEventItem } from "../../protocol/types";
import type { OutcomeBucket } from "../analytics";
import { call } from "../api";
import { outcomeChart } from "../chart";
import { h, hourMinute, when } from "../dom";

const HOUR = 3_600_000;
const SPAN = 24 * HOUR;
/** Pages of 100 records read at most (a busy day beyond them is counted as "at least"). */
const MAX_PAGES = 20;

/** A record's counts: `migrated` and `failed` of its change, 0 when absent. */
function counts(e: AuditEventItem): { imported: number; held: number } {
  const { migrated, failed } = e.change as { migrated?: unknown; failed?: unknown };
  return { imported: typeof migrated === "number" ? migrated : 0, held: typeof failed === "number" ? failed : 0 };
}

/** The section, or null when nothing was imported in the last 24 hours (or the audit log cannot be read). */
export async function importsPanel(apiId: string): Promise<HTMLElement | null> {
  const end = Math.ceil((Date.now() + 1) / HOUR) * HOUR;
  const start = end - SPAN;
  const events: AuditEventItem[] = [];
  let cursor: string | undefined;
  let complete = true;
  try {
    for (let page = 0; ; page++) {
      if (page === MAX_PAGES) {
        complete = false;
        break;
      }
      const { data, pagination } = await call("audit.listEvents", {
        operation: "keys.migrateKeys",
        targetId: apiId,
        since: start,
        limit: 100,
        ...(cursor ? { cursor } : {}),
      });
      events.push(...data.filter((e) => e.outcome === "success"));
      if (!pagination?.hasMore || !pagination.cursor) break;
      cursor = pagination.cursor;
    }
  } catch {
    // Not this root key's to read, or no audit log: the page goes on without the panel.
    return null;
  }
  const buckets: OutcomeBucket[] = [];
  let imported = 0;
  let held = 0;
  let lastHour = 0;
  const hourAgo = Date.now() - HOUR;
  for (const e of events) {
    const c = counts(e);
    imported += c.imported;
    held += c.held;
    if (e.time >= hourAgo) lastHour += c.imported;
    const time = Math.floor(e.time / HOUR) * HOUR;
    if (c.imported > 0) buckets.push({ time, outcome: "IMPORTED", total: c.imported });
    if (c.held > 0) buckets.push({ time, outcome: "HELD", total: c.held });
  }
  if (imported === 0 && held === 0) return null;
  const atLeast = complete ? "" : "at least ";
  return h(
    "section",
    { "aria-labelledby": "imports-title", "data-testid": "imports" },
    h("h2", { id: "imports-title" }, "Keys moved in"),
    h(
      "p",
      { "data-testid": "imports-summary" },
      `${atLeast}${imported.toLocaleString()} keys imported since ${when(start)} (keys.migrateKeys), ${lastHour.toLocaleString()} of them in the last hour`,
      held > 0 ? `; ${held.toLocaleString()} refused as already here.` : ".",
    ),
    h(
      "p",
      { class: "muted" },
      "A lazy migration imports each key on its first request, after asking the old service: when imports stay at zero, no new key reaches the old service any more. Requests of keys the old service refuses are not imported and not counted here; the app's own counts (see docs/migration.md) include them.",
    ),
    outcomeChart(buckets, start, end, HOUR, hourMinute, "Imports"),
  );
}
