// The logger contract shared by every part of keyguard: pino-compatible `(fields, message)`.
// Library code never writes to the console; it calls the logger it was given.

export type LogFields = Record<string, unknown>;

/** Anything with pino-style `warn` and `error` (pino, bunyan-like wrappers, or a plain object). */
export interface Logger {
  debug?(fields: LogFields, message: string): void;
  warn(fields: LogFields, message: string): void;
  error(fields: LogFields, message: string): void;
}

/** Drops everything. Useful in tests. */
export const silentLogger: Logger = Object.freeze({
  warn() {},
  error() {},
});

function toStderr(level: string, fields: LogFields, message: string): void {
  let extra = "";
  try {
    extra = Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : "";
  } catch {
    extra = "";
  }
  // Node, Bun and Deno have process.stderr; where nothing does (Cloudflare Workers), pass a logger.
  if (typeof process !== "undefined") process.stderr?.write(`keyguard ${level}: ${message}${extra}\n`);
}

/**
 * The default: quiet for expected events (`debug`/`info` are dropped), loud for problems an
 * operator must act on (`warn`/`error` go to stderr as one line each).
 */
export const defaultLogger: Logger = Object.freeze({
  warn: (fields: LogFields, message: string) => toStderr("warn", fields, message),
  error: (fields: LogFields, message: string) => toStderr("error", fields, message),
});

// Repeated operational logs (service down, failing open, Redis unreachable) must not flood: the
// first event of a kind is logged, then at most one per interval with a count of the rest.

/** How often one kind of event may be logged. */
const LOG_INTERVAL_MS = 60_000;

interface ThrottleDecision {
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
