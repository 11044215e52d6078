// exportState and importState: the whole state of any store as JSON (hashes only), and back into
// an empty store, where every key, root key and relation keeps working.
import { describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import { LocalServiceArgumentError, exportState, importState, memoryStorage } from "keyguard/server";
import { storeUnderTest } from "../../support/store-under-test";
import { start } from "../helpers";

describe("exportState / importState", () => {
  it("a state exported from one store and imported into an empty one serves the same keys", async () => {
    const source = (await storeUnderTest()) ?? memoryStorage();
    const a = await start({ store: source, rootKey: "root_exportImport1_4f1c9e27b8a35d60e2b7c41f9a0d8e36" });
    const { key, keyId } = await a.createKey({
      credits: { remaining: 5 },
      externalId: "user_x",
      permissions: ["docs.read"],
      ratelimits: [{ name: "rpm", limit: 10, duration: 60_000, autoApply: true }],
    });
    await a.call("permissions.createRole", { name: "reader", permissions: ["docs.read"] });
    await a.call("keys.addRoles", { keyId, roles: ["reader"] });
    const hook = await a.call("webhooks.createEndpoint", { url: "https://hooks.example.com/keyguard", events: ["key.created"] });
    expect(hook.status).toBe(200);
    const { workspaceId } = await a.service.createWorkspace({ name: "second" });
    await a.service.createApi({ workspaceId, name: "other" });
    expect(await a.verify(key)).toMatchObject({ code: "VALID", credits: 4 });
    await a.close();

    const state = await exportState(source);
    expect(state.bootstrap).toEqual({ workspaceId: a.workspaceId, apiId: a.apiId });
    expect(Object.keys(state.workspaces).sort()).toEqual([a.workspaceId, workspaceId].sort());
    expect(
      Object.values(state.apis)
        .map((x) => x.name)
        .sort(),
    ).toEqual(["default", "other"]);
    expect(state.keys[keyId]).toMatchObject({ credits: { remaining: 4 }, identityId: expect.stringMatching(/^id_/) });
    expect(state.windows).toEqual({});
    expect(Object.keys(state.webhookEndpoints ?? {})).toEqual([hook.body.data.endpointId]);
    const text = JSON.stringify(state);
    for (const secret of [key, "root_exportImport1_4f1c9e27b8a35d60e2b7c41f9a0d8e36"]) expect(text).not.toContain(secret);
    await source.close();

    const target = memoryStorage();
    await importState(target, JSON.parse(text));
    const b = await start({ store: target, rootKey: "root_exportImport1_4f1c9e27b8a35d60e2b7c41f9a0d8e36" });
    expect(b.service.restored).toBe(true);
    expect([b.workspaceId, b.apiId]).toEqual([a.workspaceId, a.apiId]);
    expect(await b.verify(key, { permissions: "docs.read" })).toMatchObject({
      code: "VALID",
      credits: 3,
      roles: ["reader"],
      identity: { externalId: "user_x" },
    });
    expect(await exportState(target)).toMatchObject({
      workspaces: state.workspaces,
      apis: state.apis,
      roles: state.roles,
      webhookEndpoints: state.webhookEndpoints,
    });
    // The endpoint came along, its secret as it was stored (never answered again).
    const endpoints = (await b.call("webhooks.listEndpoints", {})).body.data as Array<Record<string, unknown>>;
    expect(endpoints.map((e) => [e.endpointId, e.url])).toEqual([[hook.body.data.endpointId, "https://hooks.example.com/keyguard"]]);
    expect(JSON.stringify(endpoints)).not.toContain(hook.body.data.secret);
    await b.close();
  });

  it("importState refuses a store that already holds a state, and keeps nothing of the attempt", async () => {
    const store = memoryStorage();
    const s = await start({ store });
    const before = await exportState(store);
    const other = { ...before, apis: { api_new: { id: "api_new", workspaceId: s.workspaceId, name: "new", createdAt: 0 } } };
    await expect(importState(store, other)).rejects.toThrow(LocalServiceArgumentError);
    await expect(importState(store, other)).rejects.toThrow(/not empty/);
    expect(await exportState(store)).toEqual(before);
    await s.close();
  });

  it("two services starting together on one empty store share one bootstrap", async () => {
    const store = memoryStorage();
    const [x, y] = await Promise.all([start({ store, logger: silentLogger }), start({ store, logger: silentLogger })]);
    expect(y.workspaceId).toBe(x.workspaceId);
    expect(y.apiId).toBe(x.apiId);
    expect(Object.keys((await exportState(store)).workspaces)).toEqual([x.workspaceId]);
    await Promise.all([x.close(), y.close()]);
  });
});
