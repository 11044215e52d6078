// Operations keys.{add,remove,set}Permissions and keys.{add,remove,set}Roles: a key's direct
// permissions (missing slugs are created on add/set) and its roles (which must exist).
import type { Permission, Role } from "../../protocol/types";
import { requirePermission } from "./auth";
import { ensurePermissions, requirePermissionRecord, resolveRoles } from "../domain/lookup";
import { defineOperation, type OpContext } from "./operation";
import type { KeyRecord } from "../storage/seam";
import { permissionView, recordsOf, roleView } from "../domain/views";
import { keyForAction } from "./keys";

async function keyFor(ctx: OpContext, keyId: string, rbacAction: string): Promise<KeyRecord> {
  requirePermission(ctx.root, [`rbac.*.${rbacAction}`]);
  return keyForAction(ctx, keyId, "update_key");
}

/** Writes the changed key; answers with its direct permissions. */
async function savePermissions(ctx: OpContext, key: KeyRecord): Promise<{ data: Permission[] }> {
  key.updatedAt = ctx.now;
  await ctx.tx.put("keys", key);
  return { data: (await recordsOf(ctx.tx, "permissions", key.permissionIds)).map(permissionView) };
}

/** Writes the changed key; answers with its roles (without their permissions). */
async function saveRoles(ctx: OpContext, key: KeyRecord): Promise<{ data: Role[] }> {
  key.updatedAt = ctx.now;
  await ctx.tx.put("keys", key);
  const roles = await recordsOf(ctx.tx, "roles", key.roleIds);
  return { data: await Promise.all(roles.map((r) => roleView(ctx.tx, r, false))) };
}

export const addPermissionsOperation = defineOperation("keys.addPermissions", {
  access: "write",
  async run(ctx, body) {
    const key = await keyFor(ctx, body.keyId, "add_permission_to_key");
    const ids = await ensurePermissions(ctx.tx, ctx.root.workspaceId, body.permissions, ctx.now);
    key.permissionIds = [...new Set([...key.permissionIds, ...ids])];
    return savePermissions(ctx, key);
  },
});

export const removePermissionsOperation = defineOperation("keys.removePermissions", {
  access: "write",
  async run(ctx, body) {
    const key = await keyFor(ctx, body.keyId, "remove_permission_from_key");
    const ids: string[] = [];
    for (const ref of body.permissions) ids.push((await requirePermissionRecord(ctx.tx, ctx.root.workspaceId, ref)).id);
    key.permissionIds = key.permissionIds.filter((id) => !ids.includes(id));
    return savePermissions(ctx, key);
  },
});

export const setPermissionsOperation = defineOperation("keys.setPermissions", {
  access: "write",
  async run(ctx, body) {
    const key = await keyFor(ctx, body.keyId, "add_permission_to_key");
    key.permissionIds = await ensurePermissions(ctx.tx, ctx.root.workspaceId, body.permissions, ctx.now);
    return savePermissions(ctx, key);
  },
});

export const addRolesOperation = defineOperation("keys.addRoles", {
  access: "write",
  async run(ctx, body) {
    const key = await keyFor(ctx, body.keyId, "add_role_to_key");
    const ids = await resolveRoles(ctx.tx, ctx.root.workspaceId, body.roles);
    key.roleIds = [...new Set([...key.roleIds, ...ids])];
    return saveRoles(ctx, key);
  },
});

export const removeRolesOperation = defineOperation("keys.removeRoles", {
  access: "write",
  async run(ctx, body) {
    const key = await keyFor(ctx, body.keyId, "remove_role_from_key");
    const ids = await resolveRoles(ctx.tx, ctx.root.workspaceId, body.roles);
    key.roleIds = key.roleIds.filter((id) => !ids.includes(id));
    return saveRoles(ctx, key);
  },
});

export const setRolesOperation = defineOperation("keys.setRoles", {
  access: "write",
  async run(ctx, body) {
    const key = await keyFor(ctx, body.keyId, "add_role_to_key");
    key.roleIds = await resolveRoles(ctx.tx, ctx.root.workspaceId, body.roles);
    return saveRoles(ctx, key);
  },
});
