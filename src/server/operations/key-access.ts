// Operations keys.{add,remove,set}Permissions and keys.{add,remove,set}Roles: a key's direct
// permissions (missing slugs are created on add/set) and its roles (which must exist).
import type { Permission, Role } from "../../protocol/types";
import { both, onKey, permission } from "./authorization";
import { ensurePermissions, requirePermissionRecord, resolveRoles, readRole, recordsOf } from "./lookup";
import { defineOperation, type OpContext } from "./operation";
import type { KeyRecord } from "../records";
import { permissionView } from "../domain/views";

/** As production: 403 without `rbac.*.<rbacAction>`, then the key (404), then 403 without update_key on its API. */
const keyWith = (rbacAction: string) =>
  both(
    permission(`rbac.*.${rbacAction}`),
    onKey("update_key", (body: { keyId: string }) => body.keyId),
  );

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
  return { data: await Promise.all(roles.map((r) => readRole(ctx.tx, r, false))) };
}

export const addPermissionsOperation = defineOperation("keys.addPermissions", {
  access: "write",
  authorize: keyWith("add_permission_to_key"),
  audit: (body) => ({ targets: [body.keyId] }),
  async run(ctx, body) {
    const key = ctx.resource;
    const ids = await ensurePermissions(ctx.tx, ctx.root.workspaceId, body.permissions, ctx.now);
    key.permissionIds = [...new Set([...key.permissionIds, ...ids])];
    return savePermissions(ctx, key);
  },
});

export const removePermissionsOperation = defineOperation("keys.removePermissions", {
  access: "write",
  authorize: keyWith("remove_permission_from_key"),
  audit: (body) => ({ targets: [body.keyId] }),
  async run(ctx, body) {
    const key = ctx.resource;
    const ids: string[] = [];
    for (const [i, ref] of body.permissions.entries()) {
      ids.push((await requirePermissionRecord(ctx.tx, ctx.root.workspaceId, ref, `body.permissions[${i}]`)).id);
    }
    key.permissionIds = key.permissionIds.filter((id) => !ids.includes(id));
    return savePermissions(ctx, key);
  },
});

export const setPermissionsOperation = defineOperation("keys.setPermissions", {
  access: "write",
  authorize: keyWith("add_permission_to_key"),
  audit: (body) => ({ targets: [body.keyId] }),
  async run(ctx, body) {
    const key = ctx.resource;
    key.permissionIds = await ensurePermissions(ctx.tx, ctx.root.workspaceId, body.permissions, ctx.now);
    return savePermissions(ctx, key);
  },
});

export const addRolesOperation = defineOperation("keys.addRoles", {
  access: "write",
  authorize: keyWith("add_role_to_key"),
  audit: (body) => ({ targets: [body.keyId] }),
  async run(ctx, body) {
    const key = ctx.resource;
    const ids = await resolveRoles(ctx.tx, ctx.root.workspaceId, body.roles);
    key.roleIds = [...new Set([...key.roleIds, ...ids])];
    return saveRoles(ctx, key);
  },
});

export const removeRolesOperation = defineOperation("keys.removeRoles", {
  access: "write",
  authorize: keyWith("remove_role_from_key"),
  audit: (body) => ({ targets: [body.keyId] }),
  async run(ctx, body) {
    const key = ctx.resource;
    const ids = await resolveRoles(ctx.tx, ctx.root.workspaceId, body.roles);
    key.roleIds = key.roleIds.filter((id) => !ids.includes(id));
    return saveRoles(ctx, key);
  },
});

export const setRolesOperation = defineOperation("keys.setRoles", {
  access: "write",
  authorize: keyWith("add_role_to_key"),
  audit: (body) => ({ targets: [body.keyId] }),
  async run(ctx, body) {
    const key = ctx.resource;
    key.roleIds = await resolveRoles(ctx.tx, ctx.root.workspaceId, body.roles);
    return saveRoles(ctx, key);
  },
});
