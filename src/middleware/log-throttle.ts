// Keeps repeated operational logs (service down, failing open, misconfiguration) from flooding:
// the first event of a kind is logged, then at most one per interval with a count of the rest.

/** How often one kind of event may be logged. */
export const LOG_INTERVAL_MS = 60_000;

export interface ThrottleDecision {
  log: boolean;
  /** Events of this kind not logged since the last logged one. */
  suppressed: number;
}

/** `kinds` should be a small fixed set (they are kept for the life of the middleware). */
export function createLogThrottle(intervalMs: number = LOG_INTERVAL_MS): (kind: string) => ThrottleDecision {
  const state = new Map<string, { at: number; suppressed: number }>();
  return (kind) => {
    const now = Date.now();
    const entry = state.get(kind);
    if (entry === undefined || now - entry.at >= intervalMs) {
      const suppressed = entry?.suppressed ?? 0;
      state.set(kind, { at: now, suppressed: 0 });
      return { log: true, suppressed };
    }
    entry.suppressed++;
    return { log: false, suppressed: entry.suppressed };
  };
}
