// Operations keys.{add,remove,set}Permissions and keys.{add,remove,set}Roles: a key's direct
// permissions (missing slugs are created on add/set) and its roles (which must exist).
import type { Permission, Role } from "../../protocol/types";
import { requirePermission } from "../auth";
import { ensurePermissions, requirePermissionRecord, resolveRoles } from "../lookup";
import { defineOperation, type OpContext } from "../operation";
import * as s from "../schemas";
import { getRecord, type KeyRecord } from "../store";
import { arr, obj, str } from "../validate";
import { permissionView, roleView } from "../views";
import { keyForAction } from "./keys";

const permissionsBody = () => obj({ keyId: s.id(), permissions: arr(s.slug(), { min: 1, max: 1000 }) }, ["keyId", "permissions"]);
const rolesBody = () => obj({ keyId: s.id(), roles: arr(str({ max: 255 }), { min: 1, max: 100 }) }, ["keyId", "roles"]);

function keyFor(ctx: OpContext, keyId: string, rbacAction: string): KeyRecord {
  requirePermission(ctx.root, [`rbac.*.${rbacAction}`]);
  return keyForAction(ctx, keyId, "update_key");
}

function permissionsOf(ctx: OpContext, key: KeyRecord): Permission[] {
  return key.permissionIds.flatMap((id) => {
    const p = getRecord(ctx.store.state.permissions, id);
    return p ? [permissionView(p)] : [];
  });
}

function rolesOf(ctx: OpContext, key: KeyRecord): Role[] {
  return key.roleIds.flatMap((id) => {
    const r = getRecord(ctx.store.state.roles, id);
    return r ? [roleView(ctx.store, r, false)] : [];
  });
}

function changed(ctx: OpContext, key: KeyRecord): void {
  key.updatedAt = ctx.now;
  ctx.store.touch();
}

export const addPermissionsOperation = defineOperation("keys.addPermissions", {
  schema: permissionsBody(),
  run(ctx, body) {
    const key = keyFor(ctx, body.keyId, "add_permission_to_key");
    const ids = ensurePermissions(ctx.store, ctx.root.workspaceId, body.permissions, ctx.now);
    key.permissionIds = [...new Set([...key.permissionIds, ...ids])];
    changed(ctx, key);
    return { data: permissionsOf(ctx, key) };
  },
});

export const removePermissionsOperation = defineOperation("keys.removePermissions", {
  schema: permissionsBody(),
  run(ctx, body) {
    const key = keyFor(ctx, body.keyId, "remove_permission_from_key");
    const ids = body.permissions.map((ref) => requirePermissionRecord(ctx.store, ctx.root.workspaceId, ref).id);
    key.permissionIds = key.permissionIds.filter((id) => !ids.includes(id));
    changed(ctx, key);
    return { data: permissionsOf(ctx, key) };
  },
});

export const setPermissionsOperation = defineOperation("keys.setPermissions", {
  schema: obj({ keyId: s.id(), permissions: arr(s.slug(), { max: 1000 }) }, ["keyId", "permissions"]),
  run(ctx, body) {
    const key = keyFor(ctx, body.keyId, "add_permission_to_key");
    key.permissionIds = ensurePermissions(ctx.store, ctx.root.workspaceId, body.permissions, ctx.now);
    changed(ctx, key);
    return { data: permissionsOf(ctx, key) };
  },
});

export const addRolesOperation = defineOperation("keys.addRoles", {
  schema: rolesBody(),
  run(ctx, body) {
    const key = keyFor(ctx, body.keyId, "add_role_to_key");
    const ids = resolveRoles(ctx.store, ctx.root.workspaceId, body.roles);
    key.roleIds = [...new Set([...key.roleIds, ...ids])];
    changed(ctx, key);
    return { data: rolesOf(ctx, key) };
  },
});

export const removeRolesOperation = defineOperation("keys.removeRoles", {
  schema: rolesBody(),
  run(ctx, body) {
    const key = keyFor(ctx, body.keyId, "remove_role_from_key");
    const ids = resolveRoles(ctx.store, ctx.root.workspaceId, body.roles);
    key.roleIds = key.roleIds.filter((id) => !ids.includes(id));
    changed(ctx, key);
    return { data: rolesOf(ctx, key) };
  },
});

export const setRolesOperation = defineOperation("keys.setRoles", {
  schema: obj({ keyId: s.id(), roles: arr(str({ max: 255 }), { max: 100 }) }, ["keyId", "roles"]),
  run(ctx, body) {
    const key = keyFor(ctx, body.keyId, "add_role_to_key");
    key.roleIds = resolveRoles(ctx.store, ctx.root.workspaceId, body.roles);
    changed(ctx, key);
    return { data: rolesOf(ctx, key) };
  },
});
