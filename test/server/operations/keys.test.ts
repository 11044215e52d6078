// keys.* operations other than verifyKey: create (both credit shapes), get, whoami, update,
// delete, updateCredits, permissions and roles of a key, reroll.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock, start, type Started } from "../helpers";

let s: Started;
const clock = manualClock();
beforeAll(async () => {
  s = await start({ now: clock.now });
});
afterAll(() => s.close());

describe("keys.createKey", () => {
  it("generates prefix_ + base58 of byteLength bytes, with start = prefix + 4 characters", async () => {
    const { keyId, key } = await s.createKey({ prefix: "live", byteLength: 32 });
    expect(keyId).toMatch(/^key_/);
    expect(key).toMatch(/^live_[1-9A-HJ-NP-Za-km-z]{40,45}$/);
    const info = (await s.call("keys.getKey", { keyId })).body.data;
    expect(info.start).toBe(key.slice(0, "live_".length + 4));
    const plain = await s.createKey();
    expect(plain.key).toMatch(/^[1-9A-HJ-NP-Za-km-z]{20,23}$/); // 16 bytes
  });

  it("accepts flat remaining/refill and nested credits, not both", async () => {
    const flat = await s.createKey({ remaining: 7, refill: { interval: "daily", amount: 7 } });
    const nested = await s.createKey({ credits: { remaining: 7, refill: { interval: "daily", amount: 7 } } });
    for (const { keyId } of [flat, nested]) {
      const info = (await s.call("keys.getKey", { keyId })).body.data;
      expect(info.credits).toEqual({ remaining: 7, refill: { interval: "daily", amount: 7 } });
    }
    const both = await s.call("keys.createKey", { apiId: s.apiId, remaining: 1, credits: { remaining: 1 } });
    expect(both.status).toBe(400);
    expect(both.body.error.errors[0].location).toBe("body.credits");
  });

  it("monthly refill without refillDay → 400; refill without remaining → 400", async () => {
    for (const body of [
      { credits: { remaining: 1, refill: { interval: "monthly", amount: 1 } } },
      { remaining: 1, refill: { interval: "monthly", amount: 1 } },
      { refill: { interval: "daily", amount: 1 } },
      { credits: { remaining: null, refill: { interval: "daily", amount: 1 } } },
    ]) {
      const res = await s.call("keys.createKey", { apiId: s.apiId, ...body });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
  });

  it("credits.remaining null means unlimited", async () => {
    const { keyId } = await s.createKey({ credits: { remaining: null } });
    expect((await s.call("keys.getKey", { keyId })).body.data).not.toHaveProperty("credits");
  });

  it("unknown API → 404 api_not_found; unknown role → 404 role_not_found; missing permissions are created", async () => {
    const noApi = await s.call("keys.createKey", { apiId: "api_missing" });
    expect(noApi.status).toBe(404);
    expect(noApi.body.error.type).toMatch(/\/data\/api_not_found$/);
    const noRole = await s.call("keys.createKey", { apiId: s.apiId, roles: ["ghost"] });
    expect(noRole.status).toBe(404);
    expect(noRole.body.error.type).toMatch(/\/data\/role_not_found$/);
    await s.createKey({ permissions: ["brand.new"] });
    expect((await s.call("permissions.getPermission", { permission: "brand.new" })).body.data).toMatchObject({
      slug: "brand.new",
      name: "brand.new",
    });
  });

  it("validates prefix, byteLength, ratelimit duration and duplicate names", async () => {
    for (const body of [
      { prefix: "has-dash" },
      { prefix: "x".repeat(17) },
      { byteLength: 15 },
      { byteLength: 256 },
      { ratelimits: [{ name: "aaa", limit: 1, duration: 999, autoApply: false }] },
      {
        ratelimits: [
          { name: "aaa", limit: 1, duration: 1000, autoApply: false },
          { name: "aaa", limit: 2, duration: 1000, autoApply: false },
        ],
      },
      { permissions: ["has space"] },
      { meta: [] },
    ]) {
      const res = await s.call("keys.createKey", { apiId: s.apiId, ...body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.errors.length).toBeGreaterThan(0);
    }
  });
});

describe("keys.getKey, keys.whoami, apis.listKeys", () => {
  it("return the key's info without the key, omitting absent fields", async () => {
    const { keyId, key } = await s.createKey({ name: "n", meta: { a: 1 }, externalId: "who", expires: clock.t + 1e6 });
    const got = (await s.call("keys.getKey", { keyId, decrypt: false })).body.data;
    expect(got).toEqual({
      keyId,
      start: key.slice(0, 4),
      enabled: true,
      name: "n",
      meta: { a: 1 },
      createdAt: clock.t,
      expires: clock.t + 1e6,
      identity: { id: expect.stringMatching(/^id_/), externalId: "who" },
    });
    expect(JSON.stringify(got)).not.toContain(key);
    expect((await s.call("keys.whoami", { key })).body.data).toEqual(got);
    expect((await s.call("keys.whoami", { key: "nope" })).status).toBe(404);
    expect((await s.call("keys.getKey", { keyId: "key_nope" })).body.error.type).toMatch(/\/data\/key_not_found$/);
  });

  it("listKeys pages and filters by externalId", async () => {
    const { apiId } = await s.service.createApi({ name: "list" });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await s.createKey({ apiId, externalId: i % 2 ? "odd" : "even" })).keyId);
    const p1 = await s.call("apis.listKeys", { apiId, limit: 2 });
    expect(p1.body.data.map((k: { keyId: string }) => k.keyId)).toEqual(ids.slice(0, 2));
    expect(p1.body.pagination).toEqual({ cursor: ids[2], hasMore: true });
    const p3 = await s.call("apis.listKeys", { apiId, limit: 2, cursor: ids[4] });
    expect(p3.body.pagination).toEqual({ hasMore: false });
    const odd = await s.call("apis.listKeys", { apiId, externalId: "odd" });
    expect(odd.body.data).toHaveLength(2);
  });
});

describe("keys.updateKey", () => {
  it("changes fields, null removes them, omitted fields stay", async () => {
    const { keyId, key } = await s.createKey({ name: "before", meta: { x: 1 }, externalId: "u1", credits: { remaining: 3 } });
    const res = await s.call("keys.updateKey", { keyId, name: "after", meta: null, expires: clock.t + 5000, enabled: false });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({});
    const info = (await s.call("keys.getKey", { keyId })).body.data;
    expect(info).toMatchObject({ name: "after", enabled: false, expires: clock.t + 5000, credits: { remaining: 3 }, updatedAt: clock.t });
    expect(info).not.toHaveProperty("meta");
    expect(await s.verify(key)).toMatchObject({ code: "DISABLED" });
    await s.call("keys.updateKey", { keyId, enabled: true, externalId: null, credits: null, name: null });
    const after = (await s.call("keys.getKey", { keyId })).body.data;
    expect(after).not.toHaveProperty("identity");
    expect(after).not.toHaveProperty("credits");
    expect(after).not.toHaveProperty("name");
  });

  it("replaces rate limits, permissions and roles", async () => {
    await s.call("permissions.createRole", { name: "upd-role", permissions: ["upd.r"] });
    const { keyId, key } = await s.createKey({
      permissions: ["p1"],
      ratelimits: [{ name: "xxx", limit: 1, duration: 60_000, autoApply: true }],
    });
    await s.call("keys.updateKey", {
      keyId,
      permissions: ["p2"],
      roles: ["upd-role"],
      ratelimits: [{ name: "yyy", limit: 5, duration: 60_000, autoApply: true }],
    });
    expect(await s.verify(key)).toMatchObject({
      code: "VALID",
      permissions: ["p2", "upd.r"],
      roles: ["upd-role"],
      ratelimits: [{ name: "yyy", remaining: 4 }],
    });
    expect((await s.call("keys.updateKey", { keyId, roles: ["missing"] })).status).toBe(404);
  });

  it("credits: set a balance and a refill on an unlimited key; refill alone on an unlimited key → 400", async () => {
    const { keyId } = await s.createKey();
    expect((await s.call("keys.updateKey", { keyId, credits: { refill: { interval: "daily", amount: 2 } } })).status).toBe(400);
    await s.call("keys.updateKey", { keyId, credits: { remaining: 2, refill: { interval: "daily", amount: 2 } } });
    expect((await s.call("keys.getKey", { keyId })).body.data.credits).toEqual({ remaining: 2, refill: { interval: "daily", amount: 2 } });
    await s.call("keys.updateKey", { keyId, credits: { refill: null } });
    expect((await s.call("keys.getKey", { keyId })).body.data.credits).toEqual({ remaining: 2 });
  });

  it("credits without remaining on an unlimited key → 400, and the key stays unlimited", async () => {
    const { keyId, key } = await s.createKey();
    const res = await s.call("keys.updateKey", { keyId, credits: {} });
    expect(res.status).toBe(400);
    expect(res.body.error.errors[0]).toMatchObject({ location: "body.credits.remaining" });
    expect((await s.call("keys.getKey", { keyId })).body.data).not.toHaveProperty("credits");
    expect(await s.verify(key)).toMatchObject({ code: "VALID" });
    // On a limited key, omitting remaining keeps the balance.
    const limited = await s.createKey({ credits: { remaining: 4 } });
    expect((await s.call("keys.updateKey", { keyId: limited.keyId, credits: {} })).status).toBe(200);
    expect((await s.call("keys.getKey", { keyId: limited.keyId })).body.data.credits).toEqual({ remaining: 4 });
  });

  it("a refill added by updateKey starts counting now: no immediate refill for the days before", async () => {
    const { keyId, key } = await s.createKey({ credits: { remaining: 100 } });
    clock.advance(3 * 86_400_000);
    const res = await s.call("keys.updateKey", { keyId, credits: { remaining: 5, refill: { interval: "daily", amount: 50 } } });
    expect(res.status).toBe(200);
    expect(await s.verify(key)).toMatchObject({ code: "VALID", credits: 4 });
    // Adding a refill alone to a limited key behaves the same.
    const other = await s.createKey({ credits: { remaining: 7 } });
    clock.advance(2 * 86_400_000);
    await s.call("keys.updateKey", { keyId: other.keyId, credits: { refill: { interval: "daily", amount: 50 } } });
    expect(await s.verify(other.key)).toMatchObject({ code: "VALID", credits: 6 });
    // The next 00:00 UTC refills as usual.
    clock.advance(86_400_000);
    expect(await s.verify(key)).toMatchObject({ code: "VALID", credits: 49 });
  });
});

describe("keys.updateCredits", () => {
  it("set, increment, decrement (floored at 0), set null = unlimited", async () => {
    const { keyId } = await s.createKey({ credits: { remaining: 5 } });
    const op = async (operation: string, value?: number | null) =>
      (await s.call("keys.updateCredits", { keyId, operation, ...(value === undefined ? {} : { value }) })).body;
    expect((await op("increment", 3)).data).toEqual({ remaining: 8 });
    expect((await op("decrement", 20)).data).toEqual({ remaining: 0 });
    expect((await op("set", 4)).data).toEqual({ remaining: 4 });
    expect((await op("set", null)).data).toEqual({ remaining: null });
    expect((await op("increment", 1)).error.status).toBe(400);
    expect((await op("decrement")).error.errors[0].location).toBe("body.value");
    expect((await op("set", 9)).data).toEqual({ remaining: 9 });
  });

  it("increment never goes past Number.MAX_SAFE_INTEGER", async () => {
    const { keyId, key } = await s.createKey({ credits: { remaining: Number.MAX_SAFE_INTEGER - 1 } });
    const res = await s.call("keys.updateCredits", { keyId, operation: "increment", value: Number.MAX_SAFE_INTEGER });
    expect(res.body.data).toEqual({ remaining: Number.MAX_SAFE_INTEGER });
    expect((await s.call("keys.getKey", { keyId })).body.data.credits).toEqual({ remaining: Number.MAX_SAFE_INTEGER });
    expect(await s.verify(key)).toMatchObject({ code: "VALID", credits: Number.MAX_SAFE_INTEGER - 1 });
  });
});

describe("keys.deleteKey", () => {
  it("deletes; the key then answers NOT_FOUND and getKey 404", async () => {
    const { keyId, key } = await s.createKey();
    expect((await s.call("keys.deleteKey", { keyId, permanent: true })).body.data).toEqual({});
    expect(await s.verify(key)).toStrictEqual({ valid: false, code: "NOT_FOUND" });
    expect((await s.call("keys.getKey", { keyId })).status).toBe(404);
    expect((await s.call("keys.deleteKey", { keyId })).status).toBe(404);
  });
});

describe("permissions and roles of a key", () => {
  it("add, remove and set permissions", async () => {
    const { keyId } = await s.createKey();
    const add = await s.call("keys.addPermissions", { keyId, permissions: ["k.read", "k.write"] });
    expect(add.body.data.map((p: { slug: string }) => p.slug)).toEqual(["k.read", "k.write"]);
    expect(add.body.data[0]).toEqual({ id: expect.stringMatching(/^perm_/), name: "k.read", slug: "k.read" });
    const again = await s.call("keys.addPermissions", { keyId, permissions: ["k.read"] });
    expect(again.body.data).toHaveLength(2);
    const removed = await s.call("keys.removePermissions", { keyId, permissions: ["k.read"] });
    expect(removed.body.data.map((p: { slug: string }) => p.slug)).toEqual(["k.write"]);
    expect((await s.call("keys.removePermissions", { keyId, permissions: ["never.existed"] })).status).toBe(404);
    const set = await s.call("keys.setPermissions", { keyId, permissions: ["k.admin"] });
    expect(set.body.data.map((p: { slug: string }) => p.slug)).toEqual(["k.admin"]);
    expect((await s.call("keys.setPermissions", { keyId, permissions: [] })).body.data).toEqual([]);
  });

  it("add, remove and set roles (roles must exist)", async () => {
    await s.call("permissions.createRole", { name: "kr-a", description: "A" });
    await s.call("permissions.createRole", { name: "kr-b" });
    const { keyId } = await s.createKey();
    const add = await s.call("keys.addRoles", { keyId, roles: ["kr-a", "kr-b"] });
    expect(add.body.data).toEqual([
      { id: expect.stringMatching(/^role_/), name: "kr-a", description: "A" },
      { id: expect.stringMatching(/^role_/), name: "kr-b" },
    ]);
    expect((await s.call("keys.addRoles", { keyId, roles: ["nope"] })).body.error.type).toMatch(/role_not_found$/);
    expect((await s.call("keys.removeRoles", { keyId, roles: ["kr-a"] })).body.data.map((r: { name: string }) => r.name)).toEqual(["kr-b"]);
    expect((await s.call("keys.setRoles", { keyId, roles: ["kr-a"] })).body.data.map((r: { name: string }) => r.name)).toEqual(["kr-a"]);
  });
});

describe("keys.rerollKey", () => {
  it("expiration 0 expires the old key now (EXPIRED, getKey still finds it); the new key keeps the settings", async () => {
    const { keyId, key } = await s.createKey({ prefix: "rr", name: "rolled", credits: { remaining: 9 }, permissions: ["rr.p"] });
    const res = await s.call("keys.rerollKey", { keyId, expiration: 0 });
    expect(res.status).toBe(200);
    const { keyId: newId, key: newKey } = res.body.data;
    expect(newId).not.toBe(keyId);
    expect(newKey).toMatch(/^rr_/);
    expect(await s.verify(key)).toMatchObject({ valid: false, code: "EXPIRED", keyId, expires: clock.t });
    const old = await s.call("keys.getKey", { keyId });
    expect(old.status).toBe(200);
    expect(old.body.data).toMatchObject({ keyId, expires: clock.t, name: "rolled" });
    expect(await s.verify(newKey, { permissions: "rr.p" })).toMatchObject({ code: "VALID", name: "rolled", credits: 8 });
    expect((await s.call("keys.getKey", { keyId: newId })).body.data).not.toHaveProperty("expires");
  });

  it("a grace period ends at the next full minute, as production; the old key works until then", async () => {
    const { keyId, key } = await s.createKey();
    const res = await s.call("keys.rerollKey", { keyId, expiration: 90_000 });
    expect(res.status).toBe(200);
    const expires = Math.ceil((clock.t + 90_000) / 60_000) * 60_000;
    expect((await s.call("keys.getKey", { keyId })).body.data.expires).toBe(expires);
    expect(await s.verify(key)).toMatchObject({ code: "VALID" });
  });
});
