// The one base class of configuration errors for every entry point (`apiKeyAuth()` and guards,
// `createClient()`, the local key service), and the one way a bad value is shown in a message.

/** The `code` of a ConfigError (also `ERROR_CODES.config`); subclasses have codes of their own. */
export const CONFIG_ERROR_CODE = "KEYGUARD_CONFIG_ERROR";

/** Misconfiguration found when something is created. Names the option at fault and the fix. */
export class ConfigError extends Error {
  override readonly name: string = "ConfigError";
  readonly code: string = CONFIG_ERROR_CODE;
  /** The option at fault, e.g. `"rootKey"`. */
  readonly option: string;
  /** The bad value as the message shows it (a placeholder such as `<hidden>` for a secret), when it shows one. */
  readonly shown: string | undefined;
  /**
   * The advice of the message alone, naming options by their names, when the message has one: lets
   * a caller with names of its own for the options (the `keyguard` command line: flags) say the
   * error in its names without restating the rule.
   */
  readonly fix: string | undefined;
  constructor(option: string, message: string, details: ConfigErrorDetails = {}) {
    super(message);
    this.option = option;
    this.shown = details.shown;
    this.fix = details.fix;
  }
}

/** The parts of a ConfigError's message, for {@link ConfigError.shown} and {@link ConfigError.fix}. */
export interface ConfigErrorDetails {
  readonly shown?: string;
  readonly fix?: string;
}

/** A value as shown in an error message: short, never a function's source or an object's fields. */
export function describeValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  if (typeof value === "function") return "a function";
  if (value === null || typeof value !== "object") return String(value);
  // An object is never printed: it may hold a secret (a root key, a client).
  return Array.isArray(value) ? "an array" : "an object";
}

/**
 * The names of an options type, checked by the compiler: `optionNames<Opts>()({ a: true, b: true })`
 * fails to compile when a name of `Opts` is missing or unknown, so a new option cannot be forgotten.
 */
export const optionNames =
  <T>() =>
  (names: { readonly [K in keyof Required<T>]: true }): readonly string[] =>
    Object.freeze(Object.keys(names));
