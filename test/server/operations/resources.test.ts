// permissions.*, identities.*, apis.* and ratelimit.limit: CRUD, conflicts, not found, paging.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock, start, type Started } from "../helpers";

let s: Started;
const clock = manualClock();
beforeAll(async () => {
  s = await start({ now: clock.now });
});
afterAll(() => s.close());

describe("permissions", () => {
  it("create, get by id and slug, duplicate slug → 409, delete → gone from keys", async () => {
    const created = await s.call("permissions.createPermission", { name: "Read documents", slug: "documents.read", description: "d" });
    expect(created.status).toBe(200);
    const { permissionId } = created.body.data;
    expect(permissionId).toMatch(/^perm_/);
    const expected = { id: permissionId, name: "Read documents", slug: "documents.read", description: "d" };
    expect((await s.call("permissions.getPermission", { permission: permissionId })).body.data).toEqual(expected);
    expect((await s.call("permissions.getPermission", { permission: "documents.read" })).body.data).toEqual(expected);
    const dup = await s.call("permissions.createPermission", { name: "Other", slug: "documents.read" });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toMatchObject({ title: "Conflicting Resource", status: 409 });
    expect(dup.body.error.type).toMatch(/\/data\/permission_already_exists$/);

    const { key } = await s.createKey({ permissions: ["documents.read"] });
    expect((await s.call("permissions.deletePermission", { permission: "documents.read" })).body.data).toEqual({});
    expect(await s.verify(key, { permissions: "documents.read" })).toMatchObject({ code: "INSUFFICIENT_PERMISSIONS" });
    const gone = await s.call("permissions.getPermission", { permission: permissionId });
    expect(gone.status).toBe(404);
    expect(gone.body.error.type).toMatch(/\/svc\/data\/permission_not_found$/);
    expect((await s.call("permissions.deletePermission", { permission: permissionId })).status).toBe(404);
  });

  it("the specification's { name, description } takes the name as the slug; production's { name, slug } keeps its slug", async () => {
    const spec = await s.call("permissions.createPermission", { name: "billing.write", description: "spec usage" });
    expect(spec.status).toBe(200);
    expect((await s.call("permissions.getPermission", { permission: "billing.write" })).body.data).toMatchObject({
      id: spec.body.data.permissionId,
      name: "billing.write",
      slug: "billing.write",
      description: "spec usage",
    });
    const made = await s.call("permissions.createPermission", { name: "Billing Read", slug: "billing.read" });
    expect(made.status).toBe(200);
    expect((await s.call("permissions.getPermission", { permission: "billing.read" })).body.data.id).toBe(made.body.data.permissionId);
    expect((await s.call("permissions.createPermission", { name: "x", slug: "bad slug" })).status).toBe(400);
    expect((await s.call("permissions.createPermission", { name: "", slug: "ok" })).status).toBe(400);
  });

  it("lists by id in pages; cursor = id of the next page's first item; search filters", async () => {
    const local = await start();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      ids.push(
        (
          await local.call("permissions.createPermission", {
            name: `page.p${i}`,
            slug: `page.p${i}`,
            description: i === 3 ? "Special" : undefined,
          })
        ).body.data.permissionId,
      );
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const res = await local.call("permissions.listPermissions", cursor ? { limit: 3, cursor } : { limit: 3 });
      seen.push(...res.body.data.map((p: { id: string }) => p.id));
      if (!res.body.pagination.hasMore) {
        expect(res.body.pagination).not.toHaveProperty("cursor");
        break;
      }
      cursor = res.body.pagination.cursor;
      expect(cursor).toBe(ids[seen.length]);
    }
    expect(seen).toEqual(ids);
    expect((await local.call("permissions.listPermissions", { search: "special" })).body.data.map((p: { id: string }) => p.id)).toEqual([
      ids[3],
    ]);
    expect((await local.call("permissions.listPermissions", { limit: 101 })).status).toBe(400);
    expect((await local.call("permissions.listPermissions", { limit: 0 })).status).toBe(400);
    await local.close();
  });
});

describe("roles", () => {
  it("create with permissions (created when missing), get by id or name, list, 409, delete", async () => {
    const created = await s.call("permissions.createRole", { name: "admin", description: "all", permissions: ["r.one", "r.two"] });
    expect(created.status).toBe(200);
    const { roleId } = created.body.data;
    const role = (await s.call("permissions.getRole", { role: "admin" })).body.data;
    expect(role).toEqual({
      id: roleId,
      name: "admin",
      description: "all",
      permissions: [expect.objectContaining({ slug: "r.one" }), expect.objectContaining({ slug: "r.two" })],
    });
    expect((await s.call("permissions.getRole", { role: roleId })).body.data).toEqual(role);
    const dup = await s.call("permissions.createRole", { name: "admin" });
    expect(dup.status).toBe(409);
    expect(dup.body.error.type).toMatch(/role_already_exists$/);
    const list = await s.call("permissions.listRoles", { search: "adm" });
    expect(list.body.data).toEqual([role]);
    expect(list.body.pagination).toEqual({ hasMore: false });

    const { key } = await s.createKey({ roles: ["admin"] });
    expect(await s.verify(key, { permissions: "r.one AND r.two" })).toMatchObject({ code: "VALID", roles: ["admin"] });
    expect((await s.call("permissions.deleteRole", { role: "admin" })).body.data).toEqual({});
    expect(await s.verify(key, { permissions: "r.one" })).toMatchObject({ code: "INSUFFICIENT_PERMISSIONS" });
    const gone = await s.call("permissions.getRole", { role: roleId });
    expect(gone.status).toBe(404);
    expect(gone.body.error.type).toMatch(/role_not_found$/);
  });
});

describe("identities", () => {
  it("create, get by id or externalId, 409, update, list, delete", async () => {
    const created = await s.call("identities.createIdentity", { externalId: "acme", meta: { plan: "team" } });
    const { identityId } = created.body.data;
    expect(identityId).toMatch(/^id_/);
    expect((await s.call("identities.createIdentity", { externalId: "acme" })).body.error.type).toMatch(/identity_already_exists$/);
    const expected = { id: identityId, externalId: "acme", meta: { plan: "team" } };
    expect((await s.call("identities.getIdentity", { identity: "acme" })).body.data).toEqual(expected);
    expect((await s.call("identities.getIdentity", { identity: identityId })).body.data).toEqual(expected);

    const updated = await s.call("identities.updateIdentity", {
      identity: "acme",
      meta: { plan: "enterprise" },
      ratelimits: [{ name: "shared", limit: 1, duration: 60_000, autoApply: true }],
    });
    expect(updated.body.data).toEqual({
      id: identityId,
      externalId: "acme",
      meta: { plan: "enterprise" },
      ratelimits: [{ id: expect.stringMatching(/^rl_/), name: "shared", limit: 1, duration: 60_000, autoApply: true }],
    });
    const list = await s.call("identities.listIdentities", { search: "ACM" });
    expect(list.body.data).toEqual([updated.body.data]);

    const { key } = await s.createKey({ externalId: "acme" });
    expect(await s.verify(key)).toMatchObject({ code: "VALID", identity: { id: identityId } });
    expect((await s.call("identities.deleteIdentity", { identity: identityId })).body.data).toEqual({});
    expect(await s.verify(key)).not.toHaveProperty("identity");
    const gone = await s.call("identities.getIdentity", { identity: "acme" });
    expect(gone.status).toBe(404);
    expect(gone.body.error.type).toMatch(/identity_not_found$/);
  });
});

describe("apis", () => {
  it("create, get, delete (taking its keys with it)", async () => {
    const created = await s.call("apis.createApi", { name: "payments" });
    const { apiId } = created.body.data;
    expect(apiId).toMatch(/^api_/);
    // Production's shape only; the settings are keyguard's apis.getApiSettings'.
    expect((await s.call("apis.getApi", { apiId })).body.data).toEqual({ id: apiId, name: "payments" });
    expect((await s.call("apis.getApiSettings", { apiId })).body.data).toEqual({
      id: apiId,
      name: "payments",
      storeKeys: false,
      keyFormat: "plain",
      leakResponse: "disable",
    });
    const { key } = await s.createKey({ apiId });
    expect((await s.call("apis.deleteApi", { apiId })).body.data).toEqual({});
    expect(await s.verify(key)).toStrictEqual({ valid: false, code: "NOT_FOUND" });
    const gone = await s.call("apis.getApi", { apiId });
    expect(gone.status).toBe(404);
    expect(gone.body.error.type).toMatch(/api_not_found$/);
  });
});

describe("ratelimit.limit", () => {
  it("counts per namespace and identifier within the window", async () => {
    clock.t = Date.UTC(2025, 5, 1);
    const body = { namespace: "email", identifier: "u1", limit: 2, duration: 60_000 };
    const r1 = (await s.call("ratelimit.limit", body)).body.data;
    expect(r1).toEqual({ limit: 2, remaining: 1, reset: clock.t + 60_000, success: true });
    expect((await s.call("ratelimit.limit", body)).body.data.success).toBe(true);
    expect((await s.call("ratelimit.limit", body)).body.data).toMatchObject({ success: false, remaining: 0 });
    expect((await s.call("ratelimit.limit", { ...body, identifier: "u2" })).body.data.success).toBe(true);
    clock.advance(120_000);
    expect((await s.call("ratelimit.limit", body)).body.data.success).toBe(true);
  });

  it('namespace and identifier are kept apart: ("a:b", "c") is not ("a", "b:c")', async () => {
    const limit = { limit: 1, duration: 60_000 };
    expect((await s.call("ratelimit.limit", { namespace: "a:b", identifier: "c", ...limit })).body.data.success).toBe(true);
    expect((await s.call("ratelimit.limit", { namespace: "a", identifier: "b:c", ...limit })).body.data.success).toBe(true);
    expect((await s.call("ratelimit.limit", { namespace: "a:b", identifier: "c", ...limit })).body.data.success).toBe(false);
  });

  it("a different duration is a different window (alternating durations cannot reset a counter)", async () => {
    const body = { namespace: "dur", identifier: "u", limit: 1 };
    expect((await s.call("ratelimit.limit", { ...body, duration: 60_000 })).body.data.success).toBe(true);
    expect((await s.call("ratelimit.limit", { ...body, duration: 1000 })).body.data.success).toBe(true);
    expect((await s.call("ratelimit.limit", { ...body, duration: 60_000 })).body.data.success).toBe(false);
  });
});
