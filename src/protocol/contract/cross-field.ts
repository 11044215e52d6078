// Checks across fields that JSON Schema cannot say (credits, unique rate-limit names): the service
// runs them after the schema (an operation's `refine`), the middleware on its rate-limit options.
import type { ValidationErrorDetail } from "../types";

/** Monthly refills need `refillDay`; a refill needs a limited balance. */
export function checkCredits(
  at: string,
  c: { remaining?: number | null; refill?: { interval: string; refillDay?: number } | null } | undefined | null,
): ValidationErrorDetail[] {
  const out: ValidationErrorDetail[] = [];
  if (!c?.refill) return out;
  if (c.refill.interval === "monthly" && c.refill.refillDay === undefined) {
    out.push({
      location: `${at}.refill.refillDay`,
      message: "is required when interval is monthly",
      fix: "Add refillDay (1..31), the day of the month on which credits are refilled.",
    });
  }
  if (c.remaining === null) {
    out.push({
      location: `${at}.remaining`,
      message: "must be a number when a refill is set",
      fix: "Set remaining to the starting balance, or drop refill for unlimited use.",
    });
  }
  return out;
}

/** Rate-limit names must be unique within one list. */
export function checkUniqueNames(at: string, list: Array<{ name: string }> | undefined): ValidationErrorDetail[] {
  const seen = new Set<string>();
  const out: ValidationErrorDetail[] = [];
  (list ?? []).forEach((r, i) => {
    if (seen.has(r.name)) out.push({ location: `${at}[${i}].name`, message: "repeats an earlier rate limit's name" });
    seen.add(r.name);
  });
  return out;
}
