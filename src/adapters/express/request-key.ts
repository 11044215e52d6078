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
  const locals = (res as { locals?: unknown }).locals;
  const hasLocals = typeof locals === "object" && locals !== null;
  if (hasLocals) (locals as { apiKey?: VerifiedKey }).apiKey = key;
  if (SLOW_PROPERTY_ADD && inheritsAccessor(req) && !Object.hasOwn(req, "apiKey")) {
    if (hasLocals && (req as { res?: unknown }).res === res) (locals as Slot)[SLOT] = key;
    else verified.set(req, key);
  } else (req as { apiKey?: VerifiedKey }).apiKey = key;
}

// Why `req.apiKey` is an accessor on Express requests, on Node 20 and 22: Express gives every
// request its app's prototype (`Object.setPrototypeOf`), and V8 before 13 then builds a new hidden
// class for each property added to that request (a map and a copy of its ~30 descriptors, 1.5 to
// 4 µs and about 1 KiB of old-space garbage per request). So, once, the prototype Express's request
// objects share (the one just above `http.IncomingMessage.prototype`) gets an `apiKey` accessor,
// and the request itself is left alone. The accessor keeps the value in the request's
// `res.locals` (which Express makes per request, without a prototype: a property added there is
// cheap) under a symbol of its own, else (no `res.locals`) in a WeakMap, whose entries cost about
// a microsecond each under load. `req.apiKey` reads and assigns as before (it is not an own,
// enumerable property there). V8 13 (Node 24) reuses the hidden class: requests get a plain
// property there, as do requests Node made (no prototype swapped).

/** Whether this V8 builds a hidden class per property added after a prototype swap (before V8 13). */
const SLOW_PROPERTY_ADD = Number(process.versions.v8.split(".")[0]) < 13;

/** Where the accessor keeps a request's value in its `res.locals`. */
const SLOT = Symbol("keyguard.apiKey");
type Slot = { [SLOT]?: VerifiedKey | undefined };

/** The request's `res.locals` when it is an object. */
function localsOf(req: object): Slot | undefined {
  const locals = (req as { res?: { locals?: unknown } }).res?.locals;
  return typeof locals === "object" && locals !== null ? (locals as Slot) : undefined;
}

const verified = new WeakMap<object, VerifiedKey | undefined>();
const accessor: PropertyDescriptor = {
  configurable: true,
  enumerable: false,
  get(this: object) {
    const locals = localsOf(this);
    return locals !== undefined && Object.hasOwn(locals, SLOT) ? locals[SLOT] : verified.get(this);
  },
  set(this: object, value: VerifiedKey | undefined) {
    const locals = localsOf(this);
    if (locals !== undefined) locals[SLOT] = value;
    else verified.set(this, value);
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
