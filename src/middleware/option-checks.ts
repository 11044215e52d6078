// Small checks shared by the parsing of `apiKeyAuth()` options: each fails with a ConfigError
// naming the option, the bad value and the fix.

import { ConfigError } from "./errors";

export const fail = (option: string, message: string): never => {
  throw new ConfigError(option, `apiKeyAuth: ${message}`);
};

/** A value as shown in a message (functions are not printed). */
export const show = (v: unknown): string => (typeof v === "function" ? "a function" : JSON.stringify(v) ?? String(v));

export function bool(options: Record<string, unknown>, name: string, fallback: boolean): boolean {
  const v = options[name];
  if (v === undefined) return fallback;
  return typeof v === "boolean" ? v : fail(name, `${name} is ${show(v)}; use true or false.`);
}

export function millis(name: string, v: unknown, fallback: number, min: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > 2_147_483_647) {
    return fail(name, `${name} is ${show(v)}; use a whole number of milliseconds ≥ ${min}.`);
  }
  return v;
}

export function optionalFunction<T>(name: string, v: unknown): T | undefined {
  if (v === undefined || typeof v === "function") return v as T | undefined;
  return fail(name, `${name} is ${show(v)}; pass a function.`);
}

/** A frozen copy of an array option and of the objects in it; functions and undefined as they are. */
export function frozenCopy<T>(v: T): T {
  if (!Array.isArray(v)) return v;
  return Object.freeze(v.map((item: unknown) => (typeof item === "object" && item !== null ? Object.freeze({ ...item }) : item))) as T;
}
