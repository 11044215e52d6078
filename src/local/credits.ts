// Credits of a key: charging a cost, and refills (daily at 00:00 UTC, monthly on `refillDay`
// clamped to the month's last day). A refill sets `remaining` to `amount`; it does not add.
import type { CreditsRefill } from "../protocol/types";
import type { CreditsRecord } from "./store";

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

/** Applies a refill that fell due since the last one. Returns whether `credits` changed. */
export function applyRefill(credits: CreditsRecord | undefined, now: number): boolean {
  if (!credits?.refill) return false;
  if (credits.lastRefillAt >= lastRefillBoundary(credits.refill, now)) return false;
  credits.remaining = credits.refill.amount;
  credits.lastRefillAt = now;
  return true;
}

export type ChargeOutcome = { ok: true; remaining?: number } | { ok: false; remaining: number };

/**
 * Charges `cost` credits. Unlimited keys (`credits` undefined) are never charged; a cost above
 * the balance fails and leaves the balance unchanged; a cost of 0 always passes.
 */
export function charge(credits: CreditsRecord | undefined, cost: number): ChargeOutcome {
  if (!credits) return { ok: true };
  if (cost > credits.remaining) return { ok: false, remaining: credits.remaining };
  credits.remaining -= cost;
  return { ok: true, remaining: credits.remaining };
}
