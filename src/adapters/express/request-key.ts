// The verified key on an Express/Connect request: `req.apiKey` (and `res.locals.apiKey`), stored
// and read back. The raw key is never stored here; only the service's verification result. (Its
// type, and its place on Express's `Request` type, are the core's: verified-key.ts.)

import { IncomingMessage } from "node:http";
import type { VerifiedKey } from "../../middleware";

/** The verified key of a request, or undefined when `apiKeyAuth()` verified none. */
export function getApiKey(req: object): VerifiedKey | undefined {
  const value = (req as { apiKey?: unknown }).apiKey;
  return typeof value === "object" && value !== null && (value as VerifiedKey).valid === true ? (value as VerifiedKey) : undefined;
}

/** Stores the verified key on `req.apiKey` and, when the response has them, `res.locals.apiKey`. */
export function setApiKey(req: object, res: object, key: VerifiedKey): void {
  if (SLOW_PROPERTY_ADD && inheritsAccessor(req) && !Object.hasOwn(req, "apiKey")) verified.set(req, key);
  else (req as { apiKey?: VerifiedKey }).apiKey = key;
  const locals = (res as { locals?: unknown }).locals;
  if (typeof locals === "object" && locals !== null) (locals as { apiKey?: VerifiedKey }).apiKey = key;
}

// Why `req.apiKey` is an accessor on Express requests, on Node 20 and 22: Express gives every
// request its app's prototype (`Object.setPrototypeOf`), and V8 before 13 then builds a new hidden
// class for each property added to that request (a map and a copy of its ~30 descriptors, 1.5 to
// 4 µs and about 1 KiB of old-space garbage per request). So, once, the prototype Express's request
// objects share (the one just above `http.IncomingMessage.prototype`) gets an `apiKey` accessor
// reading a WeakMap, and the request itself is left alone. `req.apiKey` reads and assigns as before
// (it is not an own, enumerable property there). V8 13 (Node 24) reuses the hidden class, and
// there the WeakMap costs more than it saves (about 4 µs per request measured under load, in the
// garbage collector): requests get a plain property, as do requests Node made (no prototype swapped).

/** Whether this V8 builds a hidden class per property added after a prototype swap (before V8 13). */
const SLOW_PROPERTY_ADD = Number(process.versions.v8.split(".")[0]) < 13;

const verified = new WeakMap<object, VerifiedKey | undefined>();
const accessor: PropertyDescriptor = {
  configurable: true,
  enumerable: false,
  get(this: object) {
    return verified.get(this);
  },
  set(this: object, value: VerifiedKey | undefined) {
    verified.set(this, value);
  },
};
/** Per request prototype: whether `apiKey` resolves to the accessor above. */
const prototypes = new WeakMap<object, boolean>();
let lastPrototype: object | null = null;

function inheritsAccessor(req: object): boolean {
  const proto = Object.getPrototypeOf(req) as object | null;
  if (proto === lastPrototype) return true;
  if (proto === null) return false;
  let ready = prototypes.get(proto);
  if (ready === undefined) prototypes.set(proto, (ready = install(proto)));
  if (ready) lastPrototype = proto;
  return ready;
}

/** Defines the accessor on the prototype below `IncomingMessage.prototype`, when `proto` has one and nothing named `apiKey` is in the way. */
function install(proto: object): boolean {
  const base = IncomingMessage.prototype;
  let top: object | undefined;
  for (let p: object | null = proto; p !== null && p !== base; p = Object.getPrototypeOf(p) as object | null) {
    const own = Object.getOwnPropertyDescriptor(p, "apiKey");
    if (own !== undefined) return own.get === accessor.get && own.set === accessor.set;
    if (Object.getPrototypeOf(p) === base) top = p;
  }
  if (top === undefined || !Object.isExtensible(top)) return false;
  Object.defineProperty(top, "apiKey", accessor);
  return true;
}
