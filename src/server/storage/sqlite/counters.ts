// The SQLite store's hot-path writes: charging credits (one UPDATE … RETURNING, the due refill in
// CASE expressions) and sliding-window rate-limit counters (read, decide, write all or none).
import { evaluateLimits, type LimitCheck, type LimitState } from "../../domain/sliding-window";
import type { CreditsCrossings, DueRefill, SpendOutcome } from "../../domain/credits";
import type { SqliteTables } from "./tables";

const DUE = "(? IS NOT NULL AND credits_last_refill_at < ?)";
const BALANCE = `(CASE WHEN ${DUE} THEN ? ELSE credits_remaining END)`;
const CHARGE_WHERE =
  `UPDATE keys SET credits_remaining = ${BALANCE} - ?, ` +
  `credits_last_refill_at = CASE WHEN ${DUE} THEN ? ELSE credits_last_refill_at END ` +
  `WHERE id = ? AND credits_remaining IS NOT NULL AND ${BALANCE} >= ? AND (? > 0 OR ${DUE}) `;
const RETURNING = "RETURNING credits_remaining AS remaining";
const CHARGE = CHARGE_WHERE + RETURNING;
/** The charge unless it crosses: to 0, or from above the low threshold to at or below it (domain/credits.ts `crossings`). */
const CHARGE_UNLESS_CROSSING =
  CHARGE_WHERE + `AND NOT (? > 0 AND (${BALANCE} = ? OR (? IS NOT NULL AND ${BALANCE} > ? AND ${BALANCE} - ? <= ?))) ` + RETURNING;
const REFILL_ONLY =
  "UPDATE keys SET credits_remaining = ?, credits_last_refill_at = ? " +
  "WHERE id = ? AND credits_remaining IS NOT NULL AND credits_last_refill_at < ? RETURNING credits_remaining AS remaining";
const BALANCE_OF = "SELECT credits_remaining AS remaining FROM keys WHERE id = ?";

/** `StorageTx.spendCredits`: the charge is one statement; a refused charge still applies a due refill. */
export function spendCredits(
  t: SqliteTables,
  keyId: string,
  cost: number,
  now: number,
  refill: DueRefill | undefined,
  crossings: CreditsCrossings | undefined,
): SpendOutcome | undefined {
  const b = refill?.boundary ?? null;
  const amount = refill?.amount ?? null;
  const params = [b, b, amount, cost, b, b, now, keyId, b, b, amount, cost, cost, b, b];
  let charged;
  if (crossings === undefined) charged = t.stmt(CHARGE).get(...params);
  else {
    const low = crossings.lowThreshold ?? null;
    const balance = [b, b, amount];
    charged = t.stmt(CHARGE_UNLESS_CROSSING).get(...params, cost, ...balance, cost, low, ...balance, low, ...balance, cost, low);
  }
  if (charged) return { ok: true, remaining: Number(charged.remaining) };
  const row = (b === null ? undefined : t.stmt(REFILL_ONLY).get(amount, now, keyId, b)) ?? t.stmt(BALANCE_OF).get(keyId);
  if (!row || row.remaining === null) return undefined;
  const remaining = Number(row.remaining);
  // Covered but not charged: it would cross (or a concurrent change let it through since).
  if (crossings !== undefined && cost > 0 && remaining >= cost) return { ok: false, remaining, crossing: true };
  // A cost of 0 that applied no refill charged nothing and passes.
  return { ok: cost === 0, remaining };
}

const READ_COUNTER = "SELECT win, cur, prev FROM counters WHERE counter = ?";
const WRITE_COUNTER =
  "INSERT INTO counters (counter, owner, duration, win, cur, prev, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (counter) DO UPDATE SET " +
  "owner = excluded.owner, duration = excluded.duration, win = excluded.win, cur = excluded.cur, prev = excluded.prev, expires_at = excluded.expires_at";
/** Counters whose window ended before the previous one (they can no longer count), a batch at a time. */
const PRUNE = "DELETE FROM counters WHERE counter IN (SELECT counter FROM counters WHERE expires_at <= ? LIMIT 1000)";

/**
 * `StorageTx.limit`: reads the counters, decides with the shared sliding-window math and, when
 * every check passes, writes them all inside `atomically`.
 */
export function chargeLimits(
  t: SqliteTables,
  atomically: (fn: () => void) => void,
  checks: readonly LimitCheck[],
  now: number,
): { passed: boolean; states: LimitState[] } {
  const read = t.stmt(READ_COUNTER);
  const out = evaluateLimits(
    (counter) => {
      const row = read.get(counter);
      return row ? { window: Number(row.win), current: Number(row.cur), previous: Number(row.prev) } : undefined;
    },
    checks,
    now,
  );
  if (out.writes.length > 0) {
    const write = t.stmt(WRITE_COUNTER);
    atomically(() => {
      for (const { check, value } of out.writes) {
        write.run(
          check.counter,
          check.owner ?? null,
          check.duration,
          value.window,
          value.current,
          value.previous,
          (value.window + 2) * check.duration,
        );
      }
    });
  }
  return { passed: out.passed, states: out.states };
}

/** Drops up to a batch of counters that ended by `now`. */
export function pruneCounters(t: SqliteTables, now: number): void {
  t.stmt(PRUNE).run(now);
}

/** `StorageTx.dropCounters`. A limit's counters are "<id>/<duration>": the key range ["<id>/", "<id>0"). */
export function dropCounters(t: SqliteTables, target: { limitIds: readonly string[] } | { owner: string }): void {
  if ("owner" in target) {
    t.stmt("DELETE FROM counters WHERE owner = ?").run(target.owner);
    return;
  }
  const drop = t.stmt("DELETE FROM counters WHERE counter >= ? AND counter < ?");
  for (const id of target.limitIds) drop.run(`${id}/`, `${id}0`);
}
