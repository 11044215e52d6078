// The client's happy paths against the real local key service (keyguard/server) on 127.0.0.1:0:
// keys, verification, permissions and roles, identities, paging, ensure and rate limits.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type KeyServiceClient } from "keyguard/client";
import { startLocalUnderTest } from "../support/store-under-test";
import { silentLogger } from "../../src/logger";

let svc: Awaited<ReturnType<typeof startLocalUnderTest>>;
let client: KeyServiceClient;

beforeAll(async () => {
  svc = await startLocalUnderTest();
  client = createClient({ rootKey: svc.rootKey, baseUrl: svc.baseUrl, logger: silentLogger, retry: false });
});
afterAll(async () => {
  await svc.close();
});

describe("against the local key service", () => {
  it("creates a key with flat credits and verifies it, charging a credit each time", async () => {
    const created = await client.keys.createKey({ apiId: svc.apiId, prefix: "sk", name: "k1", remaining: 2, meta: { plan: "pro" } });
    expect(created.key).toMatch(/^sk_/);
    expect(created.requestId).toMatch(/^req_/);

    await expect(client.keys.verifyKey({ key: created.key })).resolves.toMatchObject({
      valid: true,
      code: "VALID",
      keyId: created.keyId,
      credits: 1,
      meta: { plan: "pro" },
    });
    await expect(client.keys.verifyKey({ key: created.key })).resolves.toMatchObject({ valid: true, credits: 0 });
    await expect(client.keys.verifyKey({ key: created.key })).resolves.toMatchObject({ valid: false, code: "USAGE_EXCEEDED" });
    await expect(client.keys.verifyKey({ key: "sk_doesNotExist1234" })).resolves.toEqual({ valid: false, code: "NOT_FOUND" });
    await expect(client.keys.getKey({ keyId: created.keyId })).resolves.toMatchObject({
      keyId: created.keyId,
      name: "k1",
      credits: { remaining: 0 },
    });
  });

  it("grants permissions through roles and checks a permission query", async () => {
    await client.permissions.createRole({ name: "editor", permissions: ["docs.read", "docs.write"] });
    const { key, keyId } = await client.keys.createKey({ apiId: svc.apiId });
    await expect(client.keys.verifyKey({ key, permissions: "docs.read" })).resolves.toMatchObject({
      valid: false,
      code: "INSUFFICIENT_PERMISSIONS",
    });

    const roles = await client.keys.addRoles({ keyId, roles: ["editor"] });
    expect(roles.map((r) => r.name)).toEqual(["editor"]);
    await expect(client.keys.verifyKey({ key, permissions: "docs.read AND docs.write" })).resolves.toMatchObject({
      valid: true,
      roles: ["editor"],
    });
    await expect(client.keys.verifyKey({ key, permissions: "admin" })).resolves.toMatchObject({
      valid: false,
      code: "INSUFFICIENT_PERMISSIONS",
    });
  });

  it("manages identities and links keys to them", async () => {
    const { identityId } = await client.identities.createIdentity({ externalId: "user_42", meta: { tier: "gold" } });
    await expect(client.identities.getIdentity({ identity: "user_42" })).resolves.toMatchObject({
      id: identityId,
      externalId: "user_42",
      meta: { tier: "gold" },
    });
    await client.identities.updateIdentity({ identity: "user_42", meta: { tier: "platinum" } });
    const { key } = await client.keys.createKey({ apiId: svc.apiId, externalId: "user_42" });
    await expect(client.keys.verifyKey({ key })).resolves.toMatchObject({
      valid: true,
      identity: { id: identityId, externalId: "user_42", meta: { tier: "platinum" } },
    });

    const all: string[] = [];
    for await (const identity of client.identities.listAllIdentities({ limit: 1 })) all.push(identity.externalId);
    expect(all).toContain("user_42");
  });

  it("listAll* follows real cursors across pages", async () => {
    const names = ["page.a", "page.b", "page.c", "page.d", "page.e"];
    for (const name of names) await client.permissions.createPermission({ name, slug: name });
    const seen: string[] = [];
    for await (const p of client.permissions.listAllPermissions({ limit: 2 })) seen.push(p.name);
    expect(seen).toEqual(expect.arrayContaining(names));
    expect(new Set(seen).size).toBe(seen.length);

    const first = await client.permissions.listPermissions({ limit: 2 });
    expect(first).toHaveLength(2);
    expect(first.pagination).toMatchObject({ hasMore: true, cursor: expect.any(String) });

    // Keys of its own: the tests may run in any order.
    const { apiId } = await client.apis.createApi({ name: "paging" });
    const created: string[] = [];
    for (let i = 0; i < 3; i++) created.push((await client.keys.createKey({ apiId })).keyId);
    const keyIds: string[] = [];
    for await (const k of client.apis.listAllKeys({ apiId, limit: 1 })) keyIds.push(k.keyId);
    expect(keyIds.sort()).toEqual(created.sort());
  });

  it("ensure() creates once and then finds, also when called concurrently", async () => {
    const id = await client.permissions.ensure({ name: "reports.export", description: "Export reports" });
    await expect(client.permissions.ensure({ name: "reports.export" })).resolves.toBe(id);
    await expect(client.permissions.getPermission({ permission: id })).resolves.toMatchObject({
      name: "reports.export",
      slug: "reports.export",
      description: "Export reports",
    });

    const together = await Promise.all([1, 2, 3].map(() => client.permissions.ensure({ name: "reports.import" })));
    expect(new Set(together).size).toBe(1);
  });

  it("ratelimit.limit counts within the window", async () => {
    const body = { namespace: "api", identifier: "user_1", limit: 2, duration: 60_000 };
    await expect(client.ratelimit.limit(body)).resolves.toMatchObject({ success: true, remaining: 1 });
    await expect(client.ratelimit.limit(body)).resolves.toMatchObject({ success: true, remaining: 0 });
    await expect(client.ratelimit.limit(body)).resolves.toMatchObject({ success: false });
  });

  it("the rate-limit override methods, multiLimit (an array body) and listAllOverrides", async () => {
    await client.ratelimit.limit({ namespace: "client-ovr", identifier: "seed", limit: 1, duration: 60_000 });
    const { overrideId } = await client.ratelimit.setOverride({
      namespace: "client-ovr",
      identifier: "team_*",
      limit: 9,
      duration: 60_000,
    });
    await client.ratelimit.setOverride({ namespace: "client-ovr", identifier: "solo", limit: 1, duration: 60_000 });
    await expect(client.ratelimit.getOverride({ namespace: "client-ovr", identifier: "team_a" })).resolves.toMatchObject({
      overrideId,
      limit: 9,
    });
    const multi = await client.ratelimit.multiLimit([
      { namespace: "client-ovr", identifier: "team_a", limit: 1, duration: 1000 },
      { namespace: "client-ovr", identifier: "other", limit: 1, duration: 1000 },
    ]);
    expect(multi).toMatchObject({ passed: true, limits: [{ limit: 9, overrideId }, { limit: 1 }] });
    const page = await client.ratelimit.listOverrides({ namespace: "client-ovr", limit: 1 });
    expect(page.map((o) => o.identifier)).toEqual(["team_*"]);
    expect(page.pagination.hasMore).toBe(true);
    const all: string[] = [];
    for await (const o of client.ratelimit.listAllOverrides({ namespace: "client-ovr", limit: 1 })) all.push(o.identifier);
    expect(all).toEqual(["team_*", "solo"]);
    await expect(client.ratelimit.deleteOverride({ namespace: "client-ovr", identifier: "solo" })).resolves.toMatchObject({});
    // The array body is for multiLimit only.
    await expect(client.ratelimit.limit([] as never)).rejects.toThrow(/must be an object/);
    await expect(client.ratelimit.multiLimit({} as never)).rejects.toThrow(/must be an array/);
  });

  it("turns the service's error envelopes into typed errors", async () => {
    await expect(client.permissions.getPermission({ permission: "perm_missing" })).rejects.toMatchObject({
      code: "KEY_SERVICE_HTTP_ERROR",
      status: 404,
      kind: "data.permission_not_found",
      requestId: expect.stringMatching(/^req_/),
    });
    await expect(client.keys.createKey({ apiId: svc.apiId, bogus: 1 } as never)).rejects.toMatchObject({
      status: 400,
      kind: "application.invalid_input",
      errors: expect.any(Array),
    });
    const stranger = createClient({ rootKey: "unkey_notARealRootKey", baseUrl: svc.baseUrl, logger: silentLogger, retry: false });
    await expect(stranger.keys.verifyKey({ key: "sk_x" })).rejects.toMatchObject({ status: 401, kind: "authentication.key_not_found" });
  });

  it("analytics.getVerifications: the rows of a query, and production's error kinds", async () => {
    const { key, keyId } = await client.keys.createKey({ apiId: svc.apiId });
    await client.keys.verifyKey({ key, tags: ["path=/a"] });
    await client.keys.verifyKey({ key, tags: ["path=/b"] });
    await svc.service.flushVerifications();
    const rows = await client.analytics.getVerifications({
      query: `SELECT key_id, outcome, count(*) AS n FROM key_verifications_v1 WHERE key_id = '${keyId}' AND has(tags, 'path=/a') GROUP BY key_id, outcome`,
    });
    expect(rows).toEqual([{ key_id: keyId, outcome: "VALID", n: 1 }]);
    await expect(client.analytics.getVerifications({ query: "DELETE FROM key_verifications_v1" })).rejects.toMatchObject({
      code: "KEY_SERVICE_HTTP_ERROR",
      status: 400,
      kind: "bad_request.invalid_analytics_query_type",
      identifier: "err:user:bad_request:invalid_analytics_query_type",
    });
    expect((await client.keys.getKey({ keyId })).lastUsedAt).toBeGreaterThan(0);
  });
});
