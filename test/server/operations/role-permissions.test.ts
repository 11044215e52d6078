// permissions.setRolePermissions: replaces a role's direct permissions, as production does.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { start, type Started } from "../helpers";

let s: Started;
beforeAll(async () => {
  s = await start();
});
afterAll(() => s.close());

const slugsOf = (data: Array<{ slug: string }>) => data.map((p) => p.slug);

describe("permissions.setRolePermissions", () => {
  it("replaces the set (sorted by slug, missing slugs created, case-insensitive matches); keys holding the role follow", async () => {
    await s.call("permissions.createPermission", { name: "Keep", slug: "keep.permission" });
    const { roleId } = (await s.call("permissions.createRole", { name: "editor", permissions: ["old.one", "keep.permission"] })).body.data;
    const { key } = await s.createKey({ roles: ["editor"] });
    expect(await s.verify(key, { permissions: "old.one" })).toMatchObject({ valid: true });

    const res = await s.call("permissions.setRolePermissions", {
      roleId,
      permissions: ["zeta.new", "KEEP.Permission", "alpha.new", "Zeta.NEW"],
    });
    expect(res.status).toBe(200);
    // Ordered by the slug as requested ("KEEP.Permission" < "alpha.new" by byte), shown as stored.
    expect(slugsOf(res.body.data)).toEqual(["keep.permission", "alpha.new", "zeta.new"]);
    const keep = res.body.data.find((p: { slug: string }) => p.slug === "keep.permission");
    expect(keep).toMatchObject({ id: expect.stringMatching(/^perm_/), name: "Keep" });
    expect(res.body.data.find((p: { slug: string }) => p.slug === "alpha.new")).toMatchObject({ name: "alpha.new" });
    const role = (await s.call("permissions.getRole", { role: roleId })).body.data;
    expect(slugsOf(role.permissions).sort()).toEqual(["alpha.new", "keep.permission", "zeta.new"]);
    expect(await s.verify(key, { permissions: "old.one" })).toMatchObject({ code: "INSUFFICIENT_PERMISSIONS" });
    expect(await s.verify(key, { permissions: "zeta.new AND keep.permission" })).toMatchObject({ valid: true });

    // The same set again changes nothing; [] clears.
    expect(
      slugsOf(
        (await s.call("permissions.setRolePermissions", { roleId, permissions: ["alpha.new", "zeta.new", "keep.permission"] })).body.data,
      ),
    ).toEqual(["alpha.new", "keep.permission", "zeta.new"]);
    expect((await s.call("permissions.setRolePermissions", { roleId, permissions: [] })).body.data).toEqual([]);
    expect((await s.call("permissions.getRole", { role: roleId })).body.data.permissions ?? []).toEqual([]);
  });

  it("404 for a role that does not exist (by id only), 403 without both role permissions, create_permission for new slugs", async () => {
    const { roleId } = (await s.call("permissions.createRole", { name: "viewer" })).body.data;
    expect((await s.call("permissions.createPermission", { name: "Viewer keep", slug: "viewer.keep" })).status).toBe(200);
    const missing = await s.call("permissions.setRolePermissions", { roleId: "role_missing", permissions: [] });
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({ detail: "The requested role does not exist." });
    expect(missing.body.error.type).toMatch(/\/data\/role_not_found$/);
    expect((await s.call("permissions.setRolePermissions", { roleId: "viewer", permissions: [] })).status).toBe(404);

    const addOnly = (await s.service.createRootKey({ permissions: ["rbac.*.add_permission_to_role"] })).rootKey;
    const denied = await s.call("permissions.setRolePermissions", { roleId, permissions: [] }, addOnly);
    expect(denied.status).toBe(403);
    expect(denied.body.error.detail).toBe("Missing permission: 'rbac.*.remove_permission_from_role'");
    const both = (await s.service.createRootKey({ permissions: ["rbac.*.add_permission_to_role", "rbac.*.remove_permission_from_role"] }))
      .rootKey;
    expect((await s.call("permissions.setRolePermissions", { roleId, permissions: ["viewer.keep"] }, both)).status).toBe(200);
    const create = await s.call("permissions.setRolePermissions", { roleId, permissions: ["brand.new.slug"] }, both);
    expect(create.status).toBe(403);
    expect(create.body.error.detail).toBe("Missing permission: 'rbac.*.create_permission'");
    expect((await s.call("permissions.getPermission", { permission: "brand.new.slug" })).status).toBe(404);
  });

  it("validates roleId (3..255, letters, digits, _ and -) and slugs", async () => {
    for (const bad of [
      { permissions: [] },
      { roleId: "role_x" },
      { roleId: "ab", permissions: [] },
      { roleId: "role x", permissions: [] },
      { roleId: "role_x", permissions: [""] },
      { roleId: "role_x", permissions: ["a b"] },
    ]) {
      expect((await s.call("permissions.setRolePermissions", bad)).status, JSON.stringify(bad)).toBe(400);
    }
  });
});
