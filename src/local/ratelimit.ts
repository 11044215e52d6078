// Sliding-window rate limits. window = floor(now/duration); effective = current + previous ×
// (1 − elapsed fraction of the window) + cost; denied when effective > limit. Several limits
// checked together are all-or-nothing: if one is denied, none is charged.
import type { WindowRecord } from "./store";

export interface LimitCheck {
  /** Key of the shared counter in the state's `windows` table. */
  counter: string;
  limit: number;
  duration: number;
  cost: number;
}

export interface LimitState {
  passed: boolean;
  /** Uses left in the window after this check, never negative. */
  remaining: number;
  /** Unix ms at the end of the current window. */
  reset: number;
}

function roll(rec: WindowRecord | undefined, duration: number, now: number): WindowRecord {
  const window = Math.floor(now / duration);
  if (rec && rec.duration === duration) {
    if (rec.window === window) return { ...rec };
    if (rec.window === window - 1) return { duration, window, current: 0, previous: rec.current };
  }
  return { duration, window, current: 0, previous: 0 };
}

/**
 * Checks every limit; charges all of them only if all pass. Mutates `windows` only when
 * charging. Returns the overall outcome and one state per check, in order.
 */
export function checkLimits(
  windows: Record<string, WindowRecord>,
  checks: readonly LimitCheck[],
  now: number,
): { passed: boolean; states: LimitState[] } {
  const rolled = checks.map((c) => {
    const rec = roll(Object.hasOwn(windows, c.counter) ? windows[c.counter] : undefined, c.duration, now);
    const elapsed = (now - rec.window * c.duration) / c.duration;
    const used = rec.current + rec.previous * (1 - elapsed);
    return { c, rec, used, passed: used + c.cost <= c.limit };
  });
  const passed = rolled.every((r) => r.passed);
  const states = rolled.map(({ c, rec, used, passed: ok }) => {
    const after = passed ? used + c.cost : used;
    if (passed) windows[c.counter] = { ...rec, current: rec.current + c.cost };
    return {
      passed: ok,
      remaining: Math.max(0, Math.floor(c.limit - after)),
      reset: (rec.window + 1) * c.duration,
    };
  });
  return { passed, states };
}
