// The memory backend: the store conformance suite, plus what only memory does (pruning counters,
// loading a state, serialising transactions that await between steps).
import { describe, expect, it } from "vitest";
import { memoryStorage } from "../../../src/server/storage/memory/store";
import { describeStoreConformance } from "./store-conformance";

describeStoreConformance("memory", async () => memoryStorage());

describe("memory store", () => {
  const D = 60_000;

  it("drops counters of windows that ended, at most once a minute of service time", async () => {
    const store = memoryStorage();
    const t = Date.UTC(2025, 6, 1);
    for (let i = 0; i < 50; i++) {
      await store.direct.limit([{ counter: `ns/user_${i}/${D}`, limit: 5, duration: D, cost: 1 }], t);
    }
    expect(store.counterCount()).toBe(50);
    // One window later they still count (as the previous window).
    await store.direct.limit([{ counter: `ns/new1/${D}`, limit: 5, duration: D, cost: 1 }], t + D);
    expect(store.counterCount()).toBe(51);
    // Two full windows later they can no longer affect any decision: dropped (new1 too).
    const t1 = t + 3 * D;
    await store.direct.limit([{ counter: `ns/new2/${D}`, limit: 5, duration: D, cost: 1 }], t1);
    expect(store.counterCount()).toBe(1);
    // A 1 s window that ended is not swept again within the same minute...
    await store.direct.limit([{ counter: "ns/short/1000", limit: 5, duration: 1000, cost: 1 }], t1);
    await store.direct.limit([{ counter: `ns/new2/${D}`, limit: 5, duration: D, cost: 1 }], t1 + 5000);
    expect(store.counterCount()).toBe(2);
    // ...but once a minute later.
    await store.direct.limit([{ counter: `ns/new2/${D}`, limit: 5, duration: D, cost: 1 }], t1 + D);
    expect(store.counterCount()).toBe(1);
  });

  it("loads a state: records, indexes and the bootstrap", async () => {
    const seed = memoryStorage();
    await seed.transaction(async (tx) => {
      await tx.put("workspaces", { id: "ws_1", name: "w", createdAt: 0 });
      await tx.put("apis", { id: "api_1", workspaceId: "ws_1", name: "a", createdAt: 0 });
      await tx.put("keys", {
        id: "key_1",
        workspaceId: "ws_1",
        apiId: "api_1",
        hash: "h1",
        start: "sk",
        byteLength: 16,
        createdAt: 0,
        enabled: true,
        permissionIds: [],
        roleIds: [],
        ratelimits: [],
      });
    });
    const state = {
      version: 1 as const,
      bootstrap: { workspaceId: "ws_1", apiId: "api_1" },
      workspaces: { ws_1: (await seed.direct.get("workspaces", "ws_1"))! },
      rootKeys: {},
      apis: { api_1: (await seed.direct.get("apis", "api_1"))! },
      keys: { key_1: (await seed.direct.get("keys", "key_1"))! },
      permissions: {},
      roles: {},
      identities: {},
      ratelimitNamespaces: {},
      ratelimitOverrides: {},
      portals: {},
      portalSessions: {},
      windows: {},
    };
    const store = memoryStorage(state);
    expect((await store.direct.keyByHash("h1"))?.id).toBe("key_1");
    expect((await store.direct.find("keys", "ws_1", "apiId", "api_1")).map((k) => k.id)).toEqual(["key_1"]);
    expect(JSON.parse((await store.direct.getMeta("bootstrap"))!)).toEqual(state.bootstrap);
    // The state given is not shared with the store.
    state.keys.key_1.name = "changed";
    expect((await store.direct.get("keys", "key_1"))!.name).toBeUndefined();
  });

  it("a direct call waits for a running transaction, then sees its outcome", async () => {
    const store = memoryStorage();
    const key = {
      id: "key_w",
      workspaceId: "ws",
      apiId: "api",
      hash: "hw",
      start: "sk",
      byteLength: 16,
      createdAt: 0,
      enabled: true,
      permissionIds: [],
      roleIds: [],
      ratelimits: [],
      credits: { remaining: 5, lastRefillAt: 0 },
    };
    await store.transaction((tx) => tx.put("keys", key));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const tx = store.transaction(async (t) => {
      const cur = (await t.get("keys", key.id))!;
      await gate;
      await t.put("keys", { ...cur, credits: { remaining: 1, lastRefillAt: 0 } });
    });
    const spend = store.direct.spendCredits(key.id, 1, 1);
    release();
    await tx;
    // The spend ran after the transaction's write, so it is not lost under it.
    expect(await spend).toEqual({ ok: true, remaining: 0 });
    expect((await store.direct.get("keys", key.id))!.credits!.remaining).toBe(0);
  });

  it("a transaction cannot be used after it ended", async () => {
    const store = memoryStorage();
    let leaked: Parameters<Parameters<typeof store.transaction>[0]>[0] | undefined;
    await store.transaction(async (tx) => {
      leaked = tx;
    });
    await expect(leaked!.get("keys", "x")).rejects.toThrow(/after it ended/);
  });
});
