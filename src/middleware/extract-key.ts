// The credentials in a request's headers: finds the caller's API key (`Authorization: Bearer <key>`
// and/or a key header, `X-API-Key` by default), removes the headers that carried it
// (`hideCredentials`), and recognises a CORS preflight, which carries none. Reads `headers` and
// `rawHeaders`, never the network.

import type { IncomingHttpHeaders, IncomingMessage } from "node:http";

/** Longest key the key service accepts; longer ones cannot exist. */
export const MAX_KEY_LENGTH = 512;

/** RFC 6750 b64token. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
/** RFC 7235 auth-scheme (a token), then 1*SP and the credentials. */
const AUTHORIZATION = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)(?:( +)(.*))?$/s;

export type KeySource = "authorization" | "header";

export type Extraction =
  /** No key anywhere (an Authorization header with another scheme, e.g. Basic, counts as none). */
  | { readonly kind: "none" }
  /** A key; `from` lists every header that carried it (both, when both sent the same key). */
  | { readonly kind: "key"; readonly key: string; readonly from: readonly KeySource[] }
  /** Malformed credentials; `reason` is safe to show and never contains the key. */
  | { readonly kind: "malformed"; readonly reason: string }
  /** A well-formed key longer than {@link MAX_KEY_LENGTH}: no such key can exist. */
  | { readonly kind: "oversize"; readonly from: readonly KeySource[] };

export interface RequestHeaders {
  headers: IncomingHttpHeaders;
  rawHeaders?: readonly string[];
}

export interface ExtractOptions {
  /** Read `Authorization: Bearer`. */
  readonly bearer: boolean;
  /** Lower-case name of the key header, or undefined for none. */
  readonly header: string | undefined;
  /** Display name of the key header, for messages. */
  readonly headerLabel: string;
}

/**
 * How many times a header was sent. Presence comes from `headers` (which other middleware may have
 * edited); repeats from `rawHeaders`, since Node keeps one Authorization and joins X-API-Key values.
 */
function occurrences(value: string | string[] | undefined, rawHeaders: readonly string[] | undefined, name: string): number {
  if (value === undefined) return 0;
  if (Array.isArray(value)) return value.length;
  let raw = 0;
  if (Array.isArray(rawHeaders)) {
    for (let i = 0; i < rawHeaders.length; i += 2) {
      const header = rawHeaders[i]!;
      // Length first: most headers differ in length, and lower-casing allocates.
      if (header.length === name.length && (header === name || header.toLowerCase() === name)) raw++;
    }
  }
  return raw > 1 ? raw : 1;
}

type Part =
  { readonly kind: "none" } | { readonly kind: "key"; readonly key: string } | { readonly kind: "malformed"; readonly reason: string };

const NONE: Extraction & Part = Object.freeze({ kind: "none" });
const FROM_AUTHORIZATION: readonly KeySource[] = Object.freeze(["authorization"]);
const FROM_HEADER: readonly KeySource[] = Object.freeze(["header"]);
const FROM_BOTH: readonly KeySource[] = Object.freeze(["authorization", "header"]);

/** Whether `value` starts with the scheme `Bearer` (any case) and a space. */
function isBearer(value: string): boolean {
  return (
    value.length > 7 &&
    value.charCodeAt(6) === 32 &&
    (value.charCodeAt(0) | 32) === 98 && // b
    (value.charCodeAt(1) | 32) === 101 && // e
    (value.charCodeAt(2) | 32) === 97 && // a
    (value.charCodeAt(3) | 32) === 114 && // r
    (value.charCodeAt(4) | 32) === 101 && // e
    (value.charCodeAt(5) | 32) === 114 // r
  );
}

/**
 * The last Authorization value that gave a key, and that key: a keep-alive client (or several
 * clients sharing a key) sends the same value on every request. Reused when the next value is the
 * same, compared in full; the same key string then lets later memos (the checksum's verdict, the
 * key's hash) compare it by identity, where comparing two slices of different header values costs a
 * call into the runtime. Kept in this process's memory only, as the key-hash memos keep keys
 * (src/adapters/key-hash-memo.ts), until a different value gives a key.
 */
export interface BearerMemo {
  value: string | undefined;
  part: Part;
}

/** An empty {@link BearerMemo}, one per decision core. */
export const bearerMemo = (): BearerMemo => ({ value: undefined, part: NONE });

function fromAuthorization(found: string | string[] | undefined, rawHeaders: readonly string[] | undefined, memo?: BearerMemo): Part {
  const count = occurrences(found, rawHeaders, "authorization");
  if (count === 0) return NONE;
  if (count > 1) return { kind: "malformed", reason: "The Authorization header was sent more than once." };
  const value = (Array.isArray(found) ? found[0] : found) ?? "";
  if (memo !== undefined && value === memo.value) return memo.part;
  const part = bearerPart(value);
  if (memo !== undefined && part.kind === "key") {
    memo.value = value;
    memo.part = part;
  }
  return part;
}

/** The key of one Authorization value, none for another scheme, or why it is malformed. */
function bearerPart(value: string): Part {
  if (isBearer(value)) {
    // The usual form, read without the general grammar below (same result when it is well formed).
    let start = 7;
    while (value.charCodeAt(start) === 32) start++;
    const token = value.slice(start);
    if (token !== "" && B64TOKEN.test(token)) return { kind: "key", key: token };
  }
  if (value === "") return { kind: "malformed", reason: "The Authorization header is empty." };
  const match = AUTHORIZATION.exec(value);
  if (!match) return { kind: "malformed", reason: "The Authorization header is malformed." };
  if (match[1]!.toLowerCase() !== "bearer") return NONE;
  const token = match[3] ?? "";
  if (token === "") return { kind: "malformed", reason: "The Bearer token is empty." };
  if (!B64TOKEN.test(token)) {
    return { kind: "malformed", reason: "The Bearer token is malformed: use `Authorization: Bearer <key>` with a single key." };
  }
  return { kind: "key", key: token };
}

function fromHeader(found: string | string[] | undefined, rawHeaders: readonly string[] | undefined, name: string, label: string): Part {
  const count = occurrences(found, rawHeaders, name);
  if (count === 0) return NONE;
  if (count > 1) return { kind: "malformed", reason: `The ${label} header was sent more than once.` };
  const value = (Array.isArray(found) ? found[0] : found) ?? "";
  if (value === "") return { kind: "malformed", reason: `The ${label} header is empty.` };
  if (!B64TOKEN.test(value)) return { kind: "malformed", reason: `The ${label} header is malformed: send a single key.` };
  return { kind: "key", key: value };
}

/**
 * Extracts the key. Rules: the scheme `Bearer` is case-insensitive and never part of the key;
 * one or more spaces may separate it from the token (RFC 7235 `1*SP`), nothing else; the token
 * must be an RFC 6750 b64token. A repeated header, or two headers with different keys, is malformed.
 */
export function extractKey(req: RequestHeaders, options: ExtractOptions): Extraction {
  return extractKeyRemembering(req, options, undefined);
}

/** {@link extractKey}, reusing what the last Authorization value in `memo` gave when it comes again. */
export function extractKeyRemembering(req: RequestHeaders, options: ExtractOptions, memo: BearerMemo | undefined): Extraction {
  // `headers` and `rawHeaders` are read once each: on Express requests every property read misses
  // V8's caches (each request object gets a map of its own after Express swaps its prototype).
  const headers = req.headers;
  const rawHeaders = req.rawHeaders;
  const bearer: Part = options.bearer ? fromAuthorization(headers.authorization, rawHeaders, memo) : NONE;
  const header: Part =
    options.header === undefined ? NONE : fromHeader(headers[options.header], rawHeaders, options.header, options.headerLabel);
  if (bearer.kind === "malformed") return bearer;
  if (header.kind === "malformed") return header;
  let key: string;
  let from: readonly KeySource[];
  if (bearer.kind === "key") {
    key = bearer.key;
    from = FROM_AUTHORIZATION;
    if (header.kind === "key") {
      if (key !== header.key) {
        return { kind: "malformed", reason: `Two different API keys were sent (Authorization and ${options.headerLabel}); send one.` };
      }
      from = FROM_BOTH;
    }
  } else if (header.kind === "key") {
    key = header.key;
    from = FROM_HEADER;
  } else {
    return NONE;
  }
  if (key.length > MAX_KEY_LENGTH) return { kind: "oversize", from };
  return { kind: "key", key, from };
}

/**
 * Checks a key returned by a custom `getKey`: undefined, null or "" mean no key; other non-strings
 * are malformed; no syntax is imposed beyond the service's length limit.
 */
export function checkCustomKey(value: unknown): Extraction {
  if (value === undefined || value === null || value === "") return { kind: "none" };
  if (typeof value !== "string") return { kind: "malformed", reason: "The API key is malformed." };
  if (value.length > MAX_KEY_LENGTH) return { kind: "oversize", from: [] };
  return { kind: "key", key: value, from: [] };
}

/** Deletes the named (lower-case) headers from `req.headers` and `req.rawHeaders`. */
export function removeHeaders(req: Pick<IncomingMessage, "headers" | "rawHeaders">, names: readonly string[]): void {
  if (names.length === 0) return;
  for (const name of names) delete req.headers[name];
  const raw = req.rawHeaders;
  if (!Array.isArray(raw)) return;
  const kept: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (!names.includes(raw[i]!.toLowerCase())) kept.push(raw[i]!, raw[i + 1]!);
  }
  raw.splice(0, raw.length, ...kept);
}

/**
 * `OPTIONS` with `Origin` and `Access-Control-Request-Method`, and neither `Authorization` nor the
 * key header (`keyHeader`, lower case). A custom `getKey` is checked by the caller.
 */
export function isPreflight(req: Pick<IncomingMessage, "method" | "headers">, keyHeader: string | undefined): boolean {
  const h = req.headers;
  return (
    req.method === "OPTIONS" &&
    h.origin !== undefined &&
    h["access-control-request-method"] !== undefined &&
    h.authorization === undefined &&
    (keyHeader === undefined || h[keyHeader] === undefined)
  );
}
