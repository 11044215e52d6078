// Credits of a key: refills (daily at 00:00 UTC, monthly on `refillDay` clamped to the month's
// last day) and charging a cost. A refill sets `remaining` to `amount`; it does not add. Pure
// functions: the operations compute what is due, the store applies it atomically.
import type { CreditsRefill } from "../../protocol/types";
import type { CreditsRecord } from "../records";

/**
 * A refill that `spendCredits` applies first when it fell due: when the key's `lastRefillAt` is
 * before `boundary`, `remaining` becomes `amount` and `lastRefillAt` becomes `now`.
 */
export interface DueRefill {
  boundary: number;
  amount: number;
}

/**
 * The charges `spendCredits` leaves to a transaction when asked (on `Storage.direct`): those that
 * take the balance from above `lowThreshold` to at or below it, or to 0. Those charges cause webhook
 * events, whose messages are written in the charge's own transaction.
 */
export interface CreditsCrossings {
  /** The key's (or its API's) `creditsLowThreshold`; undefined: only reaching 0 counts. */
  lowThreshold: number | undefined;
}

export type SpendOutcome =
  /** Charged: the balance after the charge. */
  | { ok: true; remaining: number }
  /**
   * Not charged: not enough credits; or, with `crossing` (only when `crossings` was given), the
   * balance covers the cost but the charge would cross (make it in a transaction). The balance
   * after any refill.
   */
  | { ok: false; remaining: number; crossing?: true };

const DAY = 86_400_000;

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}

/** The most recent refill instant at or before `now`. */
export function lastRefillBoundary(refill: CreditsRefill, now: number): number {
  const today = Math.floor(now / DAY) * DAY;
  if (refill.interval !== "monthly") return today;
  const d = new Date(now);
  let year = d.getUTCFullYear();
  let month = d.getUTCMonth();
  const day = refill.refillDay ?? 1;
  const thisMonth = Date.UTC(year, month, Math.min(day, daysInMonth(year, month)));
  if (thisMonth <= now) return thisMonth;
  month -= 1;
  if (month < 0) {
    month = 11;
    year -= 1;
  }
  return Date.UTC(year, month, Math.min(day, daysInMonth(year, month)));
}

/**
 * The refill `spendCredits` applies when it fell due (the latest boundary at or before `now`);
 * undefined when the credits have no refill.
 */
export function dueRefill(credits: CreditsRecord | undefined, now: number): DueRefill | undefined {
  const refill = credits?.refill;
  return refill ? { boundary: lastRefillBoundary(refill, now), amount: refill.amount } : undefined;
}

/** Whether this refill fell due for these credits (their last refill is before its boundary). */
function refillIsDue(credits: CreditsRecord, refill: DueRefill | undefined): refill is DueRefill {
  return refill !== undefined && credits.lastRefillAt < refill.boundary;
}

/**
 * The credits as they stand at `now`: with a refill that fell due applied (a copy; what the next
 * spend writes). Views show this without writing anything.
 */
export function creditsAt(credits: CreditsRecord, now: number): CreditsRecord {
  const refill = dueRefill(credits, now);
  return refillIsDue(credits, refill) ? { ...credits, remaining: refill.amount, lastRefillAt: now } : credits;
}

/**
 * What a charge of `cost` from the balance `before` crosses: `low` when it takes the balance from
 * above `lowThreshold` to at or below it, `exhausted` when it takes it to exactly 0.
 */
export function crossings(before: number, cost: number, lowThreshold: number | undefined): { low: boolean; exhausted: boolean } {
  const after = before - cost;
  return {
    low: lowThreshold !== undefined && before > lowThreshold && after <= lowThreshold,
    exhausted: after === 0 && before > 0,
  };
}

/**
 * Applies a due refill, then charges `cost` when the balance covers it (and, with `guard`, when
 * the charge crosses nothing); changes `credits` in place. What a backend that holds the record in
 * memory (or in a locked row) runs.
 */
export function spendFrom(
  credits: CreditsRecord,
  cost: number,
  now: number,
  refill: DueRefill | undefined,
  guard?: CreditsCrossings,
): SpendOutcome {
  if (refillIsDue(credits, refill)) {
    credits.remaining = refill.amount;
    credits.lastRefillAt = now;
  }
  if (cost > credits.remaining) return { ok: false, remaining: credits.remaining };
  if (guard) {
    const crossed = crossings(credits.remaining, cost, guard.lowThreshold);
    if (crossed.low || crossed.exhausted) return { ok: false, remaining: credits.remaining, crossing: true };
  }
  credits.remaining -= cost;
  return { ok: true, remaining: credits.remaining };
}
