// The compact description an audit record keeps of a change: the request body, described
// rather than copied. Whether a string is a key cannot be told from its characters, so no string
// is kept by its looks: a caller's string is kept as sent only
// - in a field where the caller names a record on purpose (NAME_FIELDS: a key's or an API's
//   name, an identity's externalId, permission and role names…) or picks from a closed list the
//   service checked (CLOSED_FIELDS),
// - or as an id the service resolved: one of the record's targets;
// every other string is described by its length (`(a string of 43 characters)`). Fields that
// carry keys, hashes or sealed copies are left out, free-form data is summarised by its size.
import { kindOf } from "./caller-value";

/**
 * Fields whose strings are names or labels the caller gives a record on purpose, kept as sent (an
 * array of them: each element), wherever they appear in the body.
 */
const NAME_FIELDS: ReadonlySet<string> = new Set(["name", "externalId", "prefix", "namespace", "permissions", "roles"]);
/** Fields whose strings the request's schema limits to a closed list of the service's (a refill interval, an event type…). */
const CLOSED_FIELDS: ReadonlySet<string> = new Set(["interval", "leakResponse", "events"]);
/** Fields whose values are secrets (or stand for them) wherever they appear. */
const SECRET_FIELDS: ReadonlySet<string> = new Set(["key", "plaintext", "hash", "encrypted", "rootKey"]);
/** Free-form data of the caller's: only whether it was set (its size), never its content. */
const OPAQUE_FIELDS: ReadonlySet<string> = new Set(["meta"]);

const MAX_DEPTH = 3;
const MAX_ITEMS = 20;
const MAX_STRING = 200;

/** The ids an audit record may name: the operation's own (its targets, records it found or created). */
type Resolved = ReadonlySet<string>;

/** A described value; `field` is the name of the field holding it (an array's elements: the array's). */
function describe(value: unknown, field: string, resolved: Resolved, depth: number): unknown {
  if (value === null || typeof value === "number" || typeof value === "boolean") return value;
  if (typeof value === "string") {
    if (NAME_FIELDS.has(field) || CLOSED_FIELDS.has(field)) return value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}…` : value;
    if (resolved.has(value)) return value;
    return `(${kindOf(value)})`;
  }
  if (Array.isArray(value)) {
    if (depth >= MAX_DEPTH || value.length > MAX_ITEMS) return `(${value.length} items)`;
    return value.map((v) => describe(v, field, resolved, depth + 1));
  }
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>);
    if (depth >= MAX_DEPTH || entries.length > MAX_ITEMS) return `(${entries.length} fields)`;
    return describeFields(entries, resolved, depth + 1);
  }
  return undefined;
}

function describeFields(entries: ReadonlyArray<[string, unknown]>, resolved: Resolved, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of entries) {
    if (SECRET_FIELDS.has(name) || name === "__proto__") continue;
    out[name] =
      OPAQUE_FIELDS.has(name) && value !== null && typeof value === "object"
        ? `(${Object.keys(value).length} fields)`
        : describe(value, name, resolved, depth);
  }
  return out;
}

/** The description of a request body as an audit record keeps it; `targets` are the record's ids (kept where the body names them). */
export function describeChange(body: unknown, targets: readonly string[]): Record<string, unknown> {
  const resolved = new Set(targets);
  if (Array.isArray(body)) return { items: describe(body, "items", resolved, 1) };
  if (body === null || typeof body !== "object") return {};
  return describeFields(Object.entries(body as Record<string, unknown>), resolved, 1);
}
