// Root keys: the Authorization header, permission tuples (literal) and workspace isolation.
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalServiceArgumentError, memoryStorage } from "keyguard/server";
import { keyHash } from "../../../src/protocol/key-hash";
import { start, type Started } from "../helpers";

let s: Started;
beforeAll(async () => {
  s = await start();
});
afterAll(() => s.close());

describe("the Authorization header", () => {
  it("missing → 400 invalid_input at location security, as production", async () => {
    const res = await s.call("apis.getApi", { apiId: s.apiId }, null);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ title: "Bad Request", detail: "Authorization header for 'bearer' scheme" });
    expect(res.body.error.type).toMatch(/\/svc\/application\/invalid_input$/);
    expect(res.body.error.errors).toEqual([
      { location: "security", message: "Authorization header was not found", fix: "Add an 'Authorization' header to this request" },
    ]);
  });

  it("anything not starting with exactly `Bearer ` → 400 authentication.malformed (lower-case bearer too)", async () => {
    for (const authorization of [
      s.rootKey,
      `bearer ${s.rootKey}`,
      `BEARER ${s.rootKey}`,
      `Basic ${s.rootKey}`,
      "Bearer ",
      "Bearer    ",
      "",
      `Bearer\t${s.rootKey}`,
    ]) {
      const res = await s.call("apis.getApi", { apiId: s.apiId }, undefined, {
        headers: { "content-type": "application/json", authorization },
      });
      expect(res.status, JSON.stringify(authorization)).toBe(400);
      expect(res.body.error.type).toMatch(/\/svc\/authentication\/malformed$/);
      expect(res.body.error.detail).toContain("missing the 'Bearer ' prefix");
      expect(res.body.error.errors).toEqual([]);
      expect(JSON.stringify(res.body)).not.toContain(s.rootKey);
    }
    // Surrounding spaces are trimmed, as production does.
    const padded = await s.call("apis.getApi", { apiId: s.apiId }, undefined, {
      headers: { "content-type": "application/json", authorization: `  Bearer ${s.rootKey}  ` },
    });
    expect(padded.status).toBe(200);
  });

  it("unknown root key → 401 authentication.key_not_found, and the key is not echoed", async () => {
    const res = await s.call("apis.getApi", { apiId: s.apiId }, "root_notARealKey123");
    expect(res.status).toBe(401);
    expect(res.body.error).toMatchObject({ status: 401, title: "Unauthorized" });
    expect(res.body.error.type).toMatch(/\/svc\/authentication\/key_not_found$/);
    expect(JSON.stringify(res.body)).not.toContain("root_notARealKey123");
  });
});

describe("root keys heard again", () => {
  it("each answers as itself, more of them than are remembered, and one deleted after use is refused", async () => {
    // 70 root keys (the service remembers the hashes of 64), every other one allowed to read APIs, used in turn, twice.
    const keys = await Promise.all(
      Array.from({ length: 70 }, (_, i) => s.service.createRootKey({ permissions: i % 2 === 0 ? ["api.*.read_api"] : [] })),
    );
    for (const round of [1, 2]) {
      for (const [i, { rootKey }] of keys.entries()) {
        expect((await s.call("apis.getApi", { apiId: s.apiId }, rootKey)).status, `root key ${i}, round ${round}`).toBe(
          i % 2 === 0 ? 200 : 403,
        );
      }
    }
    const used = await s.call("rootKeys.createRootKey", { name: "used", permissions: ["api.*.read_api"] });
    const { key, keyId } = used.body.data as { key: string; keyId: string };
    expect((await s.call("apis.getApi", { apiId: s.apiId }, key)).status).toBe(200);
    expect((await s.call("rootKeys.deleteRootKey", { keyId })).status).toBe(200);
    expect((await s.call("apis.getApi", { apiId: s.apiId }, key)).status).toBe(401);
  });
});

/** POSTs `body` to `op` with each of `authorizations` as an Authorization header line of its own. */
function withAuthorizations(
  op: string,
  body: unknown,
  authorizations: string[],
): Promise<{ status: number; body: { error?: { type: string; detail: string }; data?: unknown } }> {
  return new Promise((resolve, reject) => {
    const req = request(`${s.baseUrl}/v2/${op}`, { method: "POST" }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on("error", reject);
    req.setHeader("Content-Type", "application/json");
    req.setHeader("Authorization", authorizations);
    req.end(JSON.stringify(body));
  });
}

describe("two Authorization headers", () => {
  it("that differ → 400 authentication.malformed, whichever comes first, and neither is echoed", async () => {
    const { rootKey: other } = await s.service.createRootKey({ permissions: ["api.*.read_api"] });
    for (const pair of [
      [`Bearer ${s.rootKey}`, `Bearer ${other}`],
      [`Bearer ${other}`, `Bearer ${s.rootKey}`],
      [`Bearer ${s.rootKey}`, "Bearer nope"],
    ]) {
      const res = await withAuthorizations("apis.getApi", { apiId: s.apiId }, pair);
      expect(res.status).toBe(400);
      expect(res.body.error!.type).toMatch(/\/authentication\/malformed$/);
      expect(res.body.error!.detail).toContain("two different Authorization headers");
      expect(JSON.stringify(res.body)).not.toContain(s.rootKey);
      expect(JSON.stringify(res.body)).not.toContain(other);
    }
  });

  it("that repeat the same root key are one: the request is served", async () => {
    const res = await withAuthorizations("apis.getApi", { apiId: s.apiId }, [`Bearer ${s.rootKey}`, `Bearer ${s.rootKey}`]);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: s.apiId });
  });
});

describe("permission tuples", () => {
  it("a missing permission → 403 naming the tuples", async () => {
    const { rootKey } = await s.service.createRootKey({ permissions: ["api.*.create_key"] });
    const res = await s.call("apis.getApi", { apiId: s.apiId }, rootKey);
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({
      title: "Insufficient Permissions",
      // The apiId is the caller's value: named by its field, never repeated.
      detail: "Missing one of these permissions: api.*.read_api or api.<apiId>.read_api",
    });
    expect((await s.call("keys.createKey", { apiId: s.apiId }, rootKey)).status).toBe(200);
  });

  it("createKey without create_key → 404 api_not_found, as production masks it", async () => {
    const { rootKey } = await s.service.createRootKey({ permissions: ["api.*.read_api"] });
    const res = await s.call("keys.createKey", { apiId: s.apiId }, rootKey);
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ title: "Not Found", detail: "The specified API was not found." });
    expect(res.body.error.type).toMatch(/\/data\/api_not_found$/);
    // The same answer as for an API that does not exist.
    const missing = await s.call("keys.createKey", { apiId: "api_doesNotExist" });
    expect(missing.body.error).toMatchObject({ status: 404, detail: "The specified API was not found." });
  });

  it("apis.listKeys needs read_key and read_api, else 404 api_not_found", async () => {
    for (const permissions of [["api.*.read_api"], ["api.*.read_key"], ["api.api_other.read_key", "api.*.read_api"]]) {
      const { rootKey } = await s.service.createRootKey({ permissions });
      const res = await s.call("apis.listKeys", { apiId: s.apiId }, rootKey);
      expect(res.status, permissions.join()).toBe(404);
      expect(res.body.error.type).toMatch(/\/data\/api_not_found$/);
    }
    const { rootKey } = await s.service.createRootKey({ permissions: [`api.${s.apiId}.read_key`, `api.${s.apiId}.read_api`] });
    expect((await s.call("apis.listKeys", { apiId: s.apiId }, rootKey)).status).toBe(200);
  });

  it("keys.whoami without read_key → 404 key_not_found, like an unknown key", async () => {
    const { key } = await s.createKey();
    const { rootKey } = await s.service.createRootKey({ permissions: ["api.*.read_api"] });
    const res = await s.call("keys.whoami", { key }, rootKey);
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ detail: "The specified key was not found." });
    expect(res.body.error.type).toMatch(/\/data\/key_not_found$/);
    expect((await s.call("keys.whoami", { key: "not_a_key_at_all" })).body.error.detail).toBe("The specified key was not found.");
  });

  it("keys.getKey without read_key → 403 (production does not mask it)", async () => {
    const { keyId } = await s.createKey();
    const { rootKey } = await s.service.createRootKey({ permissions: ["api.*.read_api", "api.api_other.read_key"] });
    const res = await s.call("keys.getKey", { keyId }, rootKey);
    expect(res.status).toBe(403);
    expect(res.body.error.detail).toBe(`Missing one of these permissions: api.*.read_key or api.${s.apiId}.read_key`);
  });

  it("createRole with permissions needs add_permission_to_role (and create_permission for new slugs)", async () => {
    const { rootKey: roleOnly } = await s.service.createRootKey({ permissions: ["rbac.*.create_role"] });
    expect((await s.call("permissions.createRole", { name: "bare-role" }, roleOnly)).status).toBe(200);
    const denied = await s.call("permissions.createRole", { name: "rich-role", permissions: ["cr.p"] }, roleOnly);
    expect(denied.status).toBe(403);
    expect(denied.body.error.detail).toBe("Missing one of these permissions: rbac.*.add_permission_to_role");
    const { rootKey: noCreate } = await s.service.createRootKey({ permissions: ["rbac.*.create_role", "rbac.*.add_permission_to_role"] });
    const newSlug = await s.call("permissions.createRole", { name: "rich-role", permissions: ["cr.p"] }, noCreate);
    expect(newSlug.status).toBe(403);
    expect(newSlug.body.error.detail).toContain("rbac.*.create_permission");
    expect((await s.call("permissions.createPermission", { name: "cr.p", slug: "cr.p" })).status).toBe(200);
    expect((await s.call("permissions.createRole", { name: "rich-role", permissions: ["cr.p"] }, noCreate)).status).toBe(200);
  });

  it("an API-scoped grant works for that API only; another API answers not found", async () => {
    const { apiId: other } = await s.service.createApi({ name: "other" });
    const { rootKey } = await s.service.createRootKey({ permissions: [`api.${s.apiId}.create_key`, `api.${s.apiId}.verify_key`] });
    const mine = await s.call("keys.createKey", { apiId: s.apiId }, rootKey);
    expect(mine.status).toBe(200);
    const theirs = await s.call("keys.createKey", { apiId: other }, rootKey);
    expect(theirs.status).toBe(404);
    expect(theirs.body.error.type).toMatch(/\/data\/api_not_found$/);

    const { key: otherKey } = await s.createKey({ apiId: other });
    const verifyOther = await s.call("keys.verifyKey", { key: otherKey }, rootKey);
    expect(verifyOther.body.data).toStrictEqual({ valid: false, code: "NOT_FOUND" });
    const verifyMine = await s.call("keys.verifyKey", { key: mine.body.data.key }, rootKey);
    expect(verifyMine.body.data).toMatchObject({ valid: true, code: "VALID" });
  });

  it("tuples are matched literally: one action implies no other", async () => {
    const { rootKey } = await s.service.createRootKey({ permissions: ["api.*.read_key", "api.*.create_api"] });
    expect((await s.call("apis.getApi", { apiId: s.apiId }, rootKey)).status).toBe(403);
    expect((await s.call("apis.deleteApi", { apiId: s.apiId }, rootKey)).status).toBe(403);
  });

  it("a root key's permissions changed in its store count from its next request", async () => {
    const storage = memoryStorage();
    const own = await start({ storage });
    try {
      const { rootKey } = await own.service.createRootKey({ permissions: ["api.*.read_api"] });
      expect((await own.call("apis.getApi", { apiId: own.apiId }, rootKey)).status).toBe(200);
      const record = (await storage.direct.rootKeyByHash(keyHash(rootKey)))!;
      await storage.transaction((tx) => tx.put("rootKeys", { ...record, permissions: ["api.*.create_key"] }));
      expect((await own.call("apis.getApi", { apiId: own.apiId }, rootKey)).status).toBe(403);
      expect((await own.call("keys.createKey", { apiId: own.apiId }, rootKey)).status).toBe(200);
      // Another root key with the first one's permissions has a set of its own.
      const { rootKey: other } = await own.service.createRootKey({ permissions: ["api.*.read_api"] });
      expect((await own.call("apis.getApi", { apiId: own.apiId }, other)).status).toBe(200);
      expect((await own.call("apis.getApi", { apiId: own.apiId }, rootKey)).status).toBe(403);
    } finally {
      await own.close();
    }
  });

  it("createRootKey rejects malformed tuples", async () => {
    await expect(s.service.createRootKey({ permissions: ["verify_key"] })).rejects.toThrow(/invalid permission "verify_key"/);
    await expect(s.service.createRootKey({ permissions: ["verify_key"] })).rejects.toThrow(LocalServiceArgumentError);
  });
});

describe("workspace isolation", () => {
  it("another workspace's keys, APIs, permissions, roles and identities answer as not found", async () => {
    const { workspaceId } = await s.service.createWorkspace({ name: "tenant-b" });
    const { apiId: apiB } = await s.service.createApi({ workspaceId, name: "b" });
    const { rootKey: rootB } = await s.service.createRootKey({
      workspaceId,
      permissions: [
        "api.*.create_key",
        "api.*.verify_key",
        "api.*.read_key",
        "api.*.read_api",
        "rbac.*.read_permission",
        "rbac.*.create_permission",
        "rbac.*.read_role",
        "identity.*.read_identity",
      ],
    });

    const keyA = await s.createKey({ externalId: "ext_a" });
    const permA = await s.call("permissions.createPermission", { name: "a.only", slug: "a.only" });
    const roleA = await s.call("permissions.createRole", { name: "role-a" });
    const keyB = await s.call("keys.createKey", { apiId: apiB }, rootB);
    expect(keyB.status).toBe(200);

    // B cannot see A's things.
    expect((await s.call("keys.verifyKey", { key: keyA.key }, rootB)).body.data).toStrictEqual({ valid: false, code: "NOT_FOUND" });
    expect((await s.call("keys.getKey", { keyId: keyA.keyId }, rootB)).status).toBe(404);
    expect((await s.call("keys.createKey", { apiId: s.apiId }, rootB)).body.error.type).toMatch(/api_not_found$/);
    expect((await s.call("apis.getApi", { apiId: s.apiId }, rootB)).status).toBe(404);
    expect((await s.call("permissions.getPermission", { permission: permA.body.data.permissionId }, rootB)).status).toBe(404);
    expect((await s.call("permissions.getPermission", { permission: "a.only" }, rootB)).status).toBe(404);
    expect((await s.call("permissions.getRole", { role: roleA.body.data.roleId }, rootB)).status).toBe(404);
    expect((await s.call("identities.getIdentity", { identity: "ext_a" }, rootB)).status).toBe(404);
    expect((await s.call("permissions.listPermissions", {}, rootB)).body.data).toEqual([]);
    // The same slug can exist in both workspaces.
    expect((await s.call("permissions.createPermission", { name: "a.only", slug: "a.only" }, rootB)).status).toBe(200);

    // A cannot see B's key either.
    expect(await s.verify(keyB.body.data.key)).toStrictEqual({ valid: false, code: "NOT_FOUND" });
    expect((await s.call("apis.listKeys", { apiId: apiB })).status).toBe(404);
  });

  it("a disabled or expired key of another workspace answers NOT_FOUND, like any unknown key", async () => {
    const { workspaceId } = await s.service.createWorkspace();
    const { rootKey } = await s.service.createRootKey({ workspaceId, permissions: ["api.*.verify_key"] });
    const { key: disabled } = await s.createKey({ enabled: false, name: "secret-name" });
    const { key: expired } = await s.createKey({ expires: Date.now() - 1000 });
    for (const key of [disabled, expired]) {
      expect((await s.call("keys.verifyKey", { key }, rootKey)).body.data).toStrictEqual({ valid: false, code: "NOT_FOUND" });
    }
    // The owning workspace still sees the real codes.
    expect(await s.verify(disabled)).toMatchObject({ code: "DISABLED", name: "secret-name" });
    expect(await s.verify(expired)).toMatchObject({ code: "EXPIRED" });
  });

  it("a root key that may verify no API's keys gets 403 before any lookup; one that may verify another API's gets NOT_FOUND", async () => {
    const { key } = await s.createKey();
    const { rootKey: none } = await s.service.createRootKey({ permissions: ["api.*.read_key", "api.*.create_key"] });
    for (const k of [key, "sk_a_key_that_does_not_exist_at_all"]) {
      const res = await s.call("keys.verifyKey", { key: k }, none);
      expect(res.status).toBe(403);
      expect(res.body.error.type).toMatch(/\/authorization\/insufficient_permissions$/);
      expect(res.body.error.detail).toBe("Missing one of these permissions: api.*.verify_key or api.<apiId>.verify_key");
      expect(JSON.stringify(res.body)).not.toContain(k);
    }
    const { apiId: other } = await s.service.createApi({ name: "verify-elsewhere" });
    const { rootKey: elsewhere } = await s.service.createRootKey({ permissions: [`api.${other}.verify_key`] });
    const res = await s.call("keys.verifyKey", { key }, elsewhere);
    expect(res.status).toBe(200);
    expect(res.body.data).toStrictEqual({ valid: false, code: "NOT_FOUND" });
  });

  it("a root key without a grant for the key's API gets NOT_FOUND for a disabled key too", async () => {
    const { apiId } = await s.service.createApi({ name: "grant-scope" });
    const { rootKey } = await s.service.createRootKey({ permissions: [`api.${apiId}.verify_key`] });
    const { key } = await s.createKey({ enabled: false });
    expect((await s.call("keys.verifyKey", { key }, rootKey)).body.data).toStrictEqual({ valid: false, code: "NOT_FOUND" });
  });
});
