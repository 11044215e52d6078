// Sliding-window rate limits, the pure math every backend shares. window = floor(now/duration);
// used = current + previous × (1 − elapsed fraction of the window); a check passes when
// used + cost ≤ limit. Several limits checked together are all-or-nothing: if one is denied,
// none is charged.
/** One sliding-window rate limit to check and charge (see `Storage.limit`). */
export interface LimitCheck {
  /**
   * The counter: one per limit id and window length (`limitCounter`), or per workspace,
   * namespace, identifier and window length for `ratelimit.limit` (`namespaceCounter`).
   */
  counter: string;
  limit: number;
  /** Window length, ms. */
  duration: number;
  cost: number;
  /** Key or identity whose limit this is: `dropCounters({ owner })` drops its counters. */
  owner?: string;
}

export interface LimitState {
  passed: boolean;
  /** Uses left in the window after this check, never negative. */
  remaining: number;
  /** Unix ms at the end of the current window. */
  reset: number;
}

/** The counts of one counter: its current window and the two counts the sliding window needs. */
export interface WindowCounter {
  /** floor(now / duration) of the window `current` counts. */
  window: number;
  current: number;
  previous: number;
}

/** A counter to write after a check that passed: its new counts. */
interface CounterWrite {
  check: LimitCheck;
  value: WindowCounter;
}

/**
 * Counter of a key's or identity's limit. One per limit id and window length, so a request that
 * overrides the duration counts in its own window and never resets the configured one.
 */
export function limitCounter(limitId: string, duration: number): string {
  return `${limitId}/${duration}`;
}

/** Whether `counter` is one of `limitCounter(limitId, any duration)`. */
export function isLimitCounterOf(counter: string, limitId: string): boolean {
  return counter.startsWith(`${limitId}/`);
}

/** Counter of `ratelimit.limit`: workspace, namespace, identifier and window length, unambiguously. */
export function namespaceCounter(workspaceId: string, namespace: string, identifier: string, duration: number): string {
  return JSON.stringify([workspaceId, namespace, identifier, duration]);
}

/** The counts as seen at `now`: rolled into the current window. */
function rollWindow(stored: WindowCounter | undefined, duration: number, now: number): WindowCounter {
  const window = Math.floor(now / duration);
  if (stored) {
    if (stored.window === window) return { window, current: stored.current, previous: stored.previous };
    if (stored.window === window - 1) return { window, current: 0, previous: stored.current };
  }
  return { window, current: 0, previous: 0 };
}

/** Whether a counter last charged in `window` can still affect a decision at `now`. */
export function windowEnded(window: number, duration: number, now: number): boolean {
  return window < Math.floor(now / duration) - 1;
}

/**
 * Checks every limit against the counters `read` returns; when all pass, `writes` holds the new
 * counts to store (one per check), else it is empty. Returns one state per check, in order.
 */
export function evaluateLimits(
  read: (counter: string) => WindowCounter | undefined,
  checks: readonly LimitCheck[],
  now: number,
): { passed: boolean; states: LimitState[]; writes: CounterWrite[] } {
  const rolled = checks.map((check) => {
    const rec = rollWindow(read(check.counter), check.duration, now);
    const elapsed = (now - rec.window * check.duration) / check.duration;
    const used = rec.current + rec.previous * (1 - elapsed);
    return { check, rec, used, passed: used + check.cost <= check.limit };
  });
  const passed = rolled.every((r) => r.passed);
  const writes: CounterWrite[] = [];
  const states = rolled.map(({ check, rec, used, passed: ok }) => {
    if (passed) writes.push({ check, value: { ...rec, current: rec.current + check.cost } });
    const after = passed ? used + check.cost : used;
    return {
      passed: ok,
      remaining: Math.max(0, Math.floor(check.limit - after)),
      reset: (rec.window + 1) * check.duration,
    };
  });
  return { passed, states, writes };
}
