// Root-key authentication and authorization: the Bearer header, the hashed lookup, and
// permission tuples (`resource.<id|*>.action`, matched literally as strings).
import { ServiceError } from "./envelope";
import { hashKey } from "./key-material";
import type { StoreTx } from "./storage";

/** Every permission tuple the local service checks; a bootstrap root key holds all of them. */
export const ALL_ROOT_PERMISSIONS: readonly string[] = Object.freeze([
  "api.*.create_api",
  "api.*.read_api",
  "api.*.delete_api",
  "api.*.create_key",
  "api.*.read_key",
  "api.*.update_key",
  "api.*.delete_key",
  "api.*.verify_key",
  "rbac.*.create_permission",
  "rbac.*.read_permission",
  "rbac.*.delete_permission",
  "rbac.*.create_role",
  "rbac.*.read_role",
  "rbac.*.delete_role",
  "rbac.*.add_permission_to_key",
  "rbac.*.remove_permission_from_key",
  "rbac.*.add_role_to_key",
  "rbac.*.remove_role_from_key",
  "identity.*.create_identity",
  "identity.*.read_identity",
  "identity.*.update_identity",
  "identity.*.delete_identity",
  "ratelimit.*.limit",
]);

/** Shape of a permission tuple: `resource.<id|*>.action`. */
export const PERMISSION_TUPLE = /^[a-z_]+\.[A-Za-z0-9_*-]+\.[a-z_]+$/;

export interface RootContext {
  rootKeyId: string;
  workspaceId: string;
  permissions: ReadonlySet<string>;
}

/** Reads `Authorization: Bearer <root key>` and finds the root key (by hash). */
export async function authenticate(tx: StoreTx, header: string | undefined): Promise<RootContext> {
  if (header === undefined || header.trim() === "") {
    throw new ServiceError(
      "authentication.missing",
      "Authentication is required. Send your root key in the Authorization header as `Bearer <ROOT_KEY>`.",
    );
  }
  const match = /^bearer\s+(\S+)\s*$/i.exec(header.trim());
  if (!match) {
    throw new ServiceError(
      "authentication.malformed",
      "The Authorization header is malformed. Use the form `Bearer <ROOT_KEY>`.",
    );
  }
  const record = await tx.rootKeyByHash(hashKey(match[1]!));
  if (!record) {
    throw new ServiceError("authentication.key_not_found", "The provided root key was not found.");
  }
  return { rootKeyId: record.id, workspaceId: record.workspaceId, permissions: new Set(record.permissions) };
}

function forbidden(anyOf: readonly string[]): ServiceError {
  return new ServiceError(
    "authorization.insufficient_permissions",
    `Missing one of these permissions: ${anyOf.join(" or ")}`,
  );
}

/** Throws 403 unless the root key holds one of the tuples. */
export function requirePermission(root: RootContext, anyOf: readonly string[]): void {
  if (!anyOf.some((p) => root.permissions.has(p))) throw forbidden(anyOf);
}

/** Whether the root key may do `action` on this API (`api.*.action` or `api.<apiId>.action`). */
export function canOnApi(root: RootContext, action: string, apiId: string): boolean {
  return root.permissions.has(`api.*.${action}`) || root.permissions.has(`api.${apiId}.${action}`);
}

/**
 * Throws 403 when the root key holds no grant at all for an API action (neither `api.*.action`
 * nor `api.<any id>.action`). A grant for other APIs only passes here; the handler then answers
 * as "not found" for the API it cannot see.
 */
export function requireSomeApiGrant(root: RootContext, action: string, apiId?: string): void {
  for (const p of root.permissions) {
    if (p.startsWith("api.") && p.endsWith(`.${action}`)) return;
  }
  throw forbidden([`api.*.${action}`, `api.${apiId ?? "<apiId>"}.${action}`]);
}
