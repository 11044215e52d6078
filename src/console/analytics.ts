// The analytics queries of the console (POST /v2/analytics.getVerifications), as listed in the
// analytics contract: outcomes over time, the latest events, keys rate limited recently.
import type { AnalyticsRow } from "../protocol/types";
import type { ApiError } from "./api";
import { call } from "./api";

export interface OutcomeBucket {
  /** Start of the bucket, epoch ms. */
  time: number;
  outcome: string;
  total: number;
}

export interface VerificationEvent {
  time: number;
  keyId: string;
  outcome: string;
  tags: string[];
}

export type Bucket = "minute" | "hour" | "day";
const BUCKET_FN: Record<Bucket, string> = { minute: "toStartOfMinute", hour: "toStartOfHour", day: "toStartOfDay" };

async function query(sql: string): Promise<AnalyticsRow[]> {
  return (await call("analytics.getVerifications", { query: sql })).data;
}

/** A bucket's time as the service answers it (epoch ms, or a date-time text) → epoch ms. */
function toMs(value: unknown): number {
  if (typeof value === "number") return value;
  if (typeof value === "string") {
    if (/^\d+$/.test(value)) return Number(value);
    // "2026-11-24 17:00:00" (ClickHouse's DateTime text) is UTC.
    const iso = /^\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?$/.test(value) ? `${value.replace(" ", "T")}Z` : value;
    return new Date(iso).getTime();
  }
  return Number.NaN;
}

/** `AND key_id = '…'` for one key's events; a key id is letters, digits and _ (anything else is refused, never quoted). */
function ofKey(keyId: string | undefined): string {
  if (keyId === undefined) return "";
  if (!/^\w{1,64}$/.test(keyId)) throw new Error(`Not a key id: ${keyId}`);
  return ` AND key_id = '${keyId}'`;
}

export async function outcomesOverTime(since: number, bucket: Bucket, keyId?: string): Promise<OutcomeBucket[]> {
  const fn = BUCKET_FN[bucket];
  const rows = await query(
    `SELECT ${fn}(fromUnixTimestamp64Milli(time)) AS hour, outcome, count(*) AS total FROM key_verifications_v1 ` +
      `WHERE time >= ${Math.floor(since)}${ofKey(keyId)} GROUP BY hour, outcome ORDER BY hour`,
  );
  return rows.map((r) => ({ time: toMs(r.hour), outcome: String(r.outcome), total: Number(r.total) }));
}

export async function latestEvents(limit = 20, keyId?: string): Promise<VerificationEvent[]> {
  const where = keyId === undefined ? "" : ` WHERE${ofKey(keyId).slice(4)}`;
  const rows = await query(`SELECT time, key_id, outcome, tags FROM key_verifications_v1${where} ORDER BY time DESC LIMIT ${limit}`);
  return rows.map((r) => ({
    time: toMs(r.time),
    keyId: String(r.key_id),
    outcome: String(r.outcome),
    tags: Array.isArray(r.tags) ? r.tags.map(String) : [],
  }));
}

/** Keys with a RATE_LIMITED verification since `since`; `unavailable` says why it could not be known. */
export async function rateLimitedSince(since: number): Promise<{ keys?: Set<string>; unavailable?: string }> {
  try {
    const rows = await query(
      `SELECT key_id, countIf(outcome = 'RATE_LIMITED') AS limited FROM key_verifications_v1 WHERE time >= ${Math.floor(since)} GROUP BY key_id`,
    );
    return { keys: new Set(rows.filter((r) => Number(r.limited) > 0).map((r) => String(r.key_id))) };
  } catch (err) {
    const e = err as ApiError;
    if (e.refused) return { unavailable: `this root key may not read analytics (${e.detail})` };
    if (e.type.endsWith("routing/not_found")) return { unavailable: "this key service has no analytics.getVerifications." };
    return { unavailable: `${e.title}: ${e.detail}` };
  }
}
