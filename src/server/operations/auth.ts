// Root-key authentication (the Bearer header, the hashed lookup) and the checks of permission
// tuples (`resource.<id|*>.action`, matched literally as strings) that ./authorization builds on.
import { ServiceError } from "../errors";
import { keyHash } from "../../protocol/key-hash";
import type { StorageTx } from "../storage/seam";
import { allowsAddress } from "../domain/ip-allowlist";

/** Shape of a permission tuple: `resource.<id|*>.action`. */
export const PERMISSION_TUPLE = /^[a-z_]+\.[A-Za-z0-9_*-]+\.[a-z_]+$/;

/** A portal session's end user, when the caller is one (./portal-auth): who they are, what they may do. */
export interface PortalPrincipal {
  sessionId: string;
  portalId: string;
  /** The end user: only keys whose identity has this externalId are theirs. */
  externalId: string;
  scopes: readonly string[];
  /** The portal's APIs when the session was made. */
  apiIds: readonly string[];
  preview: boolean;
  returnUrl?: string;
  /** When the access token (or, before the exchange, the code) expires, Unix ms. */
  expiresAt: number;
}

/**
 * Who makes a request: a root key, or (`portal` set) a portal session's end user, whose id in
 * `rootKeyId` is the session's (the audit log's actor) and who holds no root-key permission.
 */
export interface RootContext {
  rootKeyId: string;
  workspaceId: string;
  permissions: ReadonlySet<string>;
  /** The root key's name, when it has one (for the audit log). */
  name?: string;
  /** The root key's own expiry (Unix ms), when it has one: no root key it makes or changes outlives it. */
  expires?: number;
  /** The root key's own IP allow-list, when it has one: no root key it makes or changes reaches past it. */
  ipWhitelist?: readonly string[];
  /** Set when the caller is a portal session, not a root key. */
  portal?: PortalPrincipal;
}

/** Exactly what production requires before the root key: this prefix, case and single space included. */
const BEARER = "Bearer ";

/** Where and when a request is made: what a root key's expiry and allow-list are checked against. */
export interface RequestOrigin {
  /** Unix ms (the service clock). */
  now: number;
  /** The caller's address (client-ip.ts: the socket's, or the last X-Forwarded-For entry with trustProxy). */
  ip: string;
}

/**
 * Reads `Authorization: Bearer <root key>` and finds the root key (by hash). As production: no
 * header → 400 `invalid_input`; anything not starting with exactly `Bearer ` (after trimming), an
 * empty token included → 400 `authentication.malformed`; an unknown key → 401. keyguard's own: a
 * root key past its `expires`, or used from an address its `ipWhitelist` does not hold, is
 * refused as an unknown one (401 `authentication.key_not_found`), with a detail of its own.
 */
export async function authenticate(tx: StorageTx, header: string | undefined, origin: RequestOrigin): Promise<RootContext> {
  if (header === undefined) {
    throw new ServiceError("application.invalid_input", "Authorization header for 'bearer' scheme", {
      errors: [
        { location: "security", message: "Authorization header was not found", fix: "Add an 'Authorization' header to this request" },
      ],
    });
  }
  const value = header.trim();
  const token = value.startsWith(BEARER) ? value.slice(BEARER.length).trim() : "";
  if (token === "") {
    throw new ServiceError(
      "authentication.malformed",
      "You must provide a valid root key in the Authorization header in the format 'Bearer ROOT_KEY'. Your authorization header is missing the 'Bearer ' prefix.",
    );
  }
  const kept = rootKeyHashes.get(token);
  const hash = kept ?? keyHash(token);
  const record = await tx.rootKeyByHash(hash);
  if (!record) {
    throw new ServiceError("authentication.key_not_found", "The provided root key is invalid. We could not find the requested key.");
  }
  if (kept === undefined) keepRootKeyHash(token, hash);
  if (record.expires !== undefined && record.expires <= origin.now) {
    throw new ServiceError("authentication.key_not_found", "The provided root key has expired. Use another root key.");
  }
  if (record.ipWhitelist !== undefined && record.ipWhitelist.length > 0 && !allowsAddress(record.ipWhitelist, origin.ip)) {
    throw new ServiceError(
      "authentication.key_not_found",
      "The provided root key is not accepted from this address: its IP allow-list does not hold it.",
    );
  }
  const root: RootContext = {
    rootKeyId: record.id,
    workspaceId: record.workspaceId,
    permissions: permissionSet(record.id, record.permissions),
  };
  if (record.name !== undefined) root.name = record.name;
  if (record.expires !== undefined) root.expires = record.expires;
  if (record.ipWhitelist !== undefined && record.ipWhitelist.length > 0) root.ipWhitelist = record.ipWhitelist;
  return root;
}

/** The hashes of root keys found lately, by the key (at most ROOT_KEY_HASHES of them). */
const rootKeyHashes = new Map<string, string>();
const ROOT_KEY_HASHES = 64;

/**
 * Keeps a root key's hash once the key was found: a service hears the same few root keys on every
 * request (one per app verifying keys), and a SHA-256 costs a verification a few µs. Safety: a root
 * key is kept only in this process's memory, next to its hash, until ROOT_KEY_HASHES others were
 * found after it; never written anywhere, and it only ever answers for the same key, compared in
 * full. Keys that match no root key are not kept, so that guesses cannot push the real ones out.
 */
function keepRootKeyHash(token: string, hash: string): void {
  if (rootKeyHashes.size >= ROOT_KEY_HASHES) rootKeyHashes.delete(rootKeyHashes.keys().next().value!);
  rootKeyHashes.set(token, hash);
}

/** The permission sets of the root keys seen last, by root key id (at most PERMISSION_SETS of them). */
const permissionSets = new Map<string, { list: readonly string[]; set: ReadonlySet<string> }>();
const PERMISSION_SETS = 1000;

/**
 * The root key's permissions as a set: the one built for its previous request when they are the
 * same tuples in the same order (a root key's permissions rarely change; a set of 42 costs more
 * than the comparison), else a new one.
 */
function permissionSet(rootKeyId: string, list: readonly string[]): ReadonlySet<string> {
  const seen = permissionSets.get(rootKeyId);
  if (seen && sameTuples(seen.list, list)) return seen.set;
  const set: ReadonlySet<string> = new Set(list);
  if (!seen && permissionSets.size >= PERMISSION_SETS) permissionSets.clear();
  permissionSets.set(rootKeyId, { list: [...list], set });
  return set;
}

function sameTuples(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The 403 naming the tuples: ones built from a caller's id carry a placeholder (`api.<apiId>.read_key`), never the id sent. */
function forbidden(anyOf: readonly string[]): ServiceError {
  return new ServiceError("authorization.insufficient_permissions", `Missing one of these permissions: ${anyOf.join(" or ")}`);
}

/** Errors that answer a refusal for permissions as "not found", as production masks some. */
const MASKED_REFUSALS = new WeakSet<ServiceError>();

/** `err` (a 404), marked as a refusal for permissions: the audit log records it as one. */
export function maskedRefusal(err: ServiceError): ServiceError {
  MASKED_REFUSALS.add(err);
  return err;
}

/** Whether `err` refused a request for its root key's permissions (a 403, or a 404 that masks one). */
export function isRefusal(err: unknown): err is ServiceError {
  return err instanceof ServiceError && (err.kind === "authorization.insufficient_permissions" || MASKED_REFUSALS.has(err));
}

/** Throws 403 unless the root key holds this one tuple (production's single-permission detail). */
export function requireTuple(root: RootContext, tuple: string): void {
  if (!root.permissions.has(tuple)) {
    throw new ServiceError("authorization.insufficient_permissions", `Missing permission: '${tuple}'`);
  }
}

/** Throws 403 unless the root key holds `anyOf` one tuple, or else `allOf` of these. */
export function requireAnyOrAll(root: RootContext, any: string, allOf: readonly string[]): void {
  if (root.permissions.has(any) || allOf.every((p) => root.permissions.has(p))) return;
  throw new ServiceError("authorization.insufficient_permissions", `Missing one of these permissions: ${any} or ${allOf.join(" and ")}`);
}

/** Throws 403 unless the root key holds one of the tuples (named in the 403 as `shownAs` says). */
export function requirePermission(root: RootContext, anyOf: readonly string[], shownAs: readonly string[] = anyOf): void {
  if (!anyOf.some((p) => root.permissions.has(p))) throw forbidden(shownAs);
}

/** Whether the root key may do `action` on this API (`api.*.action` or `api.<apiId>.action`). */
export function canOnApi(root: RootContext, action: string, apiId: string): boolean {
  return root.permissions.has(onEveryApi(action)) || root.permissions.has(`api.${apiId}.${action}`);
}

/** `api.*.<action>`, built once per action (the check runs on every verification). */
const EVERY_API = new Map<string, string>();
function onEveryApi(action: string): string {
  let tuple = EVERY_API.get(action);
  if (tuple === undefined) EVERY_API.set(action, (tuple = `api.*.${action}`));
  return tuple;
}

/**
 * Throws 403 unless the root key may do `action` on this API (`api.*.action` or `api.<apiId>.action`).
 * `sent`: the id came from the request, not from a record the service found; the 403 then names
 * the tuple as `api.<apiId>.action`, never repeating the caller's value.
 */
export function requireOnApi(root: RootContext, action: string, apiId: string, sent = false): void {
  const tuples = [`api.*.${action}`, `api.${apiId}.${action}`];
  requirePermission(root, tuples, sent ? [tuples[0]!, `api.<apiId>.${action}`] : tuples);
}
