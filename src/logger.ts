// The logger contract shared by every part of keyguard: pino-compatible `(fields, message)`.
// Library code never writes to the console; it calls the logger it was given.

export type LogFields = Record<string, unknown>;

/** Anything with pino-style `warn` and `error` (pino, bunyan-like wrappers, or a plain object). */
export interface Logger {
  debug?(fields: LogFields, message: string): void;
  info?(fields: LogFields, message: string): void;
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
  process.stderr.write(`keyguard ${level}: ${message}${extra}\n`);
}

/**
 * The default: quiet for expected events (`debug`/`info` are dropped), loud for problems an
 * operator must act on (`warn`/`error` go to stderr as one line each).
 */
export const defaultLogger: Logger = Object.freeze({
  warn: (fields: LogFields, message: string) => toStderr("warn", fields, message),
  error: (fields: LogFields, message: string) => toStderr("error", fields, message),
});
