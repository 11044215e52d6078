// Records → wire objects. Absent optional fields are omitted (never `null`, except the
// nullable `credits.remaining`).
import type { Identity, KeyInfo, Permission, RatelimitConfig, Role } from "../protocol/types";
import {
  getRecord,
  type IdentityRecord,
  type KeyRecord,
  type PermissionRecord,
  type RatelimitRecord,
  type RoleRecord,
  type Store,
} from "./store";

export function permissionView(p: PermissionRecord): Permission {
  const out: Permission = { id: p.id, name: p.name, slug: p.slug };
  if (p.description !== undefined) out.description = p.description;
  return out;
}

export function roleView(store: Store, r: RoleRecord, withPermissions = true): Role {
  const out: Role = { id: r.id, name: r.name };
  if (r.description !== undefined) out.description = r.description;
  if (withPermissions) {
    const perms = r.permissionIds.flatMap((id) => {
      const p = getRecord(store.state.permissions, id);
      return p ? [permissionView(p)] : [];
    });
    if (perms.length > 0) out.permissions = perms;
  }
  return out;
}

export function ratelimitView(r: RatelimitRecord): RatelimitConfig {
  return { id: r.id, name: r.name, limit: r.limit, duration: r.duration, autoApply: r.autoApply };
}

export function identityView(i: IdentityRecord): Identity {
  const out: Identity = { id: i.id, externalId: i.externalId };
  if (i.meta !== undefined) out.meta = i.meta;
  if (i.ratelimits.length > 0) out.ratelimits = i.ratelimits.map(ratelimitView);
  return out;
}

/** Slugs of the key's direct permissions. */
export function directPermissionSlugs(store: Store, key: KeyRecord): string[] {
  return key.permissionIds.flatMap((id) => {
    const p = getRecord(store.state.permissions, id);
    return p ? [p.slug] : [];
  });
}

/** Slugs of the key's permissions, direct and through its roles, without duplicates. */
export function effectivePermissionSlugs(store: Store, key: KeyRecord): string[] {
  const ids = new Set(key.permissionIds);
  for (const roleId of key.roleIds) {
    for (const id of getRecord(store.state.roles, roleId)?.permissionIds ?? []) ids.add(id);
  }
  return [...ids].flatMap((id) => {
    const p = getRecord(store.state.permissions, id);
    return p ? [p.slug] : [];
  });
}

export function roleNames(store: Store, key: KeyRecord): string[] {
  return key.roleIds.flatMap((id) => {
    const r = getRecord(store.state.roles, id);
    return r ? [r.name] : [];
  });
}

export function keyIdentity(store: Store, key: KeyRecord): IdentityRecord | undefined {
  return key.identityId === undefined ? undefined : getRecord(store.state.identities, key.identityId);
}

/** A key as getKey, whoami and listKeys report it. Never holds the key itself. */
export function keyInfoView(store: Store, key: KeyRecord): KeyInfo {
  const out: KeyInfo = { keyId: key.id, start: key.start, enabled: key.enabled, createdAt: key.createdAt };
  if (key.name !== undefined) out.name = key.name;
  if (key.meta !== undefined) out.meta = key.meta;
  if (key.updatedAt !== undefined) out.updatedAt = key.updatedAt;
  if (key.expires !== undefined) out.expires = key.expires;
  const permissions = effectivePermissionSlugs(store, key);
  if (permissions.length > 0) out.permissions = permissions;
  const roles = roleNames(store, key);
  if (roles.length > 0) out.roles = roles;
  if (key.credits) {
    out.credits = { remaining: key.credits.remaining };
    if (key.credits.refill) out.credits.refill = { ...key.credits.refill };
  }
  const identity = keyIdentity(store, key);
  if (identity) out.identity = identityView(identity);
  if (key.ratelimits.length > 0) out.ratelimits = key.ratelimits.map(ratelimitView);
  return out;
}
