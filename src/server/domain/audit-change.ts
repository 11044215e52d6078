// The compact description an audit record keeps of a change: the request body, described
// rather than copied. Never a secret: fields that carry keys, hashes or sealed copies are left
// out, a value with the shape of a key is described, and large values are summarised.
import { BASE58_ALPHABET } from "../../protocol/base58";

/** A run of base58 characters as long as the shortest generated key's random part. */
const SECRET_RUN = new RegExp(`[${BASE58_ALPHABET}]{16,}`, "g");
/** The ids this service gives out: `<prefix>_` + 11 digits of creation time + 11 random digits. */
const OUR_ID = new RegExp(
  `^(?:req|key|api|perm|role|id|rl|ws|rk|rlor|mig|aud|whep|msg)_([${BASE58_ALPHABET}]{11})[${BASE58_ALPHABET}]{11}$`,
);
/** A rate-limit namespace's id, derived from its workspace and name (see namespaces.ts). */
const NAMESPACE_ID = new RegExp(`^rlns_[${BASE58_ALPHABET}]{22}$`);
/** Ids carry their creation time; one made before this date is not ours. */
const FIRST_ID_MS = Date.UTC(2024, 0, 1);

/** Whether a base58 run mixes at least two kinds of character, as random text does and words rarely do. */
function looksRandom(run: string): boolean {
  const kinds = Number(/[0-9]/.test(run)) + Number(/[A-Z]/.test(run)) + Number(/[a-z]/.test(run));
  return kinds >= 2;
}

/** Whether `value` is an id this service could have made (its time part a plausible creation time). */
function isOurId(value: string): boolean {
  if (NAMESPACE_ID.test(value)) return true;
  const time = OUR_ID.exec(value)?.[1];
  if (time === undefined) return false;
  let n = 0;
  for (const ch of time) n = n * 58 + BASE58_ALPHABET.indexOf(ch);
  const ms = Math.floor(n / 4096);
  return ms >= FIRST_ID_MS && ms <= Date.now() + 86_400_000;
}

/** Whether `value` may be a key or a root key: it holds a long random-looking base58 run and is not one of our ids. */
function mayBeSecret(value: string): boolean {
  if (isOurId(value)) return false;
  for (const [run] of value.matchAll(SECRET_RUN)) if (looksRandom(run)) return true;
  return false;
}

/** Fields whose values are secrets (or stand for them) wherever they appear. */
const SECRET_FIELDS: ReadonlySet<string> = new Set(["key", "plaintext", "hash", "encrypted", "rootKey"]);
/** Free-form data of the caller's: only whether it was set (its size), never its content. */
const OPAQUE_FIELDS: ReadonlySet<string> = new Set(["meta"]);

const MAX_DEPTH = 3;
const MAX_ITEMS = 20;
const MAX_STRING = 200;

/** A described value: scalars as they are (strings cut and secrets described), containers bounded. */
function describe(value: unknown, depth: number): unknown {
  if (value === null || typeof value === "number" || typeof value === "boolean") return value;
  if (typeof value === "string") {
    if (mayBeSecret(value)) return "(a value shaped like a key)";
    return value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}…` : value;
  }
  if (Array.isArray(value)) {
    if (depth >= MAX_DEPTH || value.length > MAX_ITEMS) return `(${value.length} items)`;
    return value.map((v) => describe(v, depth + 1));
  }
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>);
    if (depth >= MAX_DEPTH || entries.length > MAX_ITEMS) return `(${entries.length} fields)`;
    return describeFields(entries, depth + 1);
  }
  return undefined;
}

function describeFields(entries: ReadonlyArray<[string, unknown]>, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of entries) {
    if (SECRET_FIELDS.has(name) || name === "__proto__") continue;
    out[name] =
      OPAQUE_FIELDS.has(name) && value !== null && typeof value === "object"
        ? `(${Object.keys(value).length} fields)`
        : describe(value, depth);
  }
  return out;
}

/** The description of a request body as an audit record keeps it. */
export function describeChange(body: unknown): Record<string, unknown> {
  if (Array.isArray(body)) return { items: describe(body, 1) };
  if (body === null || typeof body !== "object") return {};
  return describeFields(Object.entries(body as Record<string, unknown>), 1);
}

/** The ids a request names (`keyId`, `apiId`…: string fields whose name ends in `Id`, `externalId` aside), for a refused attempt. */
export function idsNamedBy(body: unknown): string[] {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return [];
  const ids: string[] = [];
  for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
    if (name.endsWith("Id") && name !== "externalId" && typeof value === "string" && !mayBeSecret(value)) ids.push(value);
  }
  return ids;
}
