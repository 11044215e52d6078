// Operations permissions.*: permissions (unique slug per workspace) and roles (unique name per
// workspace, holding permissions). Deleting either removes it from every key and role.
import { requirePermission, requireTuple } from "./auth";
import { ServiceError } from "../http/envelope";
import { newId } from "../domain/ids";
import { ensurePermissions, findPermission, requirePermissionRecord, requireRole } from "../domain/lookup";
import { defineOperation } from "./operation";
import { matchesSearch, pageOf } from "../domain/pagination";
import type { PermissionRecord, RoleRecord } from "../storage/seam";
import type { Permission } from "../../protocol/types";
import { permissionView, roleView } from "../domain/views";

export const createPermissionOperation = defineOperation("permissions.createPermission", {
  access: "write",
  async run(ctx, body) {
    requirePermission(ctx.root, ["rbac.*.create_permission"]);
    const slug = body.slug!;
    const ws = ctx.root.workspaceId;
    if ((await ctx.tx.find("permissions", ws, "slug", slug)).length > 0) {
      throw new ServiceError("data.permission_already_exists", `A permission with slug ${JSON.stringify(slug)} already exists in this workspace.`);
    }
    const perm: PermissionRecord = { id: newId("perm"), workspaceId: ws, name: body.name, slug, createdAt: ctx.now };
    if (body.description !== undefined) perm.description = body.description;
    await ctx.tx.put("permissions", perm);
    return { data: { permissionId: perm.id } };
  },
});

export const getPermissionOperation = defineOperation("permissions.getPermission", {
  access: "read",
  async run(ctx, body) {
    requirePermission(ctx.root, ["rbac.*.read_permission"]);
    return { data: permissionView(await requirePermissionRecord(ctx.tx, ctx.root.workspaceId, body.permission)) };
  },
});

export const listPermissionsOperation = defineOperation("permissions.listPermissions", {
  access: "read",
  async run(ctx, body) {
    requirePermission(ctx.root, ["rbac.*.read_permission"]);
    const ws = ctx.root.workspaceId;
    const page = await pageOf(
      (from, limit) => ctx.tx.list("permissions", ws, { from, limit }),
      body.cursor,
      body.limit,
      body.search ? (p) => matchesSearch(body.search, p.id, p.name, p.slug, p.description) : undefined,
    );
    return { data: page.items.map(permissionView), pagination: page.pagination };
  },
});

export const deletePermissionOperation = defineOperation("permissions.deletePermission", {
  access: "write",
  async run(ctx, body) {
    requirePermission(ctx.root, ["rbac.*.delete_permission"]);
    const perm = await requirePermissionRecord(ctx.tx, ctx.root.workspaceId, body.permission);
    // It leaves every key and role that held it.
    await ctx.tx.delete("permissions", perm.id);
    return { data: {} };
  },
});

export const createRoleOperation = defineOperation("permissions.createRole", {
  access: "write",
  async run(ctx, body) {
    requirePermission(ctx.root, ["rbac.*.create_role"]);
    const ws = ctx.root.workspaceId;
    const slugs = body.permissions ?? [];
    if (slugs.length > 0) {
      requirePermission(ctx.root, ["rbac.*.add_permission_to_role"]);
      // Slugs that do not exist yet are created, which needs its own permission.
      const found = await Promise.all(slugs.map((slug) => findPermission(ctx.tx, ws, slug)));
      if (found.some((p) => p === undefined)) requirePermission(ctx.root, ["rbac.*.create_permission"]);
    }
    if ((await ctx.tx.find("roles", ws, "name", body.name)).length > 0) {
      throw new ServiceError("data.role_already_exists", `A role named ${JSON.stringify(body.name)} already exists in this workspace.`);
    }
    const role: RoleRecord = {
      id: newId("role"),
      workspaceId: ws,
      name: body.name,
      permissionIds: await ensurePermissions(ctx.tx, ws, body.permissions ?? [], ctx.now),
      createdAt: ctx.now,
    };
    if (body.description !== undefined) role.description = body.description;
    await ctx.tx.put("roles", role);
    return { data: { roleId: role.id } };
  },
});

export const getRoleOperation = defineOperation("permissions.getRole", {
  access: "read",
  async run(ctx, body) {
    requirePermission(ctx.root, ["rbac.*.read_role"]);
    return { data: await roleView(ctx.tx, await requireRole(ctx.tx, ctx.root.workspaceId, body.role)) };
  },
});

export const listRolesOperation = defineOperation("permissions.listRoles", {
  access: "read",
  async run(ctx, body) {
    requirePermission(ctx.root, ["rbac.*.read_role"]);
    const ws = ctx.root.workspaceId;
    const page = await pageOf(
      (from, limit) => ctx.tx.list("roles", ws, { from, limit }),
      body.cursor,
      body.limit,
      body.search ? (r) => matchesSearch(body.search, r.id, r.name, r.description) : undefined,
    );
    return { data: await Promise.all(page.items.map((r) => roleView(ctx.tx, r))), pagination: page.pagination };
  },
});

export const deleteRoleOperation = defineOperation("permissions.deleteRole", {
  access: "write",
  async run(ctx, body) {
    requirePermission(ctx.root, ["rbac.*.delete_role"]);
    const role = await requireRole(ctx.tx, ctx.root.workspaceId, body.role);
    // It leaves every key that held it.
    await ctx.tx.delete("roles", role.id);
    return { data: {} };
  },
});

export const setRolePermissionsOperation = defineOperation("permissions.setRolePermissions", {
  access: "write",
  async run(ctx, body) {
    requireTuple(ctx.root, "rbac.*.add_permission_to_role");
    requireTuple(ctx.root, "rbac.*.remove_permission_from_role");
    const ws = ctx.root.workspaceId;
    const role = await ctx.tx.get("roles", body.roleId);
    if (role?.workspaceId !== ws) throw new ServiceError("data.role_not_found", "The requested role does not exist.");
    // Slugs compare case-insensitively, as production: the first spelling of a slug wins, and an
    // existing permission is found whatever the case it was asked in.
    const wanted = new Map<string, string>();
    for (const slug of body.permissions) if (!wanted.has(slug.toLowerCase())) wanted.set(slug.toLowerCase(), slug);
    const existing = new Map<string, PermissionRecord>();
    if (wanted.size > 0) {
      for (const p of await ctx.tx.list("permissions", ws)) if (!existing.has(p.slug.toLowerCase())) existing.set(p.slug.toLowerCase(), p);
    }
    const missing = [...wanted.keys()].filter((lower) => !existing.has(lower));
    if (missing.length > 0) requireTuple(ctx.root, "rbac.*.create_permission");
    const set: Array<{ slug: string; record: PermissionRecord }> = [];
    for (const [lower, slug] of wanted) {
      let record = existing.get(lower);
      if (!record) {
        record = { id: newId("perm"), workspaceId: ws, name: slug, slug, createdAt: ctx.now };
        await ctx.tx.put("permissions", record);
      }
      set.push({ slug, record });
    }
    set.sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0));
    const permissionIds = set.map((p) => p.record.id);
    if (permissionIds.join() !== role.permissionIds.join()) await ctx.tx.put("roles", { ...role, permissionIds });
    return { data: set.map((p): Permission => permissionView(p.record)) };
  },
});
