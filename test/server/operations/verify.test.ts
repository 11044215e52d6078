// keys.verifyKey over real HTTP: every code, the order of checks, permissions, roles, identities.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memoryStorage } from "keyguard/server";
import { limitCounter } from "../../../src/server/domain/sliding-window";
import { inlineLimitId } from "../../../src/server/operations/verification";
import { storeUnderTest } from "../../support/store-under-test";
import { manualClock, start, type Started } from "../helpers";

let s: Started;
const clock = manualClock();
beforeAll(async () => {
  s = await start({ now: clock.now });
});
afterAll(() => s.close());

describe("keys.verifyKey codes", () => {
  it("VALID for a fresh key, with the key's details", async () => {
    const { keyId, key } = await s.createKey({ name: "svc", meta: { plan: "pro" }, prefix: "sk" });
    expect(key).toMatch(/^sk_[1-9A-HJ-NP-Za-km-z]+$/);
    expect(await s.verify(key)).toEqual({ valid: true, code: "VALID", keyId, name: "svc", meta: { plan: "pro" }, enabled: true });
  });

  it("NOT_FOUND is exactly {valid:false, code:NOT_FOUND}", async () => {
    const res = await s.call("keys.verifyKey", { key: "sk_doesnotexist" });
    expect(res.status).toBe(200);
    expect(res.body.data).toStrictEqual({ valid: false, code: "NOT_FOUND" });
    expect(res.body.meta.requestId).toMatch(/^req_/);
  });

  it("NOT_FOUND after deletion", async () => {
    const { keyId, key } = await s.createKey();
    expect((await s.call("keys.deleteKey", { keyId })).status).toBe(200);
    expect(await s.verify(key)).toStrictEqual({ valid: false, code: "NOT_FOUND" });
  });

  it("NOT_FOUND for a key whose API is gone, though its row is left (as a deletion racing writes once left them)", async () => {
    const store = (await storeUnderTest()) ?? memoryStorage();
    const own = await start({ store, now: clock.now });
    try {
      const { keyId, key } = await own.createKey();
      expect(await own.verify(key)).toMatchObject({ code: "VALID" });
      const record = (await store.direct.get("keys", keyId))!;
      // The key's row pointing at an API that does not exist.
      await store.transaction((tx) => tx.put("keys", { ...record, apiId: "api_missing" }));
      expect(await own.verify(key)).toStrictEqual({ valid: false, code: "NOT_FOUND" });
    } finally {
      await own.close();
      await store.close();
    }
  });

  it("DISABLED", async () => {
    const { key } = await s.createKey({ enabled: false });
    expect(await s.verify(key)).toMatchObject({ valid: false, code: "DISABLED", enabled: false });
  });

  it("EXPIRED at the expiry instant, VALID just before", async () => {
    const { key } = await s.createKey({ expires: clock.t + 1000 });
    clock.advance(999);
    expect(await s.verify(key)).toMatchObject({ valid: true, code: "VALID", expires: clock.t + 1 });
    clock.advance(1);
    expect(await s.verify(key)).toMatchObject({ valid: false, code: "EXPIRED" });
  });

  it("FORBIDDEN when the key's API allows other source addresses only", async () => {
    const { apiId } = await s.service.createApi({ name: "locked", ipWhitelist: ["10.1.2.3"] });
    const { key } = await s.createKey({ apiId });
    expect(await s.verify(key)).toMatchObject({ valid: false, code: "FORBIDDEN" });
    const { apiId: open } = await s.service.createApi({ name: "loopback", ipWhitelist: ["127.0.0.1", "::1"] });
    const { key: key2 } = await s.createKey({ apiId: open });
    expect(await s.verify(key2)).toMatchObject({ valid: true, code: "VALID" });
  });

  it("INSUFFICIENT_PERMISSIONS and VALID by permission query, through roles too", async () => {
    await s.call("permissions.createRole", { name: "editor", permissions: ["docs.write"] });
    const { key } = await s.createKey({ permissions: ["docs.read"], roles: ["editor"] });
    expect(await s.verify(key, { permissions: "docs.read AND docs.write" })).toMatchObject({
      valid: true,
      code: "VALID",
      permissions: ["docs.read", "docs.write"],
      roles: ["editor"],
    });
    expect(await s.verify(key, { permissions: "docs.read AND admin" })).toMatchObject({ code: "INSUFFICIENT_PERMISSIONS" });
    expect(await s.verify(key, { permissions: "admin OR (docs.read and docs.write)" })).toMatchObject({ code: "VALID" });
    // `docs.*` is a literal, not a wildcard.
    expect(await s.verify(key, { permissions: "docs.*" })).toMatchObject({ code: "INSUFFICIENT_PERMISSIONS" });
  });

  it("permission query syntax error → 400 permissions_query_syntax_error", async () => {
    const { key } = await s.createKey();
    const res = await s.call("keys.verifyKey", { key, permissions: "a AND (b" });
    expect(res.status).toBe(400);
    expect(res.body.error.type).toMatch(/\/user\/bad_request\/permissions_query_syntax_error$/);
    expect(res.body.error.errors).toEqual(expect.any(Array));
  });

  it("USAGE_EXCEEDED once credits run out; cost 0 always passes", async () => {
    const { key } = await s.createKey({ credits: { remaining: 2 } });
    expect(await s.verify(key)).toMatchObject({ code: "VALID", credits: 1 });
    expect(await s.verify(key, { credits: { cost: 5 } })).toMatchObject({ code: "USAGE_EXCEEDED", credits: 1, valid: false });
    expect(await s.verify(key, { credits: { cost: 1 } })).toMatchObject({ code: "VALID", credits: 0 });
    expect(await s.verify(key)).toMatchObject({ code: "USAGE_EXCEEDED", credits: 0 });
    expect(await s.verify(key, { credits: { cost: 0 } })).toMatchObject({ code: "VALID", credits: 0 });
  });

  it("unlimited keys are never charged and report no credits", async () => {
    const { key } = await s.createKey();
    const r = await s.verify(key, { credits: { cost: 1000 } });
    expect(r).toMatchObject({ code: "VALID" });
    expect(r).not.toHaveProperty("credits");
  });

  it("RATE_LIMITED with the limit's state", async () => {
    const { key } = await s.createKey({ ratelimits: [{ name: "rps", limit: 2, duration: 60_000, autoApply: true }] });
    expect(await s.verify(key)).toMatchObject({ code: "VALID", ratelimits: [{ name: "rps", remaining: 1, exceeded: false }] });
    expect(await s.verify(key)).toMatchObject({ code: "VALID", ratelimits: [{ remaining: 0 }] });
    const denied = await s.verify(key);
    expect(denied).toMatchObject({
      valid: false,
      code: "RATE_LIMITED",
      ratelimits: [{ name: "rps", limit: 2, duration: 60_000, remaining: 0, exceeded: true, autoApply: true }],
    });
    const state = (denied.ratelimits as Array<{ id: string; reset: number }>)[0]!;
    expect(state.id).toMatch(/^rl_/);
    expect(state.reset).toBe((Math.floor(clock.t / 60_000) + 1) * 60_000);
  });
});

describe("order of checks", () => {
  it("DISABLED wins over EXPIRED; EXPIRED wins over a permission query and credits", async () => {
    const { key } = await s.createKey({ enabled: false, expires: clock.t - 1 });
    expect(await s.verify(key)).toMatchObject({ code: "DISABLED" });
    const { key: k2 } = await s.createKey({ expires: clock.t - 1, credits: { remaining: 0 } });
    expect(await s.verify(k2, { permissions: "x" })).toMatchObject({ code: "EXPIRED" });
  });

  it("a syntax error is reported only for a key that passed the earlier checks", async () => {
    const res = await s.call("keys.verifyKey", { key: "unknown", permissions: "((" });
    expect(res.body.data).toEqual({ valid: false, code: "NOT_FOUND" });
  });

  it("INSUFFICIENT_PERMISSIONS before RATE_LIMITED before USAGE_EXCEEDED; a failed check charges no credits, passed rate limits are charged", async () => {
    const { key, keyId } = await s.createKey({
      credits: { remaining: 1 },
      ratelimits: [{ name: "rrr", limit: 1, duration: 60_000, autoApply: true }],
    });
    expect(await s.verify(key, { permissions: "nope" })).toMatchObject({ code: "INSUFFICIENT_PERMISSIONS", credits: 1 });
    expect(await s.verify(key, { credits: { cost: 2 } })).toMatchObject({ code: "USAGE_EXCEEDED", credits: 1 });
    // The rate limit was charged by the check above (it passed); the next request is limited before credits.
    expect(await s.verify(key)).toMatchObject({ code: "RATE_LIMITED", credits: 1 });
    const info = await s.call("keys.getKey", { keyId });
    expect(info.body.data.credits).toEqual({ remaining: 1 });
  });

  it("an unknown rate-limit name → 412 precondition_failed", async () => {
    const { key } = await s.createKey();
    const res = await s.call("keys.verifyKey", { key, ratelimits: [{ name: "missing" }] });
    expect(res.status).toBe(412);
    expect(res.body.error).toMatchObject({ status: 412, title: "Precondition Failed" });
    expect(res.body.error.type).toMatch(/\/application\/precondition_failed$/);
  });
});

describe("rate limits in verifyKey", () => {
  it("request-named limits apply only when named, with their cost", async () => {
    const { key } = await s.createKey({ ratelimits: [{ name: "heavy", limit: 10, duration: 60_000, autoApply: false }] });
    expect(await s.verify(key)).not.toHaveProperty("ratelimits");
    expect(await s.verify(key, { ratelimits: [{ name: "heavy", cost: 6 }] })).toMatchObject({
      code: "VALID",
      ratelimits: [{ name: "heavy", remaining: 4, autoApply: false }],
    });
    expect(await s.verify(key, { ratelimits: [{ name: "heavy", cost: 5 }] })).toMatchObject({ code: "RATE_LIMITED" });
    expect(await s.verify(key, { ratelimits: [{ name: "heavy", cost: 4 }] })).toMatchObject({ code: "VALID" });
  });

  it("inline limits (limit + duration in the request) count per key and name", async () => {
    const { key } = await s.createKey();
    const rl = [{ name: "burst", limit: 2, duration: 10_000 }];
    expect(await s.verify(key, { ratelimits: rl })).toMatchObject({
      code: "VALID",
      ratelimits: [{ name: "burst", limit: 2, remaining: 1 }],
    });
    expect(await s.verify(key, { ratelimits: rl })).toMatchObject({ code: "VALID" });
    expect(await s.verify(key, { ratelimits: rl })).toMatchObject({ code: "RATE_LIMITED" });
  });

  it("several limits are all-or-nothing", async () => {
    const { key } = await s.createKey({
      ratelimits: [
        { name: "aaa", limit: 5, duration: 60_000, autoApply: true },
        { name: "bbb", limit: 1, duration: 60_000, autoApply: false },
      ],
    });
    expect(await s.verify(key, { ratelimits: [{ name: "bbb" }] })).toMatchObject({ code: "VALID" });
    const denied = await s.verify(key, { ratelimits: [{ name: "bbb" }] });
    expect(denied).toMatchObject({
      code: "RATE_LIMITED",
      ratelimits: [
        { name: "aaa", exceeded: false, remaining: 4 },
        { name: "bbb", exceeded: true },
      ],
    });
    // "a" was not charged by the denied request: 1 used, 4 left before this one.
    expect(await s.verify(key)).toMatchObject({ code: "VALID", ratelimits: [{ name: "aaa", remaining: 3 }] });
  });

  it("identity limits are shared by every key of the identity", async () => {
    const created = await s.call("identities.createIdentity", {
      externalId: "org_shared",
      meta: { tier: "free" },
      ratelimits: [{ name: "org", limit: 3, duration: 60_000, autoApply: true }],
    });
    expect(created.status).toBe(200);
    const a = await s.createKey({ externalId: "org_shared" });
    const b = await s.createKey({ externalId: "org_shared" });
    const first = await s.verify(a.key);
    expect(first).toMatchObject({
      code: "VALID",
      identity: {
        id: created.body.data.identityId,
        externalId: "org_shared",
        meta: { tier: "free" },
        ratelimits: [{ name: "org", limit: 3 }],
      },
      ratelimits: [{ name: "org", remaining: 2 }],
    });
    expect(await s.verify(b.key)).toMatchObject({ code: "VALID" });
    expect(await s.verify(a.key)).toMatchObject({ code: "VALID" });
    expect(await s.verify(b.key)).toMatchObject({ code: "RATE_LIMITED" });
  });

  it("a key's limit replaces its identity's limit of the same name", async () => {
    await s.call("identities.createIdentity", {
      externalId: "org_same_name",
      ratelimits: [{ name: "xxx", limit: 1, duration: 60_000, autoApply: true }],
    });
    const { key } = await s.createKey({
      externalId: "org_same_name",
      ratelimits: [{ name: "xxx", limit: 100, duration: 60_000, autoApply: true }],
    });
    expect(await s.verify(key)).toMatchObject({ code: "VALID", ratelimits: [{ name: "xxx", limit: 100, remaining: 99 }] });
    const second = await s.verify(key, { ratelimits: [{ name: "xxx", cost: 2 }] });
    expect(second).toMatchObject({ code: "VALID", ratelimits: [{ name: "xxx", limit: 100, remaining: 97 }] });
    expect(second.ratelimits).toHaveLength(1);
  });

  it("overriding a limit's duration in the request uses a separate window and leaves the configured one alone", async () => {
    clock.t = Date.UTC(2025, 3, 1, 10, 0, 0);
    const { key } = await s.createKey({ ratelimits: [{ name: "rpm", limit: 2, duration: 60_000, autoApply: true }] });
    expect(await s.verify(key)).toMatchObject({ code: "VALID" });
    expect(await s.verify(key)).toMatchObject({ code: "VALID" });
    expect(await s.verify(key)).toMatchObject({ code: "RATE_LIMITED" });
    const override = await s.verify(key, { ratelimits: [{ name: "rpm", duration: 1000, cost: 0 }] });
    expect(override).toMatchObject({ code: "VALID", ratelimits: [{ name: "rpm", duration: 1000, remaining: 2 }] });
    expect(await s.verify(key)).toMatchObject({ code: "RATE_LIMITED" });
    expect(await s.verify(key)).toMatchObject({ code: "RATE_LIMITED" });
  });

  it("duplicate names in the request's ratelimits → 400", async () => {
    const { key } = await s.createKey({ ratelimits: [{ name: "ddd", limit: 1, duration: 60_000, autoApply: false }] });
    const res = await s.call("keys.verifyKey", { key, ratelimits: [{ name: "ddd" }, { name: "ddd" }] });
    expect(res.status).toBe(400);
    expect(res.body.error.errors[0]).toMatchObject({ location: "body.ratelimits[1].name" });
    // Nothing was charged.
    expect(await s.verify(key, { ratelimits: [{ name: "ddd" }] })).toMatchObject({ code: "VALID" });
  });

  it("deleting a key also drops the counters of its inline limits", async () => {
    const store = (await storeUnderTest()) ?? memoryStorage();
    const own = await start({ store, now: clock.now });
    try {
      const { key, keyId } = await own.createKey();
      await own.verify(key, { ratelimits: [{ name: "inline-gone", limit: 5, duration: 60_000 }] });
      // Read the counter through the store: a check of cost 0 reports what is left.
      const check = {
        counter: limitCounter(inlineLimitId(keyId, "inline-gone"), 60_000),
        limit: 5,
        duration: 60_000,
        cost: 0,
        owner: keyId,
      };
      const left = async () => (await store.direct.limit([check], clock.now())).states[0]!.remaining;
      expect(await left()).toBe(4);
      await own.call("keys.deleteKey", { keyId });
      expect(await left()).toBe(5);
    } finally {
      await own.close();
      await store.close();
    }
  });
});

describe("identities from createKey", () => {
  it("externalId upserts an identity and verify reports it", async () => {
    const a = await s.createKey({ externalId: "user_42" });
    const b = await s.createKey({ externalId: "user_42" });
    const ra = await s.verify(a.key);
    const rb = await s.verify(b.key);
    expect(ra.identity).toEqual({ id: expect.stringMatching(/^id_/), externalId: "user_42" });
    expect(rb.identity).toEqual(ra.identity);
  });

  it("a key without externalId has no identity field (never null)", async () => {
    const { key } = await s.createKey();
    expect(await s.verify(key)).not.toHaveProperty("identity");
  });
});
