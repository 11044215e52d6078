// keyguard's own operations: rootKeys.createRootKey / listRootKeys / deleteRootKey and
// apis.listApis, over HTTP with root keys of chosen permissions.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { start, type Started } from "../helpers";

let s: Started;
beforeAll(async () => {
  s = await start();
});
afterAll(async () => {
  await s.close();
});

async function rootKeyWith(permissions: string[], name?: string): Promise<{ keyId: string; key: string }> {
  const res = await s.call("rootKeys.createRootKey", { permissions, ...(name ? { name } : {}) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

describe("rootKeys.*", () => {
  it("creates a root key that works at once with exactly its permissions, answered once and listed without the key", async () => {
    const name = `reader-${Math.random().toString(36).slice(2)}`;
    const created = await rootKeyWith(["api.*.read_api"], name);
    expect(created.keyId).toMatch(/^rk_/);
    expect(created.key).toMatch(/^root_/);
    expect((await s.call("apis.getApi", { apiId: s.apiId }, created.key)).status).toBe(200);
    const refused = await s.call("apis.createApi", { name: "not allowed" }, created.key);
    expect(refused.status).toBe(403);
    expect(refused.body.error.detail).toContain("api.*.create_api");

    const listed = await s.call("rootKeys.listRootKeys", {});
    expect(listed.status).toBe(200);
    const mine = listed.body.data.find((k: { keyId: string }) => k.keyId === created.keyId);
    expect(mine).toMatchObject({ keyId: created.keyId, name, permissions: ["api.*.read_api"] });
    expect(JSON.stringify(listed.body)).not.toContain(created.key);
  });

  it("refuses to grant a permission the caller does not hold", async () => {
    const limited = await rootKeyWith(["workspace.*.create_root_key", "api.*.read_api"]);
    const res = await s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api", "api.*.delete_api"] }, limited.key);
    expect(res.status).toBe(403);
    expect(res.body.error.detail).toBe(
      "A root key can only grant permissions it holds itself; this one lacks those of body.permissions[1]",
    );
    expect((await s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"] }, limited.key)).status).toBe(200);
  });

  it("checks the permission tuples and needs the rootKeys permissions", async () => {
    const bad = await s.call("rootKeys.createRootKey", { permissions: ["not a tuple"] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.detail).toContain("permissions[0]");
    const empty = await s.call("rootKeys.createRootKey", { permissions: [] });
    expect(empty.status).toBe(400);
    const plain = await rootKeyWith(["api.*.read_api"]);
    for (const [op, body, perm] of [
      ["rootKeys.createRootKey", { permissions: ["api.*.read_api"] }, "workspace.*.create_root_key"],
      ["rootKeys.listRootKeys", {}, "workspace.*.read_root_key"],
      ["rootKeys.deleteRootKey", { keyId: plain.keyId }, "workspace.*.delete_root_key"],
    ] as const) {
      const res = await s.call(op, body, plain.key);
      expect(res.status, op).toBe(403);
      expect(res.body.error.detail).toContain(perm);
    }
  });

  it("deletes a root key (it stops working), but not the one making the request nor another workspace's", async () => {
    const doomed = await rootKeyWith(["api.*.read_api"]);
    expect((await s.call("rootKeys.deleteRootKey", { keyId: doomed.keyId })).status).toBe(200);
    expect((await s.call("apis.getApi", { apiId: s.apiId }, doomed.key)).status).toBe(401);
    const again = await s.call("rootKeys.deleteRootKey", { keyId: doomed.keyId });
    expect(again.status).toBe(404);

    const deleter = await rootKeyWith(["workspace.*.delete_root_key"]);
    const self = await s.call("rootKeys.deleteRootKey", { keyId: deleter.keyId }, deleter.key);
    expect(self.status).toBe(400);
    expect(self.body.error.detail).toContain("cannot delete itself");

    const other = await s.service.createWorkspace({ name: "other" });
    const foreign = await s.service.createRootKey({ workspaceId: other.workspaceId, permissions: ["api.*.read_api"] });
    const listed = await s.call("rootKeys.listRootKeys", {}, foreign.rootKey);
    expect(listed.status).toBe(403);
    const own = await s.call("rootKeys.listRootKeys", {});
    const ids: string[] = own.body.data.map((k: { keyId: string }) => k.keyId);
    const foreignRecords = Object.values((await s.service.exportState()).rootKeys).filter((r) => r.workspaceId === other.workspaceId);
    expect(foreignRecords.length).toBeGreaterThan(0);
    for (const r of foreignRecords) {
      expect(ids).not.toContain(r.id);
      expect((await s.call("rootKeys.deleteRootKey", { keyId: r.id })).status).toBe(404);
    }
  });
});

describe("a weaker root key never removes a stronger one", () => {
  it("deletes only root keys whose permissions it holds itself (or through their wildcard form)", async () => {
    const weak = await rootKeyWith(["workspace.*.delete_root_key", "workspace.*.read_root_key"]);
    const bootstrapId = (await s.call("rootKeys.listRootKeys", {})).body.data.find((k: { permissions: string[] }) =>
      k.permissions.includes("api.*.create_api"),
    ).keyId;
    const stronger = await rootKeyWith(["api.*.read_api"]);
    for (const keyId of [bootstrapId, stronger.keyId]) {
      const res = await s.call("rootKeys.deleteRootKey", { keyId }, weak.key);
      expect(res.status).toBe(403);
      expect(res.body.error.type).toMatch(/\/authorization\/insufficient_permissions$/);
      expect(res.body.error.detail).toMatch(/^A root key can only delete root keys whose permissions it holds itself; this one lacks: /);
    }
    // Both still work: nothing was deleted.
    expect((await s.call("apis.getApi", { apiId: s.apiId })).status).toBe(200);
    expect((await s.call("apis.getApi", { apiId: s.apiId }, stronger.key)).status).toBe(200);

    // A key with the same or fewer permissions (a wildcard covers an API's own tuple) may go.
    const equal = await rootKeyWith(["workspace.*.read_root_key"]);
    expect((await s.call("rootKeys.deleteRootKey", { keyId: equal.keyId }, weak.key)).status).toBe(200);
    const scoped = await rootKeyWith(["api.*.read_api", "workspace.*.delete_root_key"]);
    const narrower = await rootKeyWith([`api.${s.apiId}.read_api`]);
    expect((await s.call("rootKeys.deleteRootKey", { keyId: narrower.keyId }, scoped.key)).status).toBe(200);
    // A missing key is still 404 (not 403), whatever the caller holds.
    expect((await s.call("rootKeys.deleteRootKey", { keyId: narrower.keyId }, weak.key)).status).toBe(404);
  });
});

describe("apis.listApis", () => {
  it("lists the workspace's APIs the root key may read, paginated", async () => {
    const names = ["list-a", "list-b", "list-c"].map((n) => `${n}-${Math.random().toString(36).slice(2)}`);
    const ids: string[] = [];
    for (const name of names) ids.push((await s.call("apis.createApi", { name })).body.data.apiId);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 50; i++) {
      const res = await s.call("apis.listApis", { limit: 2, ...(cursor ? { cursor } : {}) });
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data.map((a: { id: string }) => a.id));
      if (!res.body.pagination.hasMore) break;
      cursor = res.body.pagination.cursor;
    }
    expect(seen).toEqual(expect.arrayContaining([s.apiId, ...ids]));
    expect(new Set(seen).size).toBe(seen.length);

    const one = await rootKeyWith([`api.${ids[1]}.read_api`]);
    const scoped = await s.call("apis.listApis", {}, one.key);
    expect(scoped.body.data).toEqual([expect.objectContaining({ id: ids[1], name: names[1] })]);
  });
});
