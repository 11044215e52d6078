// Checks a value against a contract schema and says what is wrong as `{location, message, fix}`
// (the `errors[]` of a 400). A plain walker over the JSON Schema: no code generation, so it also
// runs where `new Function` may not (Cloudflare Workers).
import type { TSchema } from "typebox";
import type { ValidationErrorDetail } from "../types";

/** The JSON Schema keywords the contract uses (and keyguard's own `x-` ones). */
interface Node {
  type?: string;
  enum?: readonly unknown[];
  anyOf?: readonly Node[];
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  items?: Node;
  minItems?: number;
  maxItems?: number;
  properties?: Record<string, Node>;
  patternProperties?: Record<string, Node>;
  required?: readonly string[];
  additionalProperties?: boolean;
  maxProperties?: number;
  /** The remedy given when a string does not match `pattern`. */
  "x-fix"?: string;
  /** Deepest nesting of free-form metadata (the object itself is level 1). */
  "x-maxDepth"?: number;
  /** Largest free-form metadata, in bytes of its JSON encoding. */
  "x-maxJsonBytes"?: number;
}

export interface CheckOptions {
  /** Where the value sits, the start of every location: `"body"` by default. */
  readonly location?: string;
  /** Most problems reported; the walk stops once it has this many. 20 by default. */
  readonly maxErrors?: number;
  /** `"accept"` lets unknown fields through even where the schema refuses them (answers of a newer server). */
  readonly unknownFields?: "refuse" | "accept";
}

const patterns = new Map<string, RegExp>();
const regex = (source: string): RegExp => {
  let re = patterns.get(source);
  if (re === undefined) patterns.set(source, (re = new RegExp(source)));
  return re;
};

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

const encoder = new TextEncoder();

/** The schema a nullable `anyOf: [schema, {type: "null"}]` wraps, or undefined when `s` is not one. */
function nullableOf(s: Node): Node | undefined {
  if (s.anyOf?.length !== 2) return undefined;
  const other = s.anyOf.find((m) => m.type !== "null");
  return other !== undefined && s.anyOf.some((m) => m.type === "null") ? other : undefined;
}

/** Checks `value` against `schema`; returns the problems found (empty when valid). */
export function checkValue(schema: TSchema, value: unknown, options: CheckOptions = {}): ValidationErrorDetail[] {
  const out: ValidationErrorDetail[] = [];
  const max = options.maxErrors ?? 20;
  const refuseUnknown = options.unknownFields !== "accept";

  const walk = (s: Node, v: unknown, at: string): void => {
    if (out.length >= max) return;
    const push = (message: string, fix?: string, location = at): void => {
      if (out.length < max) out.push(fix ? { location, message, fix } : { location, message });
    };
    const inner = nullableOf(s);
    if (v === null) {
      if (inner === undefined && s.type !== "null") push("must not be null", "Omit the field instead of sending null.");
      return;
    }
    if (inner !== undefined) return walk(inner, v, at);
    if (s.enum !== undefined) {
      if (!s.enum.includes(v)) push(`must be one of ${s.enum.map((x) => JSON.stringify(x)).join(", ")}`);
      return;
    }
    switch (s.type) {
      case "string":
        if (typeof v !== "string") return push(`must be a string, got ${typeName(v)}`);
        if (s.minLength !== undefined && v.length < s.minLength) push(`must be at least ${s.minLength} characters long`);
        else if (s.maxLength !== undefined && v.length > s.maxLength) push(`must be at most ${s.maxLength} characters long`);
        else if (s.pattern !== undefined && !regex(s.pattern).test(v)) push(`does not match the pattern ${s.pattern}`, s["x-fix"]);
        return;
      case "integer":
      case "number":
        if (typeof v !== "number" || (s.type === "integer" ? !Number.isSafeInteger(v) : !Number.isFinite(v))) {
          return push(`must be ${s.type === "integer" ? "an integer" : "a number"}, got ${typeName(v)}`);
        }
        if (s.minimum !== undefined && v < s.minimum) push(`must be at least ${s.minimum}`);
        else if (s.maximum !== undefined && v > s.maximum) push(`must be at most ${s.maximum}`);
        return;
      case "boolean":
        if (typeof v !== "boolean") push(`must be a boolean, got ${typeName(v)}`);
        return;
      case "array":
        if (!Array.isArray(v)) return push(`must be an array, got ${typeName(v)}`);
        if (s.minItems !== undefined && v.length < s.minItems) push(`must have at least ${s.minItems} items`);
        else if (s.maxItems !== undefined && v.length > s.maxItems) push(`must have at most ${s.maxItems} items`);
        for (let i = 0; i < v.length && out.length < max; i++) walk(s.items ?? {}, v[i], `${at}[${i}]`);
        return;
      case "object":
        if (!isPlainObject(v)) return push(`must be an object, got ${typeName(v)}`);
        if (s.properties === undefined) return freeForm(s, v, push);
        return fields(s, s.properties, v, at, push);
      default:
        return;
    }
  };

  /** Free-form metadata: a field count, a depth (checked first, so encoding is safe) and a size. */
  const freeForm = (s: Node, v: Record<string, unknown>, push: (message: string, fix?: string) => void): void => {
    if (s.maxProperties !== undefined && Object.keys(v).length > s.maxProperties) {
      return push(`must have at most ${s.maxProperties} fields`, "Keep fewer top-level fields; nest related values.");
    }
    const depth = s["x-maxDepth"];
    if (depth !== undefined && deeperThan(v, depth)) return push(`must not be nested deeper than ${depth} levels`, "Flatten the metadata.");
    const bytes = s["x-maxJsonBytes"];
    if (bytes !== undefined && encoder.encode(JSON.stringify(v)).length > bytes) {
      push(`must be at most ${bytes} bytes as JSON`, "Store large data elsewhere and keep a reference in meta.");
    }
  };

  const fields = (
    s: Node,
    properties: Record<string, Node>,
    v: Record<string, unknown>,
    at: string,
    push: (message: string, fix?: string, location?: string) => void,
  ): void => {
    for (const name of s.required ?? []) {
      if (out.length >= max) return;
      if (!Object.hasOwn(v, name) || v[name] === undefined) push("is required", `Add the "${name}" field.`, `${at}.${name}`);
    }
    const strict = refuseUnknown && s.additionalProperties === false;
    // Field names first, values only for known fields: a body of many unknown fields costs little.
    for (const name of Object.keys(v)) {
      if (out.length >= max) return;
      const field = Object.hasOwn(properties, name) ? properties[name] : undefined;
      if (field === undefined) {
        if (strict) push("is not a known field", `Remove it. Known fields: ${Object.keys(properties).join(", ")}.`, `${at}.${name}`);
        continue;
      }
      const item = v[name];
      if (item !== undefined) walk(field, item, `${at}.${name}`);
    }
  };

  walk(schema as Node, value, options.location ?? "body");
  return out;
}
