// The checks of every entry point's options, in one place: whole and finite numbers in a range,
// durations, strings, URLs, loggers, booleans, choices, functions, objects and unknown names. Each
// entry point takes a checker naming it and throwing its own ConfigError class, with one message form:
// `<where>: invalid option <name> = <value as shown>. <fix>` (a secret is shown by a placeholder).

import { describeValue, type ConfigError, type ConfigErrorDetails } from "./config-error";
import { defaultLogger, type Logger } from "./logger";
import { findUnknownOptions, unknownOptionsMessage, warnUnknownOptions } from "./unknown-options";

/** The largest delay a Node.js timer accepts, ms: the top of every duration, and of every count by default. */
export const MAX_TIMER_MS = 2_147_483_647;

/** What a message shows in place of a value it must not echo (a secret, a URL that may hold a password). */
export class Hidden {
  constructor(readonly text: string) {}
}

/** A secret's value as every message shows it. */
export const HIDDEN = new Hidden("<hidden>");

/** An entry point's ConfigError class (ConfigError, KeyServiceConfigError, …). */
export type ConfigErrorClass = new (option: string, message: string, details?: ConfigErrorDetails) => ConfigError;
/** Builds an entry point's ConfigError when its class takes other arguments (LocalServiceConfigError). */
export type ConfigErrorFactory = (option: string, message: string, details: ConfigErrorDetails) => ConfigError;

/** A whole or finite number's rule. */
export interface NumberRule {
  readonly min: number;
  /** Default: the largest 32-bit integer (what timers, SQLite and lru-cache take). */
  readonly max?: number;
  /** Used for undefined; undefined: the option is required. */
  readonly default?: number;
  /** What the number counts, e.g. `"days"`. */
  readonly unit?: string;
  /** Said in parentheses after the range, e.g. `"0 picks any free port"`. */
  readonly note?: string;
}

/** A string's rule: a `pattern` it must match, the `fix` said when it does not. */
export interface StringRule {
  readonly pattern: RegExp;
  readonly fix: string;
  readonly default?: string;
  /** Undefined stays undefined (when there is no default). */
  readonly optional?: boolean;
  /** Never shown in a message (a root key, a token). */
  readonly secret?: boolean;
  /** How the message names the option (e.g. an environment variable it came from). */
  readonly label?: string;
}

/** A URL's rule. Its value is shown only as far as it holds no secret. */
export interface UrlRule {
  /** Accepted schemes, with their colons: `["http:", "https:"]`. */
  readonly protocols: readonly string[];
  /** A URL to suggest, e.g. `"redis://127.0.0.1:6379"`. */
  readonly example: string;
  /**
   * `"hidden"` (default): never shown, only its kind (`<a mysql: URL>`): connection URLs carry
   * passwords. `"origin"`: shown up to its query or fragment, unless it holds `@`.
   */
  readonly show?: "hidden" | "origin";
  /** Refuse `user:password@`, saying where the credentials go instead. */
  readonly noCredentials?: string;
  /** Refuse a query or fragment. */
  readonly noQuery?: boolean;
  /** How the message names the option (e.g. `UNKEY_BASE_URL` when the value came from there). */
  readonly label?: string;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A value as a message shows it: a placeholder as it is, anything else by {@link describeValue}. */
function shownValue(value: unknown): string {
  return value instanceof Hidden ? value.text : describeValue(value);
}

/** A URL as a message may show it: never credentials, never a query or fragment (either may carry a token). */
function shownUrl(value: string): Hidden | string {
  if (value.includes("@")) return new Hidden('<a value containing "@", hidden: it may hold credentials>');
  const cut = value.search(/[?#]/);
  return cut === -1 ? value : new Hidden(`${describeValue(value.slice(0, cut))} (its query and fragment are left out of this message)`);
}

function rangeText(rule: NumberRule, kind: string): string {
  const notes = [rule.note, rule.default === undefined ? undefined : `default ${rule.default}`].filter((n) => n !== undefined);
  return `Use ${kind}${rule.unit === undefined ? "" : ` of ${rule.unit}`} ${rule.min}..${rule.max ?? MAX_TIMER_MS}${notes.length === 0 ? "" : ` (${notes.join("; ")})`}.`;
}

/** The checks of one entry point: see {@link optionChecks}. */
export class OptionChecks {
  private readonly make: ConfigErrorFactory;

  /** `where` starts every message (e.g. `"apiKeyAuth"`); `error` is the entry point's ConfigError class. */
  constructor(
    readonly where: string,
    error: ConfigErrorClass | ConfigErrorFactory,
  ) {
    // A class has a prototype that is an Error; an arrow function has none.
    this.make =
      error.prototype instanceof Error
        ? (option, message, details) => new (error as ConfigErrorClass)(option, message, details)
        : (error as ConfigErrorFactory);
  }

  /** Throws a sentence of the entry point's own (a conflict between options, a missing one): `<where>: <sentence>`. */
  fail(option: string, sentence: string, details: ConfigErrorDetails = {}): never {
    throw this.make(option, `${this.where}: ${sentence}`, details);
  }

  /** Throws `<where>: invalid option <label> = <value as shown>. <fix>`, with `shown` and `fix` on the error. */
  invalid(option: string, value: unknown, fix: string, label: string = option): never {
    const shown = shownValue(value);
    throw this.make(option, `${this.where}: invalid option ${label} = ${shown}. ${fix}`, { shown, fix });
  }

  /** A whole number within the rule's range; undefined gives its default. */
  integer(option: string, value: unknown, rule: NumberRule): number {
    if (value === undefined && rule.default !== undefined) return rule.default;
    if (typeof value !== "number" || !Number.isInteger(value) || value < rule.min || value > (rule.max ?? MAX_TIMER_MS)) {
      return this.invalid(option, value, rangeText(rule, "a whole number"));
    }
    return value;
  }

  /** A finite number within the rule's range (fractions allowed); undefined gives its default. */
  number(option: string, value: unknown, rule: NumberRule): number {
    if (value === undefined && rule.default !== undefined) return rule.default;
    if (typeof value !== "number" || !Number.isFinite(value) || value < rule.min || value > (rule.max ?? MAX_TIMER_MS)) {
      return this.invalid(option, value, rangeText(rule, "a number"));
    }
    return value;
  }

  /** A duration in whole milliseconds, `min` (default 1) to the longest timer. */
  duration(option: string, value: unknown, rule: { readonly min?: number; readonly default: number }): number {
    return this.integer(option, value, { min: rule.min ?? 1, default: rule.default, unit: "milliseconds" });
  }

  /** true or false; undefined gives `fallback`. */
  boolean(option: string, value: unknown, fallback: boolean): boolean {
    if (value === undefined) return fallback;
    return typeof value === "boolean" ? value : this.invalid(option, value, "Pass true or false.");
  }

  /** One of `choices`; undefined gives `fallback` (when there is none, undefined stays undefined). */
  oneOf<T extends string>(option: string, value: unknown, choices: readonly T[], fallback: T, note?: string): T;
  oneOf<T extends string>(option: string, value: unknown, choices: readonly T[], fallback?: T, note?: string): T | undefined;
  oneOf<T extends string>(option: string, value: unknown, choices: readonly T[], fallback?: T, note?: string): T | undefined {
    if (value === undefined) return fallback;
    if (typeof value === "string" && (choices as readonly string[]).includes(value)) return value as T;
    const listed = choices.map((c) => JSON.stringify(c));
    const either = listed.length === 1 ? listed[0] : `${listed.slice(0, -1).join(", ")} or ${listed.at(-1)}`;
    return this.invalid(
      option,
      value,
      `Use ${either}${fallback === undefined ? ", or leave it unset" : ""}${note === undefined ? "" : ` (${note})`}.`,
    );
  }

  /** A string matching `rule.pattern`; undefined gives its default (none: refused, unless optional). A secret is never shown. */
  string(option: string, value: unknown, rule: StringRule & { readonly optional: true }): string | undefined;
  string(option: string, value: unknown, rule: StringRule): string;
  string(option: string, value: unknown, rule: StringRule): string | undefined {
    const v = value === undefined ? rule.default : value;
    if (v === undefined && rule.optional) return undefined;
    if (typeof v !== "string" || !rule.pattern.test(v)) {
      return this.invalid(option, rule.secret && typeof v === "string" ? HIDDEN : v, rule.fix, rule.label);
    }
    return v;
  }

  /** A function, or undefined. `signature` tells what it is called with, e.g. `"(req) => string"`. */
  func<F>(option: string, value: unknown, signature?: string): F | undefined {
    if (value === undefined || typeof value === "function") return value as F | undefined;
    return this.invalid(option, value, `Pass a function${signature === undefined ? "" : ` ${signature}`}.`);
  }

  /** A plain object (not null, not an array), or undefined. */
  object(option: string, value: unknown, fix: string): Record<string, unknown> | undefined {
    if (value === undefined || isPlainObject(value)) return value;
    return this.invalid(option, value, fix);
  }

  /** An object with each of `methods` a function (a store, a client, a publisher), or undefined. */
  withMethods<T>(option: string, value: unknown, methods: readonly string[], fix: string): T | undefined {
    if (value === undefined) return undefined;
    if (typeof value !== "object" || value === null || methods.some((m) => typeof (value as Record<string, unknown>)[m] !== "function")) {
      return this.invalid(option, value, fix);
    }
    return value as T;
  }

  /** The options argument itself: an object, or undefined for none. */
  options(value: unknown, fix: string): Record<string, unknown> {
    return this.object("options", value, fix) ?? {};
  }

  /** A pino-compatible logger (`warn` and `error` functions); undefined gives the default logger. */
  logger(value: unknown): Logger {
    const logger = (value ?? defaultLogger) as Partial<Logger>;
    if (typeof logger !== "object" || typeof logger.warn !== "function" || typeof logger.error !== "function") {
      return this.invalid("logger", value, "Pass an object with warn(fields, msg) and error(fields, msg) methods (pino works).");
    }
    return logger as Logger;
  }

  /** A URL with one of the rule's schemes; its value is shown only as far as it is safe (see {@link UrlRule}). */
  url(option: string, value: unknown, rule: UrlRule): URL {
    const label = rule.label ?? option;
    const schemes = rule.protocols.map((p) => `${p}//`).join(" or ");
    const article = /^[aeioh]/.test(schemes) ? "an" : "a";
    const shown = (kind: string) => (typeof value !== "string" ? value : rule.show === "origin" ? shownUrl(value) : new Hidden(kind));
    if (typeof value !== "string" || value.trim() === "") this.invalid(option, value, `Pass a URL such as ${rule.example}.`, label);
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return this.invalid(option, shown("<not a URL>"), `It is not a valid URL; pass one such as ${rule.example}.`, label);
    }
    if (!rule.protocols.includes(url.protocol)) {
      this.invalid(option, shown(`<a ${url.protocol} URL>`), `Use ${article} ${schemes} URL such as ${rule.example}.`, label);
    }
    if (rule.noCredentials !== undefined && (url.username !== "" || url.password !== "")) {
      this.invalid(option, new Hidden("<a URL with credentials, hidden>"), `Take user:password@ out of it; ${rule.noCredentials}`, label);
    }
    if (rule.noQuery && (url.search !== "" || url.hash !== "")) {
      this.invalid(option, shown("<a URL with a query, hidden>"), `Take the query and fragment out of it, e.g. ${rule.example}.`, label);
    }
    return url;
  }

  /**
   * Option names the entry point does not know (`given` may hold nested ones, `cache.ttl`): with a
   * logger, one warning and the rest is used; without one (a factory that has none), refused.
   */
  unknownNames(given: readonly string[], known: readonly string[], logger?: Logger): void {
    if (logger !== undefined) return warnUnknownOptions(this.where, given, known, logger);
    const found = findUnknownOptions(given, known);
    if (found !== undefined) this.fail(found.names[0]!, unknownOptionsMessage(found, known));
  }
}

/**
 * The checks of one entry point: `where` names it in every message, `error` is its ConfigError class
 * (or a function building one). `const check = optionChecks("apiKeyAuth", ConfigError)`, then
 * `check.duration("timeout", options.timeout, { default: 1000 })`.
 */
export function optionChecks(where: string, error: ConfigErrorClass | ConfigErrorFactory): OptionChecks {
  return new OptionChecks(where, error);
}
