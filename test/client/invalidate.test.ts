// createClient({ invalidate }): key changes made through the client announce themselves, so every
// apiKeyAuth() sharing the store forgets the key (by keyId), or everything after a permission,
// role or API is deleted. Against the real local key service.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import request from "supertest";
import express from "express";
import { createClient, KeyServiceConfigError } from "keyguard/client";
import { apiKeyAuth, memoryStore, silentLogger, type InvalidationMessage } from "keyguard";
import { startService, type ServiceFixture } from "../middleware/helpers";
import { GENEROUS } from "../support/time-limits";

let fx: ServiceFixture;
beforeAll(async () => {
  fx = await startService();
});
afterAll(() => fx.close());

function announcing() {
  const store = memoryStore();
  const heard: InvalidationMessage[] = [];
  store.subscribe((m) => heard.push(m));
  const client = createClient({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, logger: silentLogger, retry: false, invalidate: store });
  return { store, heard, client };
}

describe("createClient({ invalidate })", () => {
  it("announces the keyId after each key change, once the service accepted it", async () => {
    const { heard, client } = announcing();
    const { keyId } = await fx.createKeyWithId();
    await client.permissions.createPermission({ name: "docs.read", slug: "docs.read" });
    await client.permissions.createRole({ name: "editor" });
    await client.keys.updateKey({ keyId, name: "renamed" });
    await client.keys.updateCredits({ keyId, operation: "set", value: 10 });
    await client.keys.addPermissions({ keyId, permissions: ["docs.read"] });
    await client.keys.removePermissions({ keyId, permissions: ["docs.read"] });
    await client.keys.setPermissions({ keyId, permissions: ["docs.read"] });
    await client.keys.addRoles({ keyId, roles: ["editor"] });
    await client.keys.removeRoles({ keyId, roles: ["editor"] });
    await client.keys.setRoles({ keyId, roles: ["editor"] });
    await client.keys.rerollKey({ keyId, expiration: 0 });
    expect(heard).toEqual(Array(9).fill({ v: 1, kind: "keyId", keyId }));
    const other = await fx.createKeyWithId();
    await client.keys.deleteKey({ keyId: other.keyId });
    expect(heard.at(-1)).toEqual({ v: 1, kind: "keyId", keyId: other.keyId });
  });

  it("announces everything after a permission or role is deleted; nothing for reads, verifications or failed calls", async () => {
    const { heard, client } = announcing();
    const key = await fx.createKey();
    await client.keys.verifyKey({ key });
    await client.apis.getApi({ apiId: fx.svc.apiId });
    await expect(client.keys.deleteKey({ keyId: "key_does_not_exist" })).rejects.toMatchObject({ status: 404 });
    expect(heard).toEqual([]);
    await client.permissions.createPermission({ name: "gone", slug: "gone" });
    await client.permissions.deletePermission({ permission: "gone" });
    const role = await client.permissions.createRole({ name: "gone-role" });
    await client.permissions.deleteRole({ role: role.roleId });
    expect(heard).toEqual([
      { v: 1, kind: "all" },
      { v: 1, kind: "all" },
    ]);
  });

  it("the apiKeyAuth() on the same store stops admitting a deleted key at once", async () => {
    const { store, client } = announcing();
    const auth = apiKeyAuth({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, store, logger: silentLogger, ...GENEROUS });
    const app = express().get("/", auth, (_req, res) => res.send("ok"));
    const { key, keyId } = await fx.createKeyWithId();
    expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
    await client.keys.deleteKey({ keyId });
    expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(401);
  });

  it("refuses an invalidate option without an invalidate() method", () => {
    expect(() => createClient({ rootKey: "root", logger: silentLogger, invalidate: {} as never })).toThrow(KeyServiceConfigError);
    expect(() => createClient({ rootKey: "root", logger: silentLogger, invalidate: {} as never })).toThrow(
      /invalid option invalidate = an object\. Pass an object with an invalidate\(message\) method/,
    );
  });
});
