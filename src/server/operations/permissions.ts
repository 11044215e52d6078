// Operations permissions.*: permissions (unique slug per workspace) and roles (unique name per
// workspace, holding permissions). Deleting either removes it from every key and role.
import { requirePermission, requireTuple } from "./auth";
import { fromStore, permission } from "./authorization";
import { ServiceError } from "../errors";
import { newId } from "../domain/ids";
import { ensurePermissions, findPermission, requirePermissionRecord, requireRole, readRole } from "./lookup";
import { defineOperation, targetsNotedByRun, type OpContext } from "./operation";
import { matchesSearch, pageOf } from "../domain/pagination";
import type { PermissionRecord, RoleRecord } from "../records";
import type { Permission } from "../../protocol/types";
import { permissionView } from "../domain/views";
import { described } from "../domain/caller-value";

/**
 * The slug of a permission created with a name only (the specification's `{ name, description }`):
 * the name itself when it is a slug already (as the console sends both), else its runs of other
 * characters as `-`, at most 128 characters.
 */
function slugOf(name: string): string {
  const slug = name
    .trim()
    .replace(/[^A-Za-z0-9_:\-.*]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 128);
  if (slug !== "") return slug;
  throw new ServiceError("application.invalid_input", "Invalid request body: body.slug is required when name has no letter or digit.", {
    errors: [{ location: "body.slug", message: "is required when name has no letter or digit", fix: 'Add a "slug" such as "docs.read".' }],
  });
}

export const createPermissionOperation = defineOperation("permissions.createPermission", {
  access: "write",
  authorize: permission("rbac.*.create_permission"),
  audit: (_body, data) => ({ targets: [data.permissionId] }),
  async run(ctx, body) {
    const slug = body.slug ?? slugOf(body.name);
    const ws = ctx.root.workspaceId;
    if ((await ctx.tx.find("permissions", ws, "slug", slug)).length > 0) {
      throw new ServiceError(
        "data.permission_already_exists",
        `A permission with the slug of ${described(body.slug === undefined ? "body.name" : "body.slug", slug)} already exists in this workspace.`,
      );
    }
    const perm: PermissionRecord = { id: newId("perm"), workspaceId: ws, name: body.name, slug, createdAt: ctx.now };
    if (body.description !== undefined) perm.description = body.description;
    await ctx.tx.put("permissions", perm);
    return { data: { permissionId: perm.id } };
  },
});

export const getPermissionOperation = defineOperation("permissions.getPermission", {
  access: "read",
  authorize: permission("rbac.*.read_permission"),
  async run(ctx, body) {
    return { data: permissionView(await requirePermissionRecord(ctx.tx, ctx.root.workspaceId, body.permission, "body.permission")) };
  },
});

export const listPermissionsOperation = defineOperation("permissions.listPermissions", {
  access: "read",
  authorize: permission("rbac.*.read_permission"),
  async run(ctx, body) {
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
  authorize: permission("rbac.*.delete_permission"),
  audit: targetsNotedByRun,
  async run(ctx, body) {
    const perm = await requirePermissionRecord(ctx.tx, ctx.root.workspaceId, body.permission, "body.permission");
    // It leaves every key and role that held it.
    await ctx.tx.delete("permissions", perm.id);
    ctx.changed({ targets: [perm.id] });
    return { data: {} };
  },
});

/**
 * create_role; with permissions also add_permission_to_role, and create_permission when some of
 * them do not exist yet (they are created).
 */
async function mayCreateRole({ tx, root }: OpContext, body: { permissions?: string[] }): Promise<undefined> {
  requirePermission(root, ["rbac.*.create_role"]);
  const slugs = body.permissions ?? [];
  if (slugs.length > 0) {
    requirePermission(root, ["rbac.*.add_permission_to_role"]);
    const found = await Promise.all(slugs.map((slug) => findPermission(tx, root.workspaceId, slug)));
    if (found.some((p) => p === undefined)) requirePermission(root, ["rbac.*.create_permission"]);
  }
  return undefined;
}

export const createRoleOperation = defineOperation("permissions.createRole", {
  access: "write",
  authorize: fromStore("rbac.*.create_role (and add_permission_to_role, create_permission as its permissions need)", mayCreateRole),
  audit: (_body, data) => ({ targets: [data.roleId] }),
  async run(ctx, body) {
    const ws = ctx.root.workspaceId;
    if ((await ctx.tx.find("roles", ws, "name", body.name)).length > 0) {
      throw new ServiceError(
        "data.role_already_exists",
        `A role with the name in ${described("body.name", body.name)} already exists in this workspace.`,
      );
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
  authorize: permission("rbac.*.read_role"),
  async run(ctx, body) {
    return { data: await readRole(ctx.tx, await requireRole(ctx.tx, ctx.root.workspaceId, body.role, "body.role")) };
  },
});

export const listRolesOperation = defineOperation("permissions.listRoles", {
  access: "read",
  authorize: permission("rbac.*.read_role"),
  async run(ctx, body) {
    const ws = ctx.root.workspaceId;
    const page = await pageOf(
      (from, limit) => ctx.tx.list("roles", ws, { from, limit }),
      body.cursor,
      body.limit,
      body.search ? (r) => matchesSearch(body.search, r.id, r.name, r.description) : undefined,
    );
    return { data: await Promise.all(page.items.map((r) => readRole(ctx.tx, r))), pagination: page.pagination };
  },
});

export const deleteRoleOperation = defineOperation("permissions.deleteRole", {
  access: "write",
  authorize: permission("rbac.*.delete_role"),
  audit: targetsNotedByRun,
  async run(ctx, body) {
    const role = await requireRole(ctx.tx, ctx.root.workspaceId, body.role, "body.role");
    // It leaves every key that held it.
    await ctx.tx.delete("roles", role.id);
    ctx.changed({ targets: [role.id] });
    return { data: {} };
  },
});

/** The role, the slugs asked for (lower-cased → first spelling) and the workspace's permissions by lower-cased slug. */
interface RolePermissionsPlan {
  role: RoleRecord;
  wanted: Map<string, string>;
  existing: Map<string, PermissionRecord>;
}

/**
 * As production: add_permission_to_role and remove_permission_from_role (each named alone when
 * missing), then the role (404), then create_permission when some slugs do not exist yet.
 */
async function maySetRolePermissions(
  { tx, root }: OpContext,
  body: { roleId: string; permissions: string[] },
): Promise<RolePermissionsPlan> {
  requireTuple(root, "rbac.*.add_permission_to_role");
  requireTuple(root, "rbac.*.remove_permission_from_role");
  const ws = root.workspaceId;
  const role = await tx.get("roles", body.roleId);
  if (role?.workspaceId !== ws) throw new ServiceError("data.role_not_found", "The requested role does not exist.");
  // Slugs compare case-insensitively, as production: the first spelling of a slug wins, and an
  // existing permission is found whatever the case it was asked in.
  const wanted = new Map<string, string>();
  for (const slug of body.permissions) if (!wanted.has(slug.toLowerCase())) wanted.set(slug.toLowerCase(), slug);
  const existing = new Map<string, PermissionRecord>();
  if (wanted.size > 0) {
    for (const p of await tx.list("permissions", ws)) if (!existing.has(p.slug.toLowerCase())) existing.set(p.slug.toLowerCase(), p);
  }
  if ([...wanted.keys()].some((lower) => !existing.has(lower))) requireTuple(root, "rbac.*.create_permission");
  return { role, wanted, existing };
}

export const setRolePermissionsOperation = defineOperation("permissions.setRolePermissions", {
  access: "write",
  authorize: fromStore(
    "rbac.*.add_permission_to_role and rbac.*.remove_permission_from_role (and create_permission for new slugs)",
    maySetRolePermissions,
  ),
  audit: (body) => ({ targets: [body.roleId] }),
  async run(ctx) {
    const { role, wanted, existing } = ctx.resource;
    const ws = ctx.root.workspaceId;
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
