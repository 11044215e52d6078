// Finding and creating records within one workspace. Anything of another workspace is
// reported exactly like a missing record (404 of the matching kind).
import { ServiceError } from "../errors";
import { newId } from "../domain/ids";
import type { StorageTx } from "../storage/seam";
import type { ApiRecord, IdentityRecord, KeyRecord, PermissionRecord, RatelimitRecord, RoleRecord, TableName, Tables } from "../records";
import { described } from "../domain/caller-value";
import { keyInfoView, roleView, type KeyRelations } from "../domain/views";
import type { KeyInfo, Role } from "../../protocol/types";

/** A record by id, only when it belongs to the workspace. */
async function inWorkspace<T extends Exclude<TableName, "workspaces">>(
  tx: StorageTx,
  table: T,
  workspaceId: string,
  id: string,
): Promise<Tables[T] | undefined> {
  const record = await tx.get(table, id);
  return record && (record as { workspaceId: string }).workspaceId === workspaceId ? record : undefined;
}

export function findApi(tx: StorageTx, workspaceId: string, apiId: string): Promise<ApiRecord | undefined> {
  return inWorkspace(tx, "apis", workspaceId, apiId);
}

/** 404 for the API named by `body.apiId`. */
export function apiNotFound(apiId: string): ServiceError {
  return new ServiceError(
    "data.api_not_found",
    `The requested API, ${described("body.apiId", apiId)}, does not exist or has been deleted.`,
  );
}

export async function findKey(tx: StorageTx, workspaceId: string, keyId: string): Promise<KeyRecord> {
  const key = await inWorkspace(tx, "keys", workspaceId, keyId);
  if (!key) throw keyNotFound(keyId);
  return key;
}

function keyNotFound(keyId: string): ServiceError {
  return new ServiceError("data.key_not_found", `The key, ${described("body.keyId", keyId)}, does not exist or has been deleted.`);
}

/** A permission by id or slug. */
export async function findPermission(tx: StorageTx, workspaceId: string, ref: string): Promise<PermissionRecord | undefined> {
  return (await inWorkspace(tx, "permissions", workspaceId, ref)) ?? (await tx.find("permissions", workspaceId, "slug", ref))[0];
}

/** The permission `ref` (sent at `location`) names: 404 without one. */
export async function requirePermissionRecord(
  tx: StorageTx,
  workspaceId: string,
  ref: string,
  location: string,
): Promise<PermissionRecord> {
  const found = await findPermission(tx, workspaceId, ref);
  if (!found) {
    throw new ServiceError(
      "data.permission_not_found",
      `The permission named by ${described(location, ref)} does not exist in this workspace. List permissions to find its id or slug, or create it.`,
    );
  }
  return found;
}

/** Permission ids for slugs (or ids); missing slugs are created with name = slug. */
export async function ensurePermissions(tx: StorageTx, workspaceId: string, refs: readonly string[], now: number): Promise<string[]> {
  const ids: string[] = [];
  for (const ref of refs) {
    let perm = await findPermission(tx, workspaceId, ref);
    if (!perm) {
      perm = { id: newId("perm"), workspaceId, name: ref, slug: ref, createdAt: now };
      await tx.put("permissions", perm);
    }
    if (!ids.includes(perm.id)) ids.push(perm.id);
  }
  return ids;
}

/** A role by id or name. */
export async function findRole(tx: StorageTx, workspaceId: string, ref: string): Promise<RoleRecord | undefined> {
  return (await inWorkspace(tx, "roles", workspaceId, ref)) ?? (await tx.find("roles", workspaceId, "name", ref))[0];
}

/** The role `ref` (sent at `location`) names: 404 without one. */
export async function requireRole(tx: StorageTx, workspaceId: string, ref: string, location: string): Promise<RoleRecord> {
  const found = await findRole(tx, workspaceId, ref);
  if (!found) {
    throw new ServiceError(
      "data.role_not_found",
      `The role named by ${described(location, ref)} does not exist in this workspace. Create it first.`,
    );
  }
  return found;
}

/** Role ids for names (or ids) sent at `location` (`body.roles`); every role must exist. */
export async function resolveRoles(
  tx: StorageTx,
  workspaceId: string,
  refs: readonly string[],
  location = "body.roles",
): Promise<string[]> {
  const ids: string[] = [];
  for (const [i, ref] of refs.entries()) {
    const role = await requireRole(tx, workspaceId, ref, `${location}[${i}]`);
    if (!ids.includes(role.id)) ids.push(role.id);
  }
  return ids;
}

/** An identity by id or externalId. */
async function findIdentity(tx: StorageTx, workspaceId: string, ref: string): Promise<IdentityRecord | undefined> {
  return (await inWorkspace(tx, "identities", workspaceId, ref)) ?? (await tx.find("identities", workspaceId, "externalId", ref))[0];
}

export async function requireIdentity(tx: StorageTx, workspaceId: string, ref: string): Promise<IdentityRecord> {
  const found = await findIdentity(tx, workspaceId, ref);
  if (!found) {
    throw new ServiceError(
      "data.identity_not_found",
      `The identity named by ${described("body.identity", ref)} does not exist in this workspace.`,
    );
  }
  return found;
}

/** The identity with this externalId, created when missing. */
export async function upsertIdentity(tx: StorageTx, workspaceId: string, externalId: string, now: number): Promise<IdentityRecord> {
  const existing = (await tx.find("identities", workspaceId, "externalId", externalId))[0];
  if (existing) return existing;
  const identity: IdentityRecord = { id: newId("id"), workspaceId, externalId, ratelimits: [], createdAt: now };
  await tx.put("identities", identity);
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

/** The records of these ids that exist, in order. */
export async function recordsOf<T extends TableName>(tx: StorageTx, table: T, ids: readonly string[]): Promise<Array<Tables[T]>> {
  const found = await Promise.all(ids.map((id) => tx.get(table, id)));
  return found.filter((r): r is Awaited<Tables[T]> => r !== undefined);
}

/** A role as answered; with its permissions unless `withPermissions` is false. */
export async function readRole(tx: StorageTx, r: RoleRecord, withPermissions = true): Promise<Role> {
  return roleView(r, withPermissions ? await recordsOf(tx, "permissions", r.permissionIds) : undefined);
}

/** A key's permissions (direct and through its roles), roles and identity, read from the store. */
export async function keyRelations(tx: StorageTx, key: KeyRecord): Promise<KeyRelations> {
  // A key without roles or permissions (most keys): only its identity, when it has one, is read.
  if (key.roleIds.length === 0 && key.permissionIds.length === 0) {
    const identity = key.identityId === undefined ? undefined : await tx.get("identities", key.identityId);
    return { permissions: [], roles: [], identity };
  }
  const [roles, identity] = await Promise.all([
    recordsOf(tx, "roles", key.roleIds),
    key.identityId === undefined ? undefined : tx.get("identities", key.identityId),
  ]);
  const ids = new Set(key.permissionIds);
  for (const role of roles) for (const id of role.permissionIds) ids.add(id);
  const permissions = (await recordsOf(tx, "permissions", [...ids])).map((p) => p.slug);
  return { permissions, roles: roles.map((r) => r.name), identity };
}

/**
 * A key as getKey, whoami and listKeys report it at `now`. `lastUsed`: the last uses of a page of
 * keys read at once; else this key's is read.
 */
export async function readKeyInfo(tx: StorageTx, key: KeyRecord, now: number, lastUsed?: ReadonlyMap<string, number>): Promise<KeyInfo> {
  const [rel, used] = await Promise.all([keyRelations(tx, key), lastUsed ?? tx.lastUsed([key.id])]);
  return keyInfoView(key, rel, now, used.get(key.id));
}
