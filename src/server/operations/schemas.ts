// Body-schema pieces shared by several operations (slugs, rate limits, credits, paging) and the
// cross-field credit checks.
import type { ValidationErrorDetail } from "../../protocol/types";
import { arr, bool, int, nullable, obj, oneOf, record, str, type Schema } from "./validate";

const SLUG_PATTERN = /^[A-Za-z0-9_:\-.*]+$/;
export const slug = (): Schema =>
  str({ max: 128, pattern: SLUG_PATTERN, patternHint: "Use letters, digits and _ : - . * only." });

const ID_PATTERN = /^[a-zA-Z0-9_]+$/;
const ID_HINT = "Use the id as returned, e.g. key_… (letters, digits and underscores).";

/** A resource id as production checks it: 3..255 of letters, digits and `_` (`min` 8 for getApi/deleteApi). */
export const id = (min = 3): Schema => str({ min, max: 255, pattern: ID_PATTERN, patternHint: ID_HINT });

/** Latest accepted `expires` (and rerollKey `expiration`): 2100-01-01T00:00:00Z in Unix ms. */
const MAX_EXPIRES = 4102444800000;
export const expires = (): Schema => int({ min: 0, max: MAX_EXPIRES });

/** Longest window of `ratelimit.limit`: 30 days in ms. */
export const MAX_LIMIT_DURATION = 30 * 24 * 60 * 60 * 1000;

/** The caller's own id of an identity: 1..255 of letters, digits and `_ . -` (an e-mail address is refused). */
export const externalId = (): Schema =>
  str({ max: 255, pattern: /^[a-zA-Z0-9_.-]+$/, patternHint: "Use letters, digits and _ . - only (e.g. a user id, not an e-mail address)." });

/** Key or identity metadata: a JSON object of at most 100 top-level fields. */
export const meta = (): Schema => record({ maxProperties: 100 });

/** A role name in a key's `roles[]`, createRole, getRole and deleteRole. */
export const roleName = (): Schema => str({ max: 128 });

const ratelimitRequest = (): Schema =>
  obj(
    { name: str({ min: 3, max: 128 }), limit: int({ min: 1 }), duration: int({ min: 1000 }), autoApply: bool() },
    ["name", "limit", "duration", "autoApply"],
  );

export const refill = (): Schema =>
  obj({ interval: oneOf(["daily", "monthly"]), amount: int({ min: 1 }), refillDay: int({ min: 1, max: 31 }) }, [
    "interval",
    "amount",
  ]);

export const credits = (): Schema => obj({ remaining: nullable(int({ min: 0 })), refill: refill() }, ["remaining"]);

export const listFields = () => ({ cursor: str({ max: 255 }), limit: int({ min: 1, max: 100 }) });

export const ratelimitList = (): Schema => arr(ratelimitRequest(), { max: 50 });

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
    if (seen.has(r.name)) out.push({ location: `${at}[${i}].name`, message: `duplicate rate limit name "${r.name}"` });
    seen.add(r.name);
  });
  return out;
}
