// Request-body validation: a small schema language and a validator that reports every problem
// as `{location, message, fix}` (the `errors[]` of a 400), before the root key is looked up.
import type { ValidationErrorDetail } from "../../protocol/types";

interface Base {
  nullable?: boolean;
}
export type Schema =
  | (Base & { kind: "string"; min?: number; max?: number; pattern?: RegExp; patternHint?: string })
  | (Base & { kind: "integer"; min?: number; max?: number })
  | (Base & { kind: "boolean" })
  | (Base & { kind: "enum"; values: readonly string[] })
  | (Base & { kind: "array"; items: Schema; min?: number; max?: number })
  | (Base & { kind: "object"; fields: Record<string, Schema>; required?: readonly string[] })
  | (Base & { kind: "record"; maxProperties?: number });

type Opts<K extends Schema["kind"]> = Omit<Extract<Schema, { kind: K }>, "kind">;

export const str = (o: Opts<"string"> = {}): Schema => ({ kind: "string", min: 1, ...o });
export const int = (o: Opts<"integer"> = {}): Schema => ({ kind: "integer", ...o });
export const bool = (o: Opts<"boolean"> = {}): Schema => ({ kind: "boolean", ...o });
export const oneOf = (values: readonly string[], o: Base = {}): Schema => ({ kind: "enum", values, ...o });
export const arr = (items: Schema, o: Omit<Opts<"array">, "items"> = {}): Schema => ({ kind: "array", items, ...o });
export const obj = (fields: Record<string, Schema>, required: readonly string[] = [], o: Base = {}): Schema => ({
  kind: "object",
  fields,
  required,
  ...o,
});
/** A free-form JSON object (key or identity metadata). */
export const record = (o: Opts<"record"> = {}): Schema => ({ kind: "record", ...o });
export const nullable = (s: Schema): Schema => ({ ...s, nullable: true });

/** Most problems reported for one body; the validator stops reading once it has this many. */
const MAX_ERRORS = 20;
/** Deepest nesting of objects and arrays accepted in free-form metadata (the object itself is level 1). */
export const MAX_META_DEPTH = 32;
/** Largest free-form metadata accepted, in bytes of its JSON encoding. */
export const MAX_META_BYTES = 64 * 1024;

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Whether `v` nests objects or arrays deeper than `max` levels. Recursion stops at `max`. */
function deeperThan(v: unknown, max: number): boolean {
  if (typeof v !== "object" || v === null) return false;
  if (max === 0) return true;
  for (const item of Object.values(v)) if (deeperThan(item, max - 1)) return true;
  return false;
}

/** Problem with free-form metadata: too deep or too large. Checks depth first, so encoding is safe. */
function metaProblem(v: Record<string, unknown>): [string, string] | undefined {
  if (deeperThan(v, MAX_META_DEPTH)) {
    return [`must not be nested deeper than ${MAX_META_DEPTH} levels`, "Flatten the metadata."];
  }
  if (Buffer.byteLength(JSON.stringify(v), "utf8") > MAX_META_BYTES) {
    return [`must be at most ${MAX_META_BYTES} bytes as JSON`, "Store large data elsewhere and keep a reference in meta."];
  }
  return undefined;
}

/** Validates `value` against `schema`; returns the problems found (empty when valid), at most MAX_ERRORS. */
export function validate(schema: Schema, value: unknown, location = "body"): ValidationErrorDetail[] {
  const errors: ValidationErrorDetail[] = [];
  walk(schema, value, location, errors);
  return errors;
}

function walk(s: Schema, v: unknown, at: string, out: ValidationErrorDetail[]): void {
  if (out.length >= MAX_ERRORS) return;
  const push = (message: string, fix?: string, location = at): void => {
    if (out.length < MAX_ERRORS) out.push(fix ? { location, message, fix } : { location, message });
  };
  if (v === null) {
    if (!s.nullable) push("must not be null", "Omit the field instead of sending null.");
    return;
  }
  switch (s.kind) {
    case "string":
      if (typeof v !== "string") return push(`must be a string, got ${typeName(v)}`);
      if (s.min !== undefined && v.length < s.min) push(`must be at least ${s.min} characters long`);
      else if (s.max !== undefined && v.length > s.max) push(`must be at most ${s.max} characters long`);
      else if (s.pattern && !s.pattern.test(v)) push(`does not match the pattern ${s.pattern.source}`, s.patternHint);
      return;
    case "integer":
      if (typeof v !== "number" || !Number.isSafeInteger(v)) return push(`must be an integer, got ${typeName(v)}`);
      if (s.min !== undefined && v < s.min) push(`must be at least ${s.min}`);
      else if (s.max !== undefined && v > s.max) push(`must be at most ${s.max}`);
      return;
    case "boolean":
      if (typeof v !== "boolean") push(`must be a boolean, got ${typeName(v)}`);
      return;
    case "enum":
      if (typeof v !== "string" || !s.values.includes(v)) {
        push(`must be one of ${s.values.map((x) => JSON.stringify(x)).join(", ")}`);
      }
      return;
    case "record": {
      if (!isPlainObject(v)) return push(`must be an object, got ${typeName(v)}`);
      if (s.maxProperties !== undefined && Object.keys(v).length > s.maxProperties) {
        return push(`must have at most ${s.maxProperties} fields`, "Keep fewer top-level fields; nest related values.");
      }
      const problem = metaProblem(v);
      if (problem) push(...problem);
      return;
    }
    case "array":
      if (!Array.isArray(v)) return push(`must be an array, got ${typeName(v)}`);
      if (s.min !== undefined && v.length < s.min) push(`must have at least ${s.min} items`);
      else if (s.max !== undefined && v.length > s.max) push(`must have at most ${s.max} items`);
      for (let i = 0; i < v.length && out.length < MAX_ERRORS; i++) walk(s.items, v[i], `${at}[${i}]`, out);
      return;
    case "object": {
      if (!isPlainObject(v)) return push(`must be an object, got ${typeName(v)}`);
      for (const name of s.required ?? []) {
        if (out.length >= MAX_ERRORS) return;
        if (!Object.hasOwn(v, name) || v[name] === undefined) push("is required", `Add the "${name}" field.`, `${at}.${name}`);
      }
      const allowed = Object.keys(s.fields);
      // Field names first, values only for known fields: a body of many unknown fields costs little.
      for (const name of Object.keys(v)) {
        if (out.length >= MAX_ERRORS) return;
        const field = Object.hasOwn(s.fields, name) ? s.fields[name] : undefined;
        if (!field) {
          push("is not a known field", `Remove it. Known fields: ${allowed.join(", ")}.`, `${at}.${name}`);
          continue;
        }
        const item = v[name];
        if (item !== undefined) walk(field, item, `${at}.${name}`, out);
      }
      return;
    }
  }
}
