// Finding and creating records within one workspace. Anything of another workspace is
// reported exactly like a missing record (404 of the matching kind).
import { ServiceError } from "./envelope";
import { newId } from "./ids";
import {
  getRecord,
  type ApiRecord,
  type IdentityRecord,
  type KeyRecord,
  type PermissionRecord,
  type RatelimitRecord,
  type RoleRecord,
  type Store,
} from "./store";

export function findApi(store: Store, workspaceId: string, apiId: string): ApiRecord | undefined {
  const api = getRecord(store.state.apis, apiId);
  return api && api.workspaceId === workspaceId ? api : undefined;
}

export function apiNotFound(apiId: string): ServiceError {
  return new ServiceError("data.api_not_found", `The API ${JSON.stringify(apiId)} does not exist or has been deleted.`);
}

export function findKey(store: Store, workspaceId: string, keyId: string): KeyRecord {
  const key = getRecord(store.state.keys, keyId);
  if (!key || key.workspaceId !== workspaceId) throw keyNotFound(keyId);
  return key;
}

export function keyNotFound(keyId: string): ServiceError {
  return new ServiceError("data.key_not_found", `The key ${JSON.stringify(keyId)} does not exist or has been deleted.`);
}

/** A permission by id or slug. */
export function findPermission(store: Store, workspaceId: string, ref: string): PermissionRecord | undefined {
  const byId = getRecord(store.state.permissions, ref);
  if (byId && byId.workspaceId === workspaceId) return byId;
  return Object.values(store.state.permissions).find((p) => p.workspaceId === workspaceId && p.slug === ref);
}

export function requirePermissionRecord(store: Store, workspaceId: string, ref: string): PermissionRecord {
  const found = findPermission(store, workspaceId, ref);
  if (!found) {
    throw new ServiceError(
      "data.permission_not_found",
      `The permission ${JSON.stringify(ref)} does not exist in this workspace. List permissions to find its id or slug, or create it.`,
    );
  }
  return found;
}

/** Permission ids for slugs (or ids); missing slugs are created with name = slug. */
export function ensurePermissions(store: Store, workspaceId: string, refs: readonly string[], now: number): string[] {
  const ids: string[] = [];
  for (const ref of refs) {
    let perm = findPermission(store, workspaceId, ref);
    if (!perm) {
      perm = { id: newId("perm"), workspaceId, name: ref, slug: ref, createdAt: now };
      store.state.permissions[perm.id] = perm;
      store.touch();
    }
    if (!ids.includes(perm.id)) ids.push(perm.id);
  }
  return ids;
}

/** A role by id or name. */
export function findRole(store: Store, workspaceId: string, ref: string): RoleRecord | undefined {
  const byId = getRecord(store.state.roles, ref);
  if (byId && byId.workspaceId === workspaceId) return byId;
  return Object.values(store.state.roles).find((r) => r.workspaceId === workspaceId && r.name === ref);
}

export function requireRole(store: Store, workspaceId: string, ref: string): RoleRecord {
  const found = findRole(store, workspaceId, ref);
  if (!found) {
    throw new ServiceError("data.role_not_found", `The role ${JSON.stringify(ref)} does not exist in this workspace. Create it first.`);
  }
  return found;
}

/** Role ids for names (or ids); every role must exist. */
export function resolveRoles(store: Store, workspaceId: string, refs: readonly string[]): string[] {
  const ids: string[] = [];
  for (const ref of refs) {
    const role = requireRole(store, workspaceId, ref);
    if (!ids.includes(role.id)) ids.push(role.id);
  }
  return ids;
}

/** An identity by id or externalId. */
export function findIdentity(store: Store, workspaceId: string, ref: string): IdentityRecord | undefined {
  const byId = getRecord(store.state.identities, ref);
  if (byId && byId.workspaceId === workspaceId) return byId;
  return Object.values(store.state.identities).find((i) => i.workspaceId === workspaceId && i.externalId === ref);
}

export function requireIdentity(store: Store, workspaceId: string, ref: string): IdentityRecord {
  const found = findIdentity(store, workspaceId, ref);
  if (!found) {
    throw new ServiceError("data.identity_not_found", `The identity ${JSON.stringify(ref)} does not exist in this workspace.`);
  }
  return found;
}

/** The identity with this externalId, created when missing. */
export function upsertIdentity(store: Store, workspaceId: string, externalId: string, now: number): IdentityRecord {
  const existing = Object.values(store.state.identities).find(
    (i) => i.workspaceId === workspaceId && i.externalId === externalId,
  );
  if (existing) return existing;
  const identity: IdentityRecord = { id: newId("id"), workspaceId, externalId, ratelimits: [], createdAt: now };
  store.state.identities[identity.id] = identity;
  store.touch();
  return identity;
}

/** Rate-limit records for a request list, keeping the id (and so the counters) of names that stay. */
export function toRatelimitRecords(
  input: ReadonlyArray<{ name: string; limit: number; duration: number; autoApply?: boolean }>,
  previous: readonly RatelimitRecord[] = [],
): RatelimitRecord[] {
  return input.map((r) => ({
    id: previous.find((p) => p.name === r.name)?.id ?? newId("rl"),
    name: r.name,
    limit: r.limit,
    duration: r.duration,
    autoApply: r.autoApply ?? false,
  }));
}
