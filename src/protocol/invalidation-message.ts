// The invalidation bus: the channel and message format by which anything that changes a key
// (apiKeyAuth().invalidate, keyguard's client, the local key service) tells every apiKeyAuth()
// sharing a store to forget what it remembers about that key. Messages never hold a key: a key
// is named by its SHA-256 (`keyHash`, base64) or by its keyId. Hashes nothing itself, so any
// runtime can load it (invalidation.ts adds `invalidateKey` with node:crypto).

import { KEY_HASH_PATTERN } from "./key-hash-web";
import type { OperationName } from "./types";

/** Version of the message format. */
const INVALIDATION_VERSION = 1;

/** The channel is `<prefix>` followed by this, e.g. `keyguard:invalidate` (see {@link redisChannel}). */
export const INVALIDATION_CHANNEL_SUFFIX = "invalidate";

/**
 * A pub/sub channel of `prefix` on Redis database `db`: `<prefix><name>`, and `:<db>` after it on a
 * database other than 0. Redis's publish/subscribe ignores SELECT (a message reaches every
 * subscriber of the channel, whatever its database), so two deployments on databases 1 and 2 of
 * one Redis would share a channel: its name carries the number. Database 0 keeps the name it has
 * always had.
 */
export function redisChannel(prefix: string, name: string, db: number): string {
  return db === 0 ? `${prefix}${name}` : `${prefix}${name}:${db}`;
}

/**
 * One invalidation. JSON on the wire: `{"v":1,"kind":"key","keyHash":"…"}`,
 * `{"v":1,"kind":"keyId","keyId":"key_…"}` or `{"v":1,"kind":"all"}`.
 */
export type InvalidationMessage =
  /** Forget every answer for one key, named by {@link keyHash}. */
  | { readonly v: 1; readonly kind: "key"; readonly keyHash: string }
  /** Forget every answer for the key with this id (its answers carry `keyId`). */
  | { readonly v: 1; readonly kind: "keyId"; readonly keyId: string }
  /** Forget everything (e.g. a permission or role was deleted: any key may have changed). */
  | { readonly v: 1; readonly kind: "all" };

/** Something that delivers invalidation messages to a fleet (e.g. `redisStore()`, `memoryStore()`). */
export interface InvalidationPublisher {
  /** Applies the message here and sends it on; resolves once sent; never rejects (it logs failures). */
  invalidate(message: InvalidationMessage): Promise<void>;
}

const KEY_ID = /^[\x21-\x7e]{1,256}$/;
const OLDER_KEY_HASH = /^[A-Za-z0-9_-]{43}$/;

/** Forget a key named by its hash (`keyHash(key)`, or `webKeyHash(key)` where node:crypto is missing). */
export const invalidateKeyHash = (hash: string): InvalidationMessage => ({ v: 1, kind: "key", keyHash: hash });
export const invalidateKeyId = (keyId: string): InvalidationMessage => ({ v: 1, kind: "keyId", keyId });
export const invalidateAll = (): InvalidationMessage => ({ v: 1, kind: "all" });

export function encodeInvalidation(message: InvalidationMessage): string {
  return JSON.stringify(message);
}

/** Reads a message from the wire; undefined for anything that is not a valid message. */
export function parseInvalidation(text: string): InvalidationMessage | undefined {
  let m: unknown;
  try {
    m = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof m !== "object" || m === null || (m as { v?: unknown }).v !== INVALIDATION_VERSION) return undefined;
  const { kind, keyHash: hash, keyId } = m as { kind?: unknown; keyHash?: unknown; keyId?: unknown };
  if (kind === "all") return invalidateAll();
  if (kind === "key" && typeof hash === "string") {
    if (KEY_HASH_PATTERN.test(hash)) return { v: 1, kind: "key", keyHash: hash };
    // keyguard 0.1 named keys by base64url (43 characters, no padding): read as the same hash, so
    // a fleet that is being upgraded still hears the older instances' revocations.
    if (OLDER_KEY_HASH.test(hash)) return { v: 1, kind: "key", keyHash: `${hash.replace(/-/g, "+").replace(/_/g, "/")}=` };
  }
  if (kind === "keyId" && typeof keyId === "string" && KEY_ID.test(keyId)) return invalidateKeyId(keyId);
  return undefined;
}

// Operations after which remembered verification answers may be wrong: those of one key (named by
// the request's keyId), or any (a permission, role, API or identity changed under many keys).
const CHANGES_KEY: ReadonlySet<string> = new Set<string>([
  // keyguard's own: what a portal session's end user does to their key.
  "portal.setKeyEnabled",
  "portal.deleteKey",
  ...([
    "portal.rerollKey",
    "keys.deleteKey",
    "keys.updateKey",
    "keys.updateCredits",
    "keys.rerollKey",
    "keys.addPermissions",
    "keys.removePermissions",
    "keys.setPermissions",
    "keys.addRoles",
    "keys.removeRoles",
    "keys.setRoles",
  ] satisfies OperationName[]),
]);
const CHANGES_ALL: ReadonlySet<string> = new Set<OperationName>([
  "permissions.deletePermission",
  "permissions.deleteRole",
  "permissions.setRolePermissions",
  "apis.deleteApi",
  "identities.updateIdentity",
  "identities.deleteIdentity",
]);

/**
 * The invalidation to announce once `operation` succeeded with this request body, if any: what
 * keyguard's client and the local key service publish after a change.
 */
export function invalidationAfter(operation: string, body: unknown): InvalidationMessage | undefined {
  if (CHANGES_ALL.has(operation)) return invalidateAll();
  // keyguard's apis.updateApi: its IP allow-list decides verifications of all the API's keys.
  if (operation === "apis.updateApi")
    return (body as { ipWhitelist?: unknown } | null)?.ipWhitelist === undefined ? undefined : invalidateAll();
  if (!CHANGES_KEY.has(operation)) return undefined;
  const keyId = (body as { keyId?: unknown } | null)?.keyId;
  return typeof keyId === "string" && keyId !== "" ? invalidateKeyId(keyId) : invalidateAll();
}
