// ratelimit.*: namespaces created on first use (with create_namespace), overrides (set, get,
// list, delete, and how they apply to limit and multiLimit), and multiLimit's bare array body.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock, start, type Started } from "../helpers";

let s: Started;
const clock = manualClock();
beforeAll(async () => {
  s = await start({ now: clock.now });
});
afterAll(() => s.close());

const W = 60_000;
let n = 0;
/** A namespace name no other test uses. */
const fresh = (label: string) => `${label}.${++n}`;
const rootWith = async (...permissions: string[]) => (await s.service.createRootKey({ permissions })).rootKey;
/** Creates the namespace by using it once (with the bootstrap root key, which may create namespaces). */
async function namespace(name: string): Promise<void> {
  expect((await s.call("ratelimit.limit", { namespace: name, identifier: "__create__", limit: 1, duration: W })).status).toBe(200);
}

describe("ratelimit.limit: namespaces", () => {
  it("a new namespace needs ratelimit.*.create_namespace: 403 without it, and nothing is created", async () => {
    const name = fresh("email");
    const limitOnly = await rootWith("ratelimit.*.limit");
    const body = { namespace: name, identifier: "u1", limit: 2, duration: W };
    const denied = await s.call("ratelimit.limit", body, limitOnly);
    expect(denied.status).toBe(403);
    expect(denied.body.error).toMatchObject({
      title: "Insufficient Permissions",
      detail: "Missing permission: 'ratelimit.*.create_namespace'",
    });
    expect(denied.body.error.type).toMatch(/\/authorization\/insufficient_permissions$/);
    // Still missing: the override operations answer 404 for it.
    const missing = await s.call("ratelimit.listOverrides", { namespace: name });
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({ detail: "This namespace does not exist." });
    expect(missing.body.error.type).toMatch(/\/data\/ratelimit_namespace_not_found$/);

    // The bootstrap root key holds create_namespace: the namespace is created, then limit-only keys use it.
    expect((await s.call("ratelimit.limit", body)).body.data).toMatchObject({ success: true, remaining: 1 });
    expect((await s.call("ratelimit.limit", body, limitOnly)).body.data).toMatchObject({ success: true, remaining: 0 });
    expect((await s.call("ratelimit.listOverrides", { namespace: name })).status).toBe(200);
  });

  it("ratelimit.<namespaceId>.limit grants one namespace (by its id, never its name); the id and the name share counters", async () => {
    const name = `api_${++n}`;
    await s.call("ratelimit.limit", { namespace: name, identifier: "warmup", limit: 1, duration: W });
    const { data } = (await s.call("ratelimit.setOverride", { namespace: name, identifier: "x", limit: 1, duration: W })).body;
    expect(data.overrideId).toMatch(/^rlor_/);
    // Find the namespace id through the state: it is the only one with this name.
    const state = await s.service.exportState();
    const ns = Object.values(state.ratelimitNamespaces).find((r) => r.name === name)!;
    expect(ns.id).toMatch(/^rlns_/);
    const byId = await rootWith(`ratelimit.${ns.id}.limit`);
    const byName = await rootWith(`ratelimit.${name}.limit`);
    const body = { identifier: "u", limit: 2, duration: W };
    expect((await s.call("ratelimit.limit", { namespace: name, ...body }, byId)).body.data).toMatchObject({ success: true, remaining: 1 });
    expect((await s.call("ratelimit.limit", { namespace: ns.id, ...body }, byId)).body.data).toMatchObject({ success: true, remaining: 0 });
    const denied = await s.call("ratelimit.limit", { namespace: name, ...body }, byName);
    expect(denied.status).toBe(403);
    expect(denied.body.error.detail).toBe(`Missing one of these permissions: ratelimit.${ns.id}.limit or ratelimit.*.limit`);
  });
});

describe("ratelimit overrides", () => {
  it("setOverride upserts by identifier; limit then uses the override's limit and window, and says which", async () => {
    clock.t = Date.UTC(2025, 6, 1);
    const name = fresh("ovr");
    await namespace(name);
    const set = await s.call("ratelimit.setOverride", { namespace: name, identifier: "user_1", limit: 5, duration: 2 * W });
    expect(set.status).toBe(200);
    const { overrideId } = set.body.data;
    expect(overrideId).toMatch(/^rlor_/);
    const again = await s.call("ratelimit.setOverride", { namespace: name, identifier: "user_1", limit: 1, duration: 3 * W });
    expect(again.body.data).toEqual({ overrideId });
    const r = (await s.call("ratelimit.limit", { namespace: name, identifier: "user_1", limit: 100, duration: W })).body.data;
    expect(r).toEqual({ limit: 1, remaining: 0, reset: (Math.floor(clock.t / (3 * W)) + 1) * 3 * W, success: true, overrideId });
    expect((await s.call("ratelimit.limit", { namespace: name, identifier: "user_1", limit: 100, duration: W })).body.data.success).toBe(
      false,
    );
    // Another identifier: the request's own limit, no overrideId.
    const other = (await s.call("ratelimit.limit", { namespace: name, identifier: "user_2", limit: 100, duration: W })).body.data;
    expect(other).toEqual({ limit: 100, remaining: 99, reset: (Math.floor(clock.t / W) + 1) * W, success: true });
  });

  it("an exact override wins over a pattern; patterns match with * anywhere; limit 0 rejects", async () => {
    const name = fresh("wild");
    await namespace(name);
    const set = async (identifier: string, limit: number) =>
      (await s.call("ratelimit.setOverride", { namespace: name, identifier, limit, duration: W })).body.data.overrideId as string;
    const premium = await set("premium_*", 50);
    const exact = await set("premium_7", 3);
    const blocked = await set("*@spam.example", 0);
    const limit = (identifier: string) =>
      s.call("ratelimit.limit", { namespace: name, identifier, limit: 10, duration: W }).then((r) => r.body.data);
    expect(await limit("premium_1")).toMatchObject({ limit: 50, overrideId: premium, success: true });
    expect(await limit("premium_")).toMatchObject({ limit: 50, overrideId: premium });
    expect(await limit("premium_7")).toMatchObject({ limit: 3, overrideId: exact });
    expect(await limit("a@spam.example")).toMatchObject({ limit: 0, overrideId: blocked, success: false });
    expect(await limit("xpremium_1")).not.toHaveProperty("overrideId");
    expect(await limit("premium")).not.toHaveProperty("overrideId");

    // getOverride resolves the same way; deleteOverride only takes the identifier exactly as set.
    const get = (identifier: string) => s.call("ratelimit.getOverride", { namespace: name, identifier });
    expect((await get("premium_42")).body.data).toEqual({ overrideId: premium, duration: W, identifier: "premium_*", limit: 50 });
    expect((await get("premium_7")).body.data).toEqual({ overrideId: exact, duration: W, identifier: "premium_7", limit: 3 });
    const none = await get("basic_1");
    expect(none.status).toBe(404);
    expect(none.body.error).toMatchObject({ detail: "This override does not exist." });
    expect(none.body.error.type).toMatch(/\/data\/ratelimit_override_not_found$/);
    const notExact = await s.call("ratelimit.deleteOverride", { namespace: name, identifier: "premium_42" });
    expect(notExact.status).toBe(404);
    expect(notExact.body.error.type).toMatch(/ratelimit_override_not_found$/);
    expect((await s.call("ratelimit.deleteOverride", { namespace: name, identifier: "premium_*" })).body.data).toEqual({});
    expect(await limit("premium_2")).not.toHaveProperty("overrideId");
    expect((await get("premium_2")).status).toBe(404);
  });

  it("listOverrides pages by id (default 50), cursor = the next page's first id", async () => {
    const name = fresh("list");
    await namespace(name);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(
        (await s.call("ratelimit.setOverride", { namespace: name, identifier: `u${i}`, limit: i, duration: 1000 + i })).body.data
          .overrideId,
      );
    }
    ids.sort();
    const all = (await s.call("ratelimit.listOverrides", { namespace: name })).body;
    expect(all.data.map((o: { overrideId: string }) => o.overrideId)).toEqual(ids);
    expect(all.data[0]).toEqual({ overrideId: ids[0], duration: 1000, identifier: "u0", limit: 0 });
    expect(all.pagination).toEqual({ hasMore: false });
    const p1 = (await s.call("ratelimit.listOverrides", { namespace: name, limit: 2 })).body;
    expect(p1.data.map((o: { overrideId: string }) => o.overrideId)).toEqual(ids.slice(0, 2));
    expect(p1.pagination).toEqual({ cursor: ids[2], hasMore: true });
    const p2 = (await s.call("ratelimit.listOverrides", { namespace: name, limit: 2, cursor: p1.pagination.cursor })).body;
    expect(p2.data.map((o: { overrideId: string }) => o.overrideId)).toEqual(ids.slice(2, 4));
  });

  it("a missing namespace is 404 before any permission check; no override operation creates one", async () => {
    const nobody = await rootWith("api.*.read_api");
    for (const [op, body] of [
      ["ratelimit.setOverride", { identifier: "u", limit: 1, duration: 1000 }],
      ["ratelimit.getOverride", { identifier: "u" }],
      ["ratelimit.listOverrides", {}],
      ["ratelimit.deleteOverride", { identifier: "u" }],
    ] as const) {
      for (const key of [undefined, nobody]) {
        const res = await s.call(op, { namespace: "never.used", ...body }, key);
        expect(res.status, op).toBe(404);
        expect(res.body.error.type, op).toMatch(/ratelimit_namespace_not_found$/);
      }
    }
    expect(Object.values((await s.service.exportState()).ratelimitNamespaces).some((r) => r.name === "never.used")).toBe(false);
  });

  it("permissions: set, list and delete answer 403; get hides the override behind the same 404 as a missing one", async () => {
    const name = fresh("perm");
    await namespace(name);
    await s.call("ratelimit.setOverride", { namespace: name, identifier: "u", limit: 1, duration: 1000 });
    const nobody = await rootWith("ratelimit.*.limit");
    const set = await s.call("ratelimit.setOverride", { namespace: name, identifier: "u", limit: 1, duration: 1000 }, nobody);
    expect(set.status).toBe(403);
    expect(set.body.error.detail).toMatch(
      /^Missing one of these permissions: ratelimit\.rlns_\w+\.set_override or ratelimit\.\*\.set_override$/,
    );
    expect((await s.call("ratelimit.listOverrides", { namespace: name }, nobody)).status).toBe(403);
    expect((await s.call("ratelimit.deleteOverride", { namespace: name, identifier: "u" }, nobody)).status).toBe(403);
    const hidden = await s.call("ratelimit.getOverride", { namespace: name, identifier: "u" }, nobody);
    const missing = await s.call("ratelimit.getOverride", { namespace: name, identifier: "nope" });
    expect(hidden.status).toBe(404);
    expect(hidden.body.error).toEqual(missing.body.error);
    const reader = await rootWith("ratelimit.*.read_override");
    expect((await s.call("ratelimit.getOverride", { namespace: name, identifier: "u" }, reader)).status).toBe(200);
  });

  it("validates as production: limit >= 0, duration >= 1000 without maximum, namespace and identifier 1..512", async () => {
    const name = fresh("val");
    await namespace(name);
    const ok = await s.call("ratelimit.setOverride", { namespace: name, identifier: "u", limit: 0, duration: 90 * 24 * 3600 * 1000 });
    expect(ok.status).toBe(200);
    for (const bad of [
      { namespace: name, identifier: "u", limit: -1, duration: 1000 },
      { namespace: name, identifier: "u", limit: 1, duration: 999 },
      { namespace: name, identifier: "", limit: 1, duration: 1000 },
      { namespace: name, identifier: "x".repeat(513), limit: 1, duration: 1000 },
      { namespace: name, identifier: "u", limit: 1 },
      { namespace: name, identifier: "u", limit: 1, duration: 1000, extra: true },
    ]) {
      const res = await s.call("ratelimit.setOverride", bad);
      expect(res.status, JSON.stringify(bad).slice(0, 80)).toBe(400);
      expect(res.body.error.type).toMatch(/invalid_input$/);
    }
  });
});

describe("ratelimit.multiLimit", () => {
  it("takes a bare array; all or nothing: when one limit fails none is charged, each item says whether it passed", async () => {
    clock.t = Date.UTC(2025, 7, 1);
    const a = fresh("multi-a");
    const b = fresh("multi-b");
    const items = [
      { namespace: a, identifier: "u", limit: 3, duration: W },
      { namespace: b, identifier: "u", limit: 1, duration: W, cost: 1 },
    ];
    const first = await s.call("ratelimit.multiLimit", items);
    expect(first.status).toBe(200);
    const reset = (Math.floor(clock.t / W) + 1) * W;
    expect(first.body.data).toEqual({
      passed: true,
      limits: [
        { namespace: a, identifier: "u", limit: 3, remaining: 2, reset, passed: true },
        { namespace: b, identifier: "u", limit: 1, remaining: 0, reset, passed: true },
      ],
    });
    const second = (await s.call("ratelimit.multiLimit", items)).body.data;
    expect(second.passed).toBe(false);
    // a would pass on its own: it says so, and was not charged (remaining still 2 after this call).
    expect(second.limits).toEqual([
      { namespace: a, identifier: "u", limit: 3, remaining: 2, reset, passed: true },
      { namespace: b, identifier: "u", limit: 1, remaining: 0, reset, passed: false },
    ]);
    expect((await s.call("ratelimit.limit", items[0]!)).body.data).toMatchObject({ success: true, remaining: 1 });
  });

  it("applies overrides per item and echoes each namespace as sent (name or id)", async () => {
    const name = fresh("multi-ovr");
    await namespace(name);
    const overrideId = (await s.call("ratelimit.setOverride", { namespace: name, identifier: "vip_*", limit: 7, duration: W })).body.data
      .overrideId;
    const nsId = Object.values((await s.service.exportState()).ratelimitNamespaces).find((r) => r.name === name)!.id;
    const res = await s.call("ratelimit.multiLimit", [
      { namespace: nsId, identifier: "vip_1", limit: 1, duration: W },
      { namespace: name, identifier: "regular", limit: 1, duration: W },
    ]);
    expect(res.body.data.limits).toEqual([
      expect.objectContaining({ namespace: nsId, identifier: "vip_1", limit: 7, remaining: 6, passed: true, overrideId }),
      expect.not.objectContaining({ overrideId: expect.anything() }),
    ]);
    expect(res.body.data.limits[1]).toMatchObject({ namespace: name, limit: 1, remaining: 0 });
  });

  it("refuses a body that is not an array of 1..100 limit requests", async () => {
    const one = { namespace: "n", identifier: "i", limit: 1, duration: W };
    for (const bad of [
      {},
      [],
      one,
      Array.from({ length: 101 }, () => one),
      [{ ...one, duration: 2_592_000_001 }],
      [{ ...one, extra: 1 }],
      [one, "x"],
    ]) {
      const res = await s.call("ratelimit.multiLimit", bad);
      expect(res.status, JSON.stringify(bad).slice(0, 60)).toBe(400);
      expect(res.body.error.type).toMatch(/invalid_input$/);
      expect(res.body.error.errors.length).toBeGreaterThan(0);
    }
  });

  it("needs ratelimit.*.limit, or the limit permission of every namespace; create_namespace for new ones", async () => {
    const a = fresh("mp-a");
    const b = fresh("mp-b");
    await namespace(a);
    await namespace(b);
    const ids = Object.fromEntries(Object.values((await s.service.exportState()).ratelimitNamespaces).map((r) => [r.name, r.id]));
    const body = [a, b].map((namespace) => ({ namespace, identifier: "u", limit: 5, duration: W }));
    const both = await rootWith(`ratelimit.${ids[a]}.limit`, `ratelimit.${ids[b]}.limit`);
    const onlyA = await rootWith(`ratelimit.${ids[a]}.limit`);
    expect((await s.call("ratelimit.multiLimit", body, both)).body.data.passed).toBe(true);
    const denied = await s.call("ratelimit.multiLimit", body, onlyA);
    expect(denied.status).toBe(403);
    expect(denied.body.error.detail).toBe(
      `Missing one of these permissions: ratelimit.*.limit or ratelimit.${ids[a]}.limit and ratelimit.${ids[b]}.limit`,
    );
    const newOne = await s.call(
      "ratelimit.multiLimit",
      [...body, { namespace: fresh("mp-new"), identifier: "u", limit: 1, duration: W }],
      both,
    );
    expect(newOne.status).toBe(403);
    expect(newOne.body.error.detail).toBe("Missing permission: 'ratelimit.*.create_namespace'");
  });
});
