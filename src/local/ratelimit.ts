// Sliding-window rate limits. window = floor(now/duration); effective = current + previous ×
// (1 − elapsed fraction of the window) + cost; denied when effective > limit. Several limits
// checked together are all-or-nothing: if one is denied, none is charged.
import type { WindowRecord } from "./store";

export interface LimitCheck {
  /** Key of the shared counter in the state's `windows` table (see limitCounter, namespaceCounter). */
  counter: string;
  limit: number;
  duration: number;
  cost: number;
  /** Key or identity whose limit this is; its counters are dropped with it. */
  owner?: string;
}

export interface LimitState {
  passed: boolean;
  /** Uses left in the window after this check, never negative. */
  remaining: number;
  /** Unix ms at the end of the current window. */
  reset: number;
}

/**
 * Counter of a key's or identity's limit. One per limit id and window length, so a request that
 * overrides the duration counts in its own window and never resets the configured one.
 */
export function limitCounter(limitId: string, duration: number): string {
  return `${limitId}/${duration}`;
}

/** Counter of `ratelimit.limit`: workspace, namespace, identifier and window length, unambiguously. */
export function namespaceCounter(workspaceId: string, namespace: string, identifier: string, duration: number): string {
  return JSON.stringify([workspaceId, namespace, identifier, duration]);
}

/** Drops the counters of these limits (every window length). */
export function dropLimitCounters(windows: Record<string, WindowRecord>, limitIds: readonly string[]): void {
  if (limitIds.length === 0) return;
  for (const counter of Object.keys(windows)) {
    if (limitIds.some((id) => counter.startsWith(`${id}/`))) delete windows[counter];
  }
}

/** Drops every counter of a key's or identity's limits, inline ones included. */
export function dropOwnedCounters(windows: Record<string, WindowRecord>, owner: string): void {
  for (const [counter, rec] of Object.entries(windows)) if (rec.owner === owner) delete windows[counter];
}

/**
 * Drops counters whose window ended before the previous one: they can no longer affect a
 * decision. Returns how many were dropped.
 */
export function pruneWindows(windows: Record<string, WindowRecord>, now: number): number {
  let dropped = 0;
  for (const [counter, rec] of Object.entries(windows)) {
    if (rec.window < Math.floor(now / rec.duration) - 1) {
      delete windows[counter];
      dropped++;
    }
  }
  return dropped;
}

function roll(rec: WindowRecord | undefined, duration: number, now: number): WindowRecord {
  const window = Math.floor(now / duration);
  if (rec && rec.duration === duration) {
    if (rec.window === window) return { duration, window, current: rec.current, previous: rec.previous };
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
    if (passed) {
      const next: WindowRecord = { ...rec, current: rec.current + c.cost };
      if (c.owner !== undefined) next.owner = c.owner;
      windows[c.counter] = next;
    }
    return {
      passed: ok,
      remaining: Math.max(0, Math.floor(c.limit - after)),
      reset: (rec.window + 1) * c.duration,
    };
  });
  return { passed, states };
}
