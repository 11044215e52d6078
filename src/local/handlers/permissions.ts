// Operations permissions.*: permissions (unique slug per workspace) and roles (unique name per
// workspace, holding permissions). Deleting either removes it from every key and role.
import { requirePermission } from "../auth";
import { ServiceError } from "../envelope";
import { newId } from "../ids";
import { ensurePermissions, requirePermissionRecord, requireRole } from "../lookup";
import { defineOperation } from "../operation";
import { matchesSearch, paginate } from "../paginate";
import * as s from "../schemas";
import { inWorkspace, type PermissionRecord, type RoleRecord } from "../store";
import { arr, obj, str } from "../validate";
import { permissionView, roleView } from "../views";

export const createPermissionOperation = defineOperation("permissions.createPermission", {
  schema: obj({ name: str({ max: 512 }), slug: s.slug(), description: str({ min: 0, max: 512 }) }, ["name"]),
  refine(body) {
    if (body.slug !== undefined || (body.name.length <= 128 && s.SLUG_PATTERN.test(body.name))) return [];
    return [
      {
        location: "body.slug",
        message: "is required when name is not a valid slug",
        fix: "Add a slug of 1..128 characters from A-Z a-z 0-9 _ : - . * (the name is used when it is one).",
      },
    ];
  },
  run(ctx, body) {
    requirePermission(ctx.root, ["rbac.*.create_permission"]);
    const slug = body.slug ?? body.name;
    const ws = ctx.root.workspaceId;
    if (inWorkspace(ctx.store.state.permissions, ws).some((p) => p.slug === slug)) {
      throw new ServiceError("data.permission_already_exists", `A permission with slug ${JSON.stringify(slug)} already exists in this workspace.`);
    }
    const perm: PermissionRecord = { id: newId("perm"), workspaceId: ws, name: body.name, slug, createdAt: ctx.now };
    if (body.description !== undefined) perm.description = body.description;
    ctx.store.state.permissions[perm.id] = perm;
    ctx.store.touch();
    return { data: { permissionId: perm.id } };
  },
});

export const getPermissionOperation = defineOperation("permissions.getPermission", {
  schema: obj({ permission: str({ max: 255 }) }, ["permission"]),
  run(ctx, body) {
    requirePermission(ctx.root, ["rbac.*.read_permission"]);
    return { data: permissionView(requirePermissionRecord(ctx.store, ctx.root.workspaceId, body.permission)) };
  },
});

export const listPermissionsOperation = defineOperation("permissions.listPermissions", {
  schema: obj({ ...s.listFields(), search: str({ max: 255 }) }),
  run(ctx, body) {
    requirePermission(ctx.root, ["rbac.*.read_permission"]);
    const all = inWorkspace(ctx.store.state.permissions, ctx.root.workspaceId).filter((p) =>
      matchesSearch(body.search, p.id, p.name, p.slug, p.description),
    );
    const page = paginate(all, body.cursor, body.limit);
    return { data: page.items.map(permissionView), pagination: page.pagination };
  },
});

export const deletePermissionOperation = defineOperation("permissions.deletePermission", {
  schema: obj({ permission: str({ max: 255 }) }, ["permission"]),
  run(ctx, body) {
    requirePermission(ctx.root, ["rbac.*.delete_permission"]);
    const perm = requirePermissionRecord(ctx.store, ctx.root.workspaceId, body.permission);
    const { state } = ctx.store;
    for (const k of Object.values(state.keys)) k.permissionIds = k.permissionIds.filter((id) => id !== perm.id);
    for (const r of Object.values(state.roles)) r.permissionIds = r.permissionIds.filter((id) => id !== perm.id);
    delete state.permissions[perm.id];
    ctx.store.touch();
    return { data: {} };
  },
});

export const createRoleOperation = defineOperation("permissions.createRole", {
  schema: obj(
    { name: str({ max: 128 }), description: str({ min: 0, max: 512 }), permissions: arr(s.slug(), { max: 1000 }) },
    ["name"],
  ),
  run(ctx, body) {
    requirePermission(ctx.root, ["rbac.*.create_role"]);
    const ws = ctx.root.workspaceId;
    if (inWorkspace(ctx.store.state.roles, ws).some((r) => r.name === body.name)) {
      throw new ServiceError("data.role_already_exists", `A role named ${JSON.stringify(body.name)} already exists in this workspace.`);
    }
    const role: RoleRecord = {
      id: newId("role"),
      workspaceId: ws,
      name: body.name,
      permissionIds: ensurePermissions(ctx.store, ws, body.permissions ?? [], ctx.now),
      createdAt: ctx.now,
    };
    if (body.description !== undefined) role.description = body.description;
    ctx.store.state.roles[role.id] = role;
    ctx.store.touch();
    return { data: { roleId: role.id } };
  },
});

export const getRoleOperation = defineOperation("permissions.getRole", {
  schema: obj({ role: str({ max: 255 }) }, ["role"]),
  run(ctx, body) {
    requirePermission(ctx.root, ["rbac.*.read_role"]);
    return { data: roleView(ctx.store, requireRole(ctx.store, ctx.root.workspaceId, body.role)) };
  },
});

export const listRolesOperation = defineOperation("permissions.listRoles", {
  schema: obj({ ...s.listFields(), search: str({ max: 255 }) }),
  run(ctx, body) {
    requirePermission(ctx.root, ["rbac.*.read_role"]);
    const all = inWorkspace(ctx.store.state.roles, ctx.root.workspaceId).filter((r) =>
      matchesSearch(body.search, r.id, r.name, r.description),
    );
    const page = paginate(all, body.cursor, body.limit);
    return { data: page.items.map((r) => roleView(ctx.store, r)), pagination: page.pagination };
  },
});

export const deleteRoleOperation = defineOperation("permissions.deleteRole", {
  schema: obj({ role: str({ max: 255 }) }, ["role"]),
  run(ctx, body) {
    requirePermission(ctx.root, ["rbac.*.delete_role"]);
    const role = requireRole(ctx.store, ctx.root.workspaceId, body.role);
    for (const k of Object.values(ctx.store.state.keys)) k.roleIds = k.roleIds.filter((id) => id !== role.id);
    delete ctx.store.state.roles[role.id];
    ctx.store.touch();
    return { data: {} };
  },
});
