// The retry schedule and Retry-After parsing: pure functions over plain data, no I/O.
// The request chokepoint asks them how long to wait; it owns the sleeping.

/** A fully resolved retry policy (every default filled in). */
export interface RetryPolicy {
  /** Total attempts including the first. */
  readonly attempts: number;
  /** Wait before the 2nd attempt, ms. */
  readonly initialDelay: number;
  readonly factor: number;
  /** Cap for one wait, ms. */
  readonly maxDelay: number;
  /** 0..1: each wait is multiplied by `1 + jitter·(2·random − 1)`. */
  readonly jitter: number;
}

export const DEFAULT_RETRY: RetryPolicy = Object.freeze({
  attempts: 5,
  initialDelay: 1000,
  factor: 2,
  maxDelay: 16_000,
  jitter: 0.2,
});

/**
 * The wait before retry number `retry` (1 = the wait between the 1st and 2nd attempts):
 * `min(maxDelay, initialDelay·factor^(retry−1))`, then jitter, then capped at `maxDelay` again.
 * `random` is a number in [0, 1) (`Math.random()` in production); 0.5 means "no jitter".
 */
export function retryDelay(policy: RetryPolicy, retry: number, random: number): number {
  const base = Math.min(policy.maxDelay, policy.initialDelay * policy.factor ** Math.max(0, retry - 1));
  const jittered = base * (1 + policy.jitter * (2 * clamp01(random) - 1));
  return Math.round(Math.min(policy.maxDelay, Math.max(0, jittered)));
}

/**
 * The wait to use when the service sent `Retry-After`: its value, capped at `maxDelay`
 * (a server cannot make the client sleep longer than configured).
 */
export function retryAfterDelay(policy: RetryPolicy, retryAfter: number): number {
  return Math.round(Math.min(policy.maxDelay, Math.max(0, retryAfter)));
}

// Retry-After values beyond a day are nonsense for this client; they are clamped.
const MAX_RETRY_AFTER_MS = 86_400_000;

/**
 * Milliseconds from a `Retry-After` header: delay-seconds (`"3"`) or an HTTP-date
 * (`"Wed, 21 Oct 2015 07:28:00 GMT"`, relative to `now`, never negative). Undefined when absent
 * or unparsable.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (typeof value !== "string") return undefined;
  const text = value.trim();
  if (text === "" || text.length > 64) return undefined;
  if (/^\d+$/.test(text)) return Math.min(MAX_RETRY_AFTER_MS, Number(text) * 1000);
  // Only dates with a weekday or month name: Date.parse also accepts odd inputs like "1.5".
  if (!/[A-Za-z]{3}/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, at - now));
}

function clamp01(n: number): number {
  if (!Number.isFinite(n)) return 0.5;
  return Math.min(1, Math.max(0, n));
}
