// The client's namespaces against a real HTTP server: wire paths, createKey's flat credits,
// list pages, listAll* across pages, and permissions.ensure including the 409 race.

import type { ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { KeyServiceHttpError, type KeyServiceClient, type Permission } from "keyguard/client";
import { fail, ok, sendJson, startServer, testClient, type Handler, type Recorded, type TestServer } from "./helpers/fault-server";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});
async function serve(handler: Handler): Promise<TestServer> {
  server = await startServer(handler);
  return server;
}

describe("namespaces", () => {
  // Each method, the wire path it must hit, and a valid `data` for it.
  const cases: Array<[string, (c: KeyServiceClient) => Promise<unknown>, unknown]> = [
    ["keys.verifyKey", (c) => c.keys.verifyKey({ key: "k" }), { valid: true, code: "VALID" }],
    ["keys.createKey", (c) => c.keys.createKey({ apiId: "api_1" }), { keyId: "key_1", key: "sk_1" }],
    ["keys.getKey", (c) => c.keys.getKey({ keyId: "key_1" }), { keyId: "key_1" }],
    ["keys.whoami", (c) => c.keys.whoami({ key: "sk_1" }), { keyId: "key_1" }],
    ["keys.updateKey", (c) => c.keys.updateKey({ keyId: "key_1", name: null }), {}],
    ["keys.deleteKey", (c) => c.keys.deleteKey({ keyId: "key_1" }), {}],
    ["keys.updateCredits", (c) => c.keys.updateCredits({ keyId: "key_1", operation: "set", value: 5 }), { remaining: 5 }],
    ["keys.addPermissions", (c) => c.keys.addPermissions({ keyId: "key_1", permissions: ["a"] }), []],
    ["keys.removePermissions", (c) => c.keys.removePermissions({ keyId: "key_1", permissions: ["a"] }), []],
    ["keys.setPermissions", (c) => c.keys.setPermissions({ keyId: "key_1", permissions: ["a"] }), []],
    ["keys.addRoles", (c) => c.keys.addRoles({ keyId: "key_1", roles: ["r"] }), []],
    ["keys.removeRoles", (c) => c.keys.removeRoles({ keyId: "key_1", roles: ["r"] }), []],
    ["keys.setRoles", (c) => c.keys.setRoles({ keyId: "key_1", roles: ["r"] }), []],
    ["keys.rerollKey", (c) => c.keys.rerollKey({ keyId: "key_1", expiration: 0 }), { keyId: "key_2", key: "sk_2" }],
    ["apis.createApi", (c) => c.apis.createApi({ name: "a" }), { apiId: "api_1" }],
    ["apis.getApi", (c) => c.apis.getApi({ apiId: "api_1" }), { id: "api_1", name: "a" }],
    ["apis.listKeys", (c) => c.apis.listKeys({ apiId: "api_1" }), []],
    ["apis.deleteApi", (c) => c.apis.deleteApi({ apiId: "api_1" }), {}],
    ["permissions.createPermission", (c) => c.permissions.createPermission({ name: "p", slug: "p" }), { permissionId: "perm_1" }],
    ["permissions.getPermission", (c) => c.permissions.getPermission({ permission: "p" }), { id: "perm_1" }],
    ["permissions.listPermissions", (c) => c.permissions.listPermissions(), []],
    ["permissions.deletePermission", (c) => c.permissions.deletePermission({ permission: "p" }), {}],
    ["permissions.createRole", (c) => c.permissions.createRole({ name: "r" }), { roleId: "role_1" }],
    ["permissions.getRole", (c) => c.permissions.getRole({ role: "r" }), { id: "role_1" }],
    ["permissions.listRoles", (c) => c.permissions.listRoles(), []],
    ["permissions.deleteRole", (c) => c.permissions.deleteRole({ role: "r" }), {}],
    ["identities.createIdentity", (c) => c.identities.createIdentity({ externalId: "u" }), { identityId: "id_1" }],
    ["identities.getIdentity", (c) => c.identities.getIdentity({ identity: "u" }), { id: "id_1", externalId: "u" }],
    ["identities.listIdentities", (c) => c.identities.listIdentities(), []],
    ["identities.updateIdentity", (c) => c.identities.updateIdentity({ identity: "u", meta: {} }), { id: "id_1", externalId: "u" }],
    ["identities.deleteIdentity", (c) => c.identities.deleteIdentity({ identity: "u" }), {}],
    [
      "ratelimit.limit",
      (c) => c.ratelimit.limit({ namespace: "n", identifier: "i", limit: 1, duration: 1000 }),
      { success: true, limit: 1, remaining: 0, reset: 1 },
    ],
  ];

  it.each(cases)("%s → POST /v2/%s", async (path, call, data) => {
    const s = await serve((_req, res) => ok(res, data));
    const result = (await call(testClient({ baseUrl: s.url }))) as { requestId: string };
    expect(s.requests.map((r) => `${r.method} ${r.url}`)).toEqual([`POST /v2/${path}`]);
    expect(result).toEqual(data);
    expect(result.requestId).toBe("req_test");
  });

  it("a list method sends {} when called without a body and exposes a hidden pagination", async () => {
    const s = await serve((_req, res) =>
      ok(res, [{ id: "perm_1", name: "a", slug: "a" }], { pagination: { cursor: "perm_2", hasMore: true } }),
    );
    const page = await testClient({ baseUrl: s.url }).permissions.listPermissions();
    expect(s.requests[0]!.body).toEqual({});
    expect(page).toEqual([{ id: "perm_1", name: "a", slug: "a" }]);
    expect(page.pagination).toEqual({ cursor: "perm_2", hasMore: true });
    expect(page.requestId).toBe("req_test");
    expect(Object.keys(page)).toEqual(["0"]);
  });

  it("request() rejects an operation name that is not group.op", async () => {
    const client = testClient({ baseUrl: "http://127.0.0.1:9" });
    await expect(client.request("../admin" as never, {} as never)).rejects.toThrow(TypeError);
    await expect(client.request("keys.verifyKey", [] as never)).rejects.toThrow(/must be an object/);
  });
});

describe("keys.createKey credits", () => {
  it("sends the flat remaining/refill as credits, without changing the caller's object", async () => {
    const s = await serve((_req, res) => ok(res, { keyId: "key_1", key: "sk_1" }));
    const input = Object.freeze({ apiId: "api_1", remaining: 10, refill: { interval: "daily" as const, amount: 10 } });
    await testClient({ baseUrl: s.url }).keys.createKey(input);
    expect(s.requests[0]!.body).toEqual({ apiId: "api_1", credits: { remaining: 10, refill: { interval: "daily", amount: 10 } } });
  });

  it("passes nested credits through unchanged", async () => {
    const s = await serve((_req, res) => ok(res, { keyId: "key_1", key: "sk_1" }));
    await testClient({ baseUrl: s.url }).keys.createKey({ apiId: "api_1", credits: { remaining: 3 } });
    expect(s.requests[0]!.body).toEqual({ apiId: "api_1", credits: { remaining: 3 } });
  });

  it("both shapes at once, or refill without remaining, is a TypeError before any request", async () => {
    const s = await serve((_req, res) => ok(res, { keyId: "key_1", key: "sk_1" }));
    const client = testClient({ baseUrl: s.url });
    await expect(client.keys.createKey({ apiId: "a", remaining: 1, credits: { remaining: 1 } })).rejects.toThrow(TypeError);
    await expect(client.keys.createKey({ apiId: "a", refill: { interval: "daily", amount: 1 } })).rejects.toThrow(/needs `remaining`/);
    expect(s.requests).toHaveLength(0);
  });
});

/** A permission store with pages of `pageSize`, `search` as a substring filter, and 409 on duplicate slugs. */
function permissionStore(initial: Permission[], pageSize = 2) {
  const perms = [...initial];
  let next = 100;
  const handler: Handler = (req: Recorded, res: ServerResponse) => {
    const body = req.body as Record<string, string | undefined>;
    if (req.url === "/v2/permissions.listPermissions") {
      const matching = perms.filter((p) => !body.search || p.name.includes(body.search)).sort((a, b) => a.id.localeCompare(b.id));
      const start = body.cursor ? matching.findIndex((p) => p.id === body.cursor) : 0;
      const items = matching.slice(start, start + pageSize);
      const after = matching[start + pageSize];
      return ok(res, items, { pagination: after ? { cursor: after.id, hasMore: true } : { hasMore: false } });
    }
    if (req.url === "/v2/permissions.createPermission") {
      if (perms.some((p) => p.slug === body.slug)) return fail(res, 409, "err:svc:data:permission_already_exists");
      const p = { id: `perm_${next++}`, name: body.name!, slug: body.slug!, ...(body.description && { description: body.description }) };
      perms.push(p);
      return ok(res, { permissionId: p.id });
    }
    if (req.url === "/v2/permissions.getPermission") {
      const p = perms.find((x) => x.id === body.permission || x.slug === body.permission);
      return p ? ok(res, p) : fail(res, 404, "err:svc:data:permission_not_found");
    }
    return sendJson(res, 404, "no route");
  };
  return { perms, handler };
}

const p = (id: number, name: string): Permission => ({ id: `perm_${String(id).padStart(2, "0")}`, name, slug: name });

describe("listAll*", () => {
  it("follows cursors across pages, forwarding the body", async () => {
    const store = permissionStore([p(1, "a.read"), p(2, "a.write"), p(3, "b.read"), p(4, "a.admin"), p(5, "a.x")]);
    const s = await serve(store.handler);
    const names: string[] = [];
    for await (const perm of testClient({ baseUrl: s.url }).permissions.listAllPermissions({ search: "a." })) names.push(perm.name);
    expect(names).toEqual(["a.read", "a.write", "a.admin", "a.x"]);
    expect(s.requests.map((r) => r.body)).toEqual([{ search: "a." }, { search: "a.", cursor: "perm_04" }]);
  });

  it("fetches lazily: stopping early sends no further requests", async () => {
    const s = await serve(permissionStore([p(1, "a"), p(2, "b"), p(3, "c"), p(4, "d")]).handler);
    for await (const perm of testClient({ baseUrl: s.url }).permissions.listAllPermissions()) if (perm.name === "a") break;
    expect(s.requests).toHaveLength(1);
  });

  it.each([
    ["a repeated cursor", { cursor: "same", hasMore: true }, "came back twice"],
    ["hasMore without a cursor", { hasMore: true }, "no cursor"],
  ])("stops with KeyServiceResponseError on %s", async (_name, pagination, message) => {
    const s = await serve((_req, res) => ok(res, [{ id: "id_1", externalId: "u" }], { pagination }));
    const run = async () => {
      for await (const _ of testClient({ baseUrl: s.url }).identities.listAllIdentities()) void _;
    };
    await expect(run()).rejects.toMatchObject({ code: "KEY_SERVICE_INVALID_RESPONSE", message: expect.stringContaining(message) });
    expect(s.requests.length).toBeLessThanOrEqual(2);
  });

  it("is bounded by maxPages", async () => {
    const s = await serve((_req, res, n) =>
      ok(res, [{ id: `role_${n}`, name: `r${n}` }], { pagination: { cursor: `role_${n + 1}`, hasMore: true } }),
    );
    const seen: string[] = [];
    const run = async () => {
      for await (const role of testClient({ baseUrl: s.url }).permissions.listAllRoles({}, { maxPages: 3 })) seen.push(role.id);
    };
    await expect(run()).rejects.toMatchObject({
      code: "KEY_SERVICE_INVALID_RESPONSE",
      message: expect.stringContaining("more than 3 pages"),
    });
    expect(seen).toEqual(["role_1", "role_2", "role_3"]);
    const refused = async () => {
      for await (const _ of testClient({ baseUrl: s.url }).permissions.listAllRoles({}, { maxPages: 0 })) void _;
    };
    await expect(refused()).rejects.toMatchObject({
      code: "KEY_SERVICE_CONFIG_ERROR",
      option: "maxPages",
      message: "permissions.listRoles: invalid option maxPages = 0. Use a whole number 1..2147483647 (default 1000).",
    });
  });

  it("apis.listAllKeys sends apiId on every page", async () => {
    const s = await serve((req, res) => {
      const cursor = (req.body as { cursor?: string }).cursor;
      if (!cursor)
        return ok(res, [{ keyId: "key_1", start: "s", enabled: true, createdAt: 1 }], { pagination: { cursor: "key_2", hasMore: true } });
      return ok(res, [{ keyId: "key_2", start: "s", enabled: true, createdAt: 1 }], { pagination: { hasMore: false } });
    });
    const ids: string[] = [];
    for await (const key of testClient({ baseUrl: s.url }).apis.listAllKeys({ apiId: "api_1" })) ids.push(key.keyId);
    expect(ids).toEqual(["key_1", "key_2"]);
    expect(s.requests.map((r) => r.body)).toEqual([{ apiId: "api_1" }, { apiId: "api_1", cursor: "key_2" }]);
  });
});

describe("permissions.ensure", () => {
  it("finds an existing permission by exact name on a later page, without creating", async () => {
    const store = permissionStore([p(1, "docs.read.all"), p(2, "x.docs.read"), p(3, "docs.reader"), p(4, "docs.read")]);
    const s = await serve(store.handler);
    await expect(testClient({ baseUrl: s.url }).permissions.ensure({ name: "docs.read" })).resolves.toBe("perm_04");
    expect(s.requests.every((r) => r.url === "/v2/permissions.listPermissions")).toBe(true);
  });

  it("creates a missing permission with slug = name and the description", async () => {
    const store = permissionStore([p(1, "other")]);
    const s = await serve(store.handler);
    const id = await testClient({ baseUrl: s.url }).permissions.ensure({ name: "docs.write", description: "Write docs" });
    expect(id).toBe("perm_100");
    expect(s.requests.find((r) => r.url === "/v2/permissions.createPermission")!.body).toEqual({
      name: "docs.write",
      slug: "docs.write",
      description: "Write docs",
    });
    expect(store.perms).toContainEqual({ id: "perm_100", name: "docs.write", slug: "docs.write", description: "Write docs" });
  });

  it("survives a concurrent creation: 409 once, then finds it", async () => {
    const store = permissionStore([]);
    let lists = 0;
    const s = await serve((req, res, n) => {
      if (req.url === "/v2/permissions.listPermissions") lists++;
      if (req.url === "/v2/permissions.createPermission") {
        // Another process creates it between our lookup and our create.
        store.perms.push({ id: "perm_race", name: "docs.read", slug: "docs.read" });
      }
      return store.handler(req, res, n);
    });
    await expect(testClient({ baseUrl: s.url }).permissions.ensure({ name: "docs.read" })).resolves.toBe("perm_race");
    expect(s.requests.map((r) => r.url)).toEqual([
      "/v2/permissions.listPermissions",
      "/v2/permissions.createPermission",
      "/v2/permissions.listPermissions",
    ]);
    expect(lists).toBe(2);
  });

  it("after a 409 for a slug held under another name, rejects naming both instead of returning the other permission", async () => {
    const s = await serve(permissionStore([{ id: "perm_07", name: "Read docs", slug: "docs.read" }]).handler);
    const err = await testClient({ baseUrl: s.url })
      .permissions.ensure({ name: "docs reader", slug: "docs.read" })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeyServiceHttpError);
    expect(err).toMatchObject({ code: "KEY_SERVICE_HTTP_ERROR", status: 409, kind: "data.permission_already_exists", retryable: false });
    const message = (err as Error).message;
    for (const part of ['"docs.read"', "perm_07", '"Read docs"', '"docs reader"']) expect(message).toContain(part);
    expect(s.requests.at(-1)).toMatchObject({ url: "/v2/permissions.getPermission", body: { permission: "docs.read" } });
  });

  it("after a 409, a permission found by its slug with the asked name is returned (the listing lagging behind)", async () => {
    const s = await serve((req, res) => {
      if (req.url === "/v2/permissions.listPermissions") return ok(res, []);
      if (req.url === "/v2/permissions.createPermission") return fail(res, 409, "err:svc:data:permission_already_exists");
      return ok(res, { id: "perm_lag", name: "docs.read", slug: "docs.read" });
    });
    await expect(testClient({ baseUrl: s.url }).permissions.ensure({ name: "docs.read" })).resolves.toBe("perm_lag");
    expect(s.requests.map((r) => r.url).at(-1)).toBe("/v2/permissions.getPermission");
  });

  it("other errors propagate; a missing name is a TypeError", async () => {
    const s = await serve((_req, res) => fail(res, 403, "err:svc:authorization:insufficient_permissions"));
    const client = testClient({ baseUrl: s.url });
    await expect(client.permissions.ensure({ name: "x" })).rejects.toMatchObject({
      status: 403,
      kind: "authorization.insufficient_permissions",
    });
    await expect(client.permissions.ensure({ name: "" })).rejects.toThrow(TypeError);
  });
});
