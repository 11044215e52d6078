// Request validation as the production service's schemas have it: each limit answers
// 400 invalid_input naming the field in errors[].location, and the value just inside passes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { start, type Started } from "../helpers";

let s: Started;
let keyId: string;
beforeAll(async () => {
  s = await start();
  ({ keyId } = await s.createKey());
});
afterAll(() => s.close());

/** Calls `op` with `body`; expects 400 invalid_input with `location` among errors[]. */
async function rejects(op: string, body: unknown, location: string): Promise<void> {
  const res = await s.call(op, body);
  expect(res.status, `${op} ${JSON.stringify(body).slice(0, 200)}`).toBe(400);
  expect(res.body.error.type).toMatch(/\/application\/invalid_input$/);
  expect(res.body.error.errors.map((e: { location: string }) => e.location)).toContain(location);
}

async function accepts(op: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await s.call(op, body);
  expect(res.status, `${op} ${JSON.stringify(res.body).slice(0, 300)}`).toBe(200);
  return res.body.data;
}

const rl = (over: Record<string, unknown> = {}) => ({ name: "per-minute", limit: 10, duration: 60_000, autoApply: false, ...over });

describe("verifyKey", () => {
  it("tags: up to 20 of 1..512 characters", async () => {
    const { key } = await s.createKey();
    await accepts("keys.verifyKey", { key, tags: Array.from({ length: 20 }, (_, i) => `${i}`.padEnd(512, "t")) });
    await rejects("keys.verifyKey", { key, tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, "body.tags");
    await rejects("keys.verifyKey", { key, tags: ["x".repeat(513)] }, "body.tags[0]");
    await rejects("keys.verifyKey", { key, tags: [""] }, "body.tags[0]");
  });

  it("migrationId is a known field of at most 256 characters", async () => {
    const { key } = await s.createKey();
    expect(await accepts("keys.verifyKey", { key, migrationId: "m".repeat(256) })).toMatchObject({ code: "VALID" });
    await rejects("keys.verifyKey", { key, migrationId: "m".repeat(257) }, "body.migrationId");
    // A key the service does not know stays NOT_FOUND with a migration id.
    expect(await accepts("keys.verifyKey", { key: "nope_123", migrationId: "mig_1" })).toStrictEqual({ valid: false, code: "NOT_FOUND" });
  });

  it("ratelimits[].name: 3..255 characters", async () => {
    const { key } = await s.createKey();
    await rejects("keys.verifyKey", { key, ratelimits: [{ name: "ab", limit: 1, duration: 1000 }] }, "body.ratelimits[0].name");
    await rejects("keys.verifyKey", { key, ratelimits: [{ name: "n".repeat(256), limit: 1, duration: 1000 }] }, "body.ratelimits[0].name");
    await accepts("keys.verifyKey", { key, ratelimits: [{ name: "n".repeat(255), limit: 1, duration: 1000 }] });
  });
});

describe("ids", () => {
  it("keyId: 3..255 letters, digits and underscores", async () => {
    for (const op of ["keys.getKey", "keys.deleteKey", "keys.updateKey", "keys.addPermissions", "keys.setRoles"]) {
      const extra = op === "keys.addPermissions" ? { permissions: ["p.q"] } : op === "keys.setRoles" ? { roles: [] } : {};
      await rejects(op, { keyId: "ab", ...extra }, "body.keyId");
      await rejects(op, { keyId: "key-with-dash", ...extra }, "body.keyId");
      await rejects(op, { keyId: `key_${"x".repeat(252)}`, ...extra }, "body.keyId");
    }
    await rejects("keys.rerollKey", { keyId: "key.dot", expiration: 0 }, "body.keyId");
    // updateCredits checks the length only, as production.
    await rejects("keys.updateCredits", { keyId: "ab", operation: "set", value: 1 }, "body.keyId");
    expect((await s.call("keys.updateCredits", { keyId: "key-dash", operation: "set", value: 1 })).status).toBe(404);
    expect((await s.call("keys.getKey", { keyId: "key_doesNotExist" })).status).toBe(404);
  });

  it("apiId: createKey 3..255, getApi and deleteApi 8..255, with the id pattern; listKeys any non-empty", async () => {
    await rejects("keys.createKey", { apiId: "ab" }, "body.apiId");
    await rejects("keys.createKey", { apiId: "api with space" }, "body.apiId");
    await rejects("apis.getApi", { apiId: "api_123" }, "body.apiId");
    await rejects("apis.deleteApi", { apiId: "api-1234567" }, "body.apiId");
    expect((await s.call("apis.getApi", { apiId: "api_12345" })).status).toBe(404);
    await rejects("apis.listKeys", { apiId: "" }, "body.apiId");
    expect((await s.call("apis.listKeys", { apiId: "x" })).status).toBe(404);
  });

  it("permission (get/delete): 1..128 slug characters; role (get/delete): 1..128", async () => {
    await rejects("permissions.getPermission", { permission: "has space" }, "body.permission");
    await rejects("permissions.deletePermission", { permission: "p".repeat(129) }, "body.permission");
    await rejects("permissions.getRole", { role: "r".repeat(129) }, "body.role");
    await rejects("permissions.deleteRole", { role: "" }, "body.role");
    expect((await s.call("permissions.getRole", { role: "any name is fine" })).status).toBe(404);
  });

  it("identity (get/update/delete): any non-empty string", async () => {
    await rejects("identities.getIdentity", { identity: "" }, "body.identity");
    expect((await s.call("identities.getIdentity", { identity: "x".repeat(1000) })).status).toBe(404);
  });
});

describe("names, slugs and externalIds", () => {
  it("createPermission: slug 1..128 of the slug pattern (derived from the name when absent), name 1..512, description ≤ 512", async () => {
    await rejects("permissions.createPermission", { name: "!!!" }, "body.slug");
    await rejects("permissions.createPermission", { name: "ok", slug: "not a slug" }, "body.slug");
    await rejects("permissions.createPermission", { name: "n", slug: "s".repeat(129) }, "body.slug");
    await rejects("permissions.createPermission", { name: "n".repeat(513), slug: "ok.slug" }, "body.name");
    await rejects("permissions.createPermission", { name: "n", slug: "ok.slug", description: "d".repeat(513) }, "body.description");
    await accepts("permissions.createPermission", { name: "n".repeat(512), slug: "s".repeat(128) });
  });

  it("createRole: name 1..128; permissions[] slugs without an item limit", async () => {
    await rejects("permissions.createRole", { name: "r".repeat(129) }, "body.name");
    await rejects("permissions.createRole", { name: "role-x", permissions: ["bad slug"] }, "body.permissions[0]");
    await accepts("permissions.createRole", { name: "r".repeat(128), permissions: Array.from({ length: 1001 }, (_, i) => `many.p${i}`) });
  });

  it("key roles[]: items 1..128, at most 100", async () => {
    await rejects("keys.createKey", { apiId: s.apiId, roles: ["r".repeat(129)] }, "body.roles[0]");
    await rejects("keys.createKey", { apiId: s.apiId, roles: Array.from({ length: 101 }, (_, i) => `r${i}`) }, "body.roles");
    await rejects("keys.addRoles", { keyId, roles: [] }, "body.roles");
    await rejects("keys.removePermissions", { keyId, permissions: [] }, "body.permissions");
  });

  it("externalId: 1..255 of letters, digits and _ . - (an e-mail address is refused)", async () => {
    await rejects("keys.createKey", { apiId: s.apiId, externalId: "user@example.com" }, "body.externalId");
    await rejects("keys.updateKey", { keyId, externalId: "has space" }, "body.externalId");
    await rejects("identities.createIdentity", { externalId: "x".repeat(256) }, "body.externalId");
    await rejects("identities.createIdentity", { externalId: "a/b" }, "body.externalId");
    await accepts("identities.createIdentity", { externalId: `User_1.a-b${"x".repeat(245)}` });
    // listKeys filters by any non-empty externalId.
    expect((await s.call("apis.listKeys", { apiId: s.apiId, externalId: "user@example.com" })).status).toBe(200);
  });

  it("createApi name: 3..256", async () => {
    await rejects("apis.createApi", { name: "n".repeat(257) }, "body.name");
    await accepts("apis.createApi", { name: "n".repeat(256) });
  });
});

describe("meta, expires and expiration", () => {
  const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));

  it("meta: at most 100 fields (createKey, updateKey, createIdentity, updateIdentity)", async () => {
    await rejects("keys.createKey", { apiId: s.apiId, meta: many(101) }, "body.meta");
    await rejects("keys.updateKey", { keyId, meta: many(101) }, "body.meta");
    await rejects("identities.createIdentity", { externalId: "meta-many", meta: many(101) }, "body.meta");
    await rejects("identities.updateIdentity", { identity: "meta-many", meta: many(101) }, "body.meta");
    await accepts("keys.createKey", { apiId: s.apiId, meta: many(100) });
  });

  it("expires and rerollKey expiration: at most 4102444800000", async () => {
    await rejects("keys.createKey", { apiId: s.apiId, expires: 4102444800001 }, "body.expires");
    await rejects("keys.updateKey", { keyId, expires: 4102444800001 }, "body.expires");
    await rejects("keys.rerollKey", { keyId, expiration: 4102444800001 }, "body.expiration");
    await accepts("keys.createKey", { apiId: s.apiId, expires: 4102444800000 });
  });
});

describe("rate limits", () => {
  it("key and identity ratelimits[]: name 3..128, autoApply required", async () => {
    await rejects("keys.createKey", { apiId: s.apiId, ratelimits: [rl({ name: "ab" })] }, "body.ratelimits[0].name");
    await rejects("keys.createKey", { apiId: s.apiId, ratelimits: [rl({ name: "n".repeat(129) })] }, "body.ratelimits[0].name");
    const { autoApply: _, ...noAutoApply } = rl();
    await rejects("keys.createKey", { apiId: s.apiId, ratelimits: [noAutoApply] }, "body.ratelimits[0].autoApply");
    await rejects("keys.updateKey", { keyId, ratelimits: [noAutoApply] }, "body.ratelimits[0].autoApply");
    await rejects("identities.createIdentity", { externalId: "rl-ident", ratelimits: [noAutoApply] }, "body.ratelimits[0].autoApply");
    // No upper bound on a key's window, as production.
    await accepts("keys.createKey", { apiId: s.apiId, ratelimits: [rl({ name: "n".repeat(128), duration: 90 * 86_400_000 })] });
  });

  it("ratelimit.limit: duration at most 30 days; namespace and identifier 1..512", async () => {
    const body = { namespace: "ns", identifier: "id", limit: 1, duration: 30 * 86_400_000 };
    await accepts("ratelimit.limit", body);
    await rejects("ratelimit.limit", { ...body, duration: 30 * 86_400_000 + 1 }, "body.duration");
    await rejects("ratelimit.limit", { ...body, namespace: "n".repeat(513) }, "body.namespace");
    await rejects("ratelimit.limit", { ...body, identifier: "i".repeat(513) }, "body.identifier");
    await accepts("ratelimit.limit", { ...body, namespace: "n".repeat(512), identifier: "i".repeat(512) });
  });
});

describe("createPermission without a slug (the specification's { name, description })", () => {
  it("derives the slug from the name: the name itself when it is a slug, else its other characters as -", async () => {
    for (const [name, slug] of [
      ["docs.read.spec", "docs.read.spec"],
      ["Read the docs", "Read-the-docs"],
      ["  billing / invoices: write  ", "billing-invoices:-write"],
      [`${"p".repeat(200)}`, "p".repeat(128)],
    ] as const) {
      const created = await accepts("permissions.createPermission", { name, description: "from the specification" });
      const got = await accepts("permissions.getPermission", { permission: created.permissionId });
      expect(got).toMatchObject({ id: created.permissionId, name, slug, description: "from the specification" });
    }
    // A slug taken already is refused as with production's { name, slug }.
    const again = await s.call("permissions.createPermission", { name: "docs.read.spec" });
    expect(again.status).toBe(409);
  });
});

describe("the NUL character", () => {
  // PostgreSQL cannot store U+0000 in text: the service refuses it on every store alike, naming where it is.
  it("is refused in any string or property name, naming the field and never echoing the value", async () => {
    const { key } = await s.createKey();
    await rejects("keys.createKey", { apiId: s.apiId, name: "a\u0000b" }, "body.name");
    await rejects("keys.createKey", { apiId: s.apiId, meta: { plan: { tier: "x\u0000" } } }, "body.meta.plan.tier");
    await rejects("keys.createKey", { apiId: s.apiId, meta: { "a\u0000": 1 } }, "body.meta (a property name)");
    await rejects("permissions.createPermission", { name: "p\u0000", slug: "p-nul" }, "body.name");
    await rejects("keys.verifyKey", { key, tags: ["ok", "t\u0000"] }, "body.tags[1]");
    const res = await s.call("keys.verifyKey", { key: `${key}\u0000` });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).not.toContain(key);
  });

  it("an escaped backslash followed by u0000 is text, not a NUL, and a NUL elsewhere in the body is still found", async () => {
    const created = await accepts("keys.createKey", { apiId: s.apiId, name: "path\\u0000" });
    const got = await accepts("keys.getKey", { keyId: created.keyId });
    expect(got.name).toBe("path\\u0000");
    await rejects("keys.createKey", { apiId: s.apiId, name: "path\\u0000", meta: { n: "\u0000" } }, "body.meta.n");
  });
});

describe("a lone UTF-16 surrogate", () => {
  // Valid JSON that no UTF-8 text can hold: refused on every store alike (PostgreSQL cannot store it).
  it("is refused in any string or property name, naming the field, on every kind of record", async () => {
    const { key } = await s.createKey();
    const lone = "\ud800";
    await rejects("apis.createApi", { name: `api${lone}` }, "body.name");
    await rejects("keys.createKey", { apiId: s.apiId, name: `a${lone}b` }, "body.name");
    await rejects("keys.createKey", { apiId: s.apiId, meta: { plan: { tier: `x${lone}` } } }, "body.meta.plan.tier");
    await rejects("keys.createKey", { apiId: s.apiId, meta: { [`k${lone}`]: 1 } }, "body.meta (a property name)");
    await rejects("keys.createKey", { apiId: s.apiId, ratelimits: [rl({ name: `per${lone}` })] }, "body.ratelimits[0].name");
    await rejects("permissions.createPermission", { name: `p${lone}`, slug: "p-lone" }, "body.name");
    await rejects("permissions.createRole", { name: `r\udc00x` }, "body.name");
    await rejects("identities.createIdentity", { externalId: "lone", meta: { v: `\udfff` } }, "body.meta.v");
    await rejects("ratelimit.setOverride", { namespace: "ns", identifier: `id${lone}`, limit: 1, duration: 1000 }, "body.identifier");
    await rejects("rootKeys.createRootKey", { name: `root${lone}`, permissions: ["api.*.read_api"] }, "body.name");
    await rejects("keys.verifyKey", { key, tags: ["ok", `t${lone}`] }, "body.tags[1]");
    const res = await s.call("keys.verifyKey", { key: `${key}${lone}` });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).not.toContain(key);
    expect(res.body.error.detail).toContain("lone UTF-16 surrogate");
  });

  it("a surrogate pair, escaped or not, is text like any other and comes back unchanged", async () => {
    const raw = `{"apiId":${JSON.stringify(s.apiId)},"name":"\\ud83d\\udd11 key 🔑","meta":{"\\ud83d\\ude00":"x"}}`;
    const res = await fetch(`${s.baseUrl}/v2/keys.createKey`, {
      method: "POST",
      headers: { authorization: `Bearer ${s.rootKey}`, "content-type": "application/json" },
      body: raw,
    });
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: { keyId: string } };
    const got = await accepts("keys.getKey", { keyId: data.keyId });
    expect(got.name).toBe("🔑 key 🔑");
    expect(got.meta).toEqual({ "😀": "x" });
  });
});

describe("a deeply nested body", () => {
  it("with a NUL 100,000 levels down is refused with a 400 (a shortened path), and the service answers on", async () => {
    const depth = 100_000;
    const raw = `{"apiId":${JSON.stringify(s.apiId)},"meta":${'{"a":'.repeat(depth)}"\\u0000"${"}".repeat(depth)}}`;
    const res = await fetch(`${s.baseUrl}/v2/keys.createKey`, {
      method: "POST",
      headers: { authorization: `Bearer ${s.rootKey}`, "content-type": "application/json" },
      body: raw,
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { type: string; errors: Array<{ location: string }> } };
    expect(body.error.type).toMatch(/\/application\/invalid_input$/);
    expect(body.error.errors[0]!.location).toMatch(/^body\.meta(\.a)+\.?…$/);
    expect(body.error.errors[0]!.location.length).toBeLessThanOrEqual(201);
    await accepts("keys.createKey", { apiId: s.apiId, name: "after the deep body" });
  });
});
