// Interop: the official SDK (@unkey/api 2.x) drives the local key service unchanged. Every
// response must pass the SDK's response validation, and errors must map to its typed classes.
// Every SDK method of the key-management groups is driven at least once (the last test checks).
import { createHash } from "node:crypto";
import { Unkey } from "@unkey/api";
import * as errors from "@unkey/api/models/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import type { RunningLocalKeyService } from "keyguard/server";
import { startLocalUnderTest } from "../support/store-under-test";

let local: RunningLocalKeyService;
let unkey: Unkey;

/** The SDK's groups of key management: every method of these must work against the local service. */
const GROUPS = ["keys", "apis", "permissions", "identities", "ratelimit"] as const;
type Group = Record<string, (...args: unknown[]) => unknown>;
/** The methods the SDK's class for a group defines. */
const methodsOf = (group: object): string[] =>
  Object.getOwnPropertyNames(Object.getPrototypeOf(group)).filter(
    (name) => name !== "constructor" && typeof (group as Group)[name] === "function",
  );
/** `group.method` of every SDK call the tests made. */
const driven = new Set<string>();

/** An SDK client whose key-management methods note that they were called. */
function sdk(rootKey: string): Unkey {
  const client = new Unkey({ rootKey, serverURL: local.baseUrl, retryConfig: { strategy: "none" } });
  for (const name of GROUPS) {
    const group = client[name] as unknown as Group;
    for (const method of methodsOf(group)) {
      const original = group[method]!.bind(group);
      group[method] = (...args: unknown[]) => {
        driven.add(`${name}.${method}`);
        return original(...args);
      };
    }
  }
  return client;
}

beforeAll(async () => {
  local = await startLocalUnderTest({ logger: silentLogger });
  unkey = sdk(local.rootKey);
});
afterAll(() => local.close());

/** Asserts the call fails with the SDK's typed error class (not a response-validation error). */
async function expectSdkError<T>(call: Promise<unknown>, cls: new (...args: never[]) => T, status: number): Promise<T> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(cls);
  expect(err).not.toBeInstanceOf(errors.ResponseValidationError);
  expect((err as errors.UnkeyError).statusCode).toBe(status);
  return err as T;
}

describe("keys through the SDK", () => {
  it("createKey and verifyKey for every code", async () => {
    const created = await unkey.keys.createKey({ apiId: local.apiId, prefix: "sdk", name: "interop", meta: { a: 1 } });
    expect(created.meta.requestId).toMatch(/^req_/);
    expect(created.data.key).toMatch(/^sdk_/);
    const { key } = created.data;

    const valid = await unkey.keys.verifyKey({ key });
    expect(valid.data).toMatchObject({ valid: true, code: "VALID", keyId: created.data.keyId, name: "interop", meta: { a: 1 } });
    expect((await unkey.keys.verifyKey({ key: "sdk_unknown" })).data).toEqual({ valid: false, code: "NOT_FOUND" });

    const disabled = await unkey.keys.createKey({ apiId: local.apiId, enabled: false });
    expect((await unkey.keys.verifyKey({ key: disabled.data.key })).data.code).toBe("DISABLED");

    const expired = await unkey.keys.createKey({ apiId: local.apiId, expires: Date.now() - 1000 });
    expect((await unkey.keys.verifyKey({ key: expired.data.key })).data.code).toBe("EXPIRED");

    const { apiId: lockedApi } = await local.service.createApi({ name: "locked", ipWhitelist: ["192.0.2.1"] });
    const forbidden = await unkey.keys.createKey({ apiId: lockedApi });
    expect((await unkey.keys.verifyKey({ key: forbidden.data.key })).data.code).toBe("FORBIDDEN");

    const perms = await unkey.keys.createKey({ apiId: local.apiId, permissions: ["sdk.read"] });
    expect((await unkey.keys.verifyKey({ key: perms.data.key, permissions: "sdk.read" })).data).toMatchObject({
      code: "VALID",
      permissions: ["sdk.read"],
    });
    expect((await unkey.keys.verifyKey({ key: perms.data.key, permissions: "sdk.write" })).data.code).toBe("INSUFFICIENT_PERMISSIONS");

    const credits = await unkey.keys.createKey({ apiId: local.apiId, credits: { remaining: 1, refill: { interval: "daily", amount: 1 } } });
    expect((await unkey.keys.verifyKey({ key: credits.data.key })).data).toMatchObject({ code: "VALID", credits: 0 });
    expect((await unkey.keys.verifyKey({ key: credits.data.key })).data.code).toBe("USAGE_EXCEEDED");

    const limited = await unkey.keys.createKey({
      apiId: local.apiId,
      externalId: "sdk-user",
      ratelimits: [{ name: "per-minute", limit: 1, duration: 60_000, autoApply: true }],
    });
    expect((await unkey.keys.verifyKey({ key: limited.data.key })).data).toMatchObject({
      code: "VALID",
      identity: { externalId: "sdk-user" },
      ratelimits: [{ name: "per-minute", remaining: 0, exceeded: false }],
    });
    const rl = await unkey.keys.verifyKey({ key: limited.data.key, ratelimits: [{ name: "inline", limit: 5, duration: 1000 }] });
    expect(rl.data).toMatchObject({
      code: "RATE_LIMITED",
      ratelimits: [
        { name: "per-minute", exceeded: true },
        { name: "inline", exceeded: false },
      ],
    });
  });

  it("every other keys.* operation returns shapes the SDK accepts", async () => {
    await unkey.permissions.createRole({ name: "sdk-role", permissions: ["sdk.role.p"] });
    const { data: created } = await unkey.keys.createKey({ apiId: local.apiId, externalId: "sdk-x", credits: { remaining: 5 } });
    const { keyId, key } = created;
    expect((await unkey.keys.getKey({ keyId })).data).toMatchObject({
      keyId,
      enabled: true,
      credits: { remaining: 5 },
      identity: { externalId: "sdk-x" },
    });
    expect((await unkey.keys.whoami({ key })).data.keyId).toBe(keyId);
    expect((await unkey.keys.updateKey({ keyId, name: "renamed", meta: null, expires: null })).data).toEqual({});
    expect((await unkey.keys.updateCredits({ keyId, operation: "increment", value: 2 })).data).toEqual({ remaining: 7 });
    expect((await unkey.keys.updateCredits({ keyId, operation: "set", value: null })).data).toEqual({ remaining: null });
    expect((await unkey.keys.addPermissions({ keyId, permissions: ["sdk.a", "sdk.b"] })).data).toHaveLength(2);
    expect((await unkey.keys.removePermissions({ keyId, permissions: ["sdk.a"] })).data).toHaveLength(1);
    expect((await unkey.keys.setPermissions({ keyId, permissions: ["sdk.c"] })).data.map((p) => p.slug)).toEqual(["sdk.c"]);
    expect((await unkey.keys.addRoles({ keyId, roles: ["sdk-role"] })).data.map((r) => r.name)).toEqual(["sdk-role"]);
    expect((await unkey.keys.setRoles({ keyId, roles: ["sdk-role"] })).data).toHaveLength(1);
    expect((await unkey.keys.removeRoles({ keyId, roles: ["sdk-role"] })).data).toEqual([]);
    const rerolled = await unkey.keys.rerollKey({ keyId, expiration: 0 });
    expect(rerolled.data.keyId).not.toBe(keyId);
    expect((await unkey.keys.deleteKey({ keyId: rerolled.data.keyId })).data).toEqual({});
  });
});

describe("permissions, roles, identities, apis and ratelimit through the SDK", () => {
  it("createPermission, getPermission, and listPermissions across pages with the page iterator", async () => {
    const created = await unkey.permissions.createPermission({ name: "Interop 0", slug: "interop.0", description: "first" });
    expect(created.data.permissionId).toMatch(/^perm_/);
    for (let i = 1; i < 5; i++) await unkey.permissions.createPermission({ name: `Interop ${i}`, slug: `interop.${i}` });
    expect((await unkey.permissions.getPermission({ permission: created.data.permissionId })).data).toEqual({
      id: created.data.permissionId,
      name: "Interop 0",
      slug: "interop.0",
      description: "first",
    });

    const pages = await unkey.permissions.listPermissions({ limit: 2, search: "interop." });
    const slugs: string[] = [];
    let count = 0;
    for await (const page of pages) {
      slugs.push(...page.result.data.map((p) => p.slug));
      if (++count > 10) break;
    }
    expect(count).toBe(3);
    expect(slugs).toEqual(["interop.0", "interop.1", "interop.2", "interop.3", "interop.4"]);
  });

  it("roles, identities, apis and ratelimit.limit", async () => {
    const role = await unkey.permissions.createRole({ name: "sdk-admin", description: "d", permissions: ["sdk.admin"] });
    expect((await unkey.permissions.getRole({ role: role.data.roleId })).data).toMatchObject({
      name: "sdk-admin",
      permissions: [{ slug: "sdk.admin" }],
    });
    for await (const page of await unkey.permissions.listRoles({})) expect(page.result.data.length).toBeGreaterThan(0);
    expect((await unkey.permissions.deleteRole({ role: "sdk-admin" })).data).toEqual({});
    expect((await unkey.permissions.deletePermission({ permission: "sdk.admin" })).data).toEqual({});

    const identity = await unkey.identities.createIdentity({
      externalId: "sdk-ident",
      meta: { m: 1 },
      ratelimits: [{ name: "rps", limit: 1, duration: 1000 }],
    });
    expect((await unkey.identities.getIdentity({ identity: "sdk-ident" })).data).toMatchObject({
      id: identity.data.identityId,
      ratelimits: [{ name: "rps", autoApply: false }],
    });
    expect((await unkey.identities.updateIdentity({ identity: "sdk-ident", meta: { m: 2 } })).data.meta).toEqual({ m: 2 });
    for await (const page of await unkey.identities.listIdentities({})) expect(page.result.data.length).toBeGreaterThan(0);
    // The SDK's schema for this response has no `data` (it strips ours); the call must succeed.
    expect((await unkey.identities.deleteIdentity({ identity: "sdk-ident" })).meta.requestId).toMatch(/^req_/);

    const api = await unkey.apis.createApi({ name: "sdk-api" });
    expect((await unkey.apis.getApi({ apiId: api.data.apiId })).data).toEqual({ id: api.data.apiId, name: "sdk-api" });
    await unkey.keys.createKey({ apiId: api.data.apiId, name: "listed" });
    for await (const page of await unkey.apis.listKeys({ apiId: api.data.apiId })) {
      expect(page.result.data.map((k) => k.name)).toEqual(["listed"]);
    }
    expect((await unkey.apis.deleteApi({ apiId: api.data.apiId })).data).toEqual({});

    const limit = await unkey.ratelimit.limit({ namespace: "sdk", identifier: "u", limit: 1, duration: 60_000 });
    expect(limit.data).toMatchObject({ success: true, limit: 1, remaining: 0 });
  });
});

describe("rate-limit overrides, multiLimit, role permissions and key migration through the SDK", () => {
  it("ratelimit overrides: set, get (a pattern's match), list with the page iterator, delete; limit reports the override", async () => {
    await unkey.ratelimit.limit({ namespace: "sdk-ovr", identifier: "first", limit: 1, duration: 60_000 });
    const set = await unkey.ratelimit.setOverride({ namespace: "sdk-ovr", identifier: "premium_*", limit: 100, duration: 60_000 });
    expect(set.data.overrideId).toMatch(/^rlor_/);
    await unkey.ratelimit.setOverride({ namespace: "sdk-ovr", identifier: "blocked", limit: 0, duration: 1000 });
    expect((await unkey.ratelimit.getOverride({ namespace: "sdk-ovr", identifier: "premium_9" })).data).toEqual({
      overrideId: set.data.overrideId,
      identifier: "premium_*",
      limit: 100,
      duration: 60_000,
    });
    const limited = await unkey.ratelimit.limit({ namespace: "sdk-ovr", identifier: "premium_9", limit: 1, duration: 1000 });
    expect(limited.data).toMatchObject({ success: true, limit: 100, remaining: 99, overrideId: set.data.overrideId });
    const identifiers: string[] = [];
    let pages = 0;
    for await (const page of await unkey.ratelimit.listOverrides({ namespace: "sdk-ovr", limit: 1 })) {
      identifiers.push(...page.result.data.map((o) => o.identifier));
      if (++pages > 5) break;
    }
    expect(pages).toBe(2);
    expect(identifiers).toEqual(["premium_*", "blocked"]);
    expect((await unkey.ratelimit.deleteOverride({ namespace: "sdk-ovr", identifier: "premium_*" })).data).toEqual({});
    await expectSdkError(unkey.ratelimit.getOverride({ namespace: "sdk-ovr", identifier: "premium_9" }), errors.NotFoundErrorResponse, 404);
  });

  it("ratelimit.multiLimit: the SDK sends the bare array and accepts the answer", async () => {
    const res = await unkey.ratelimit.multiLimit([
      { namespace: "sdk-multi-a", identifier: "u", limit: 2, duration: 60_000 },
      { namespace: "sdk-multi-b", identifier: "u", limit: 1, duration: 60_000, cost: 1 },
    ]);
    expect(res.data.passed).toBe(true);
    expect(res.data.limits).toEqual([
      expect.objectContaining({ namespace: "sdk-multi-a", identifier: "u", limit: 2, remaining: 1, passed: true }),
      expect.objectContaining({ namespace: "sdk-multi-b", identifier: "u", limit: 1, remaining: 0, passed: true }),
    ]);
    const second = await unkey.ratelimit.multiLimit([
      { namespace: "sdk-multi-a", identifier: "u", limit: 2, duration: 60_000 },
      { namespace: "sdk-multi-b", identifier: "u", limit: 1, duration: 60_000 },
    ]);
    expect(second.data.passed).toBe(false);
    expect(second.data.limits.map((l) => l.passed)).toEqual([true, false]);
  });

  it("permissions.setRolePermissions replaces a role's permissions", async () => {
    const { data: role } = await unkey.permissions.createRole({ name: "sdk-set-role", permissions: ["sdk.set.old"] });
    const res = await unkey.permissions.setRolePermissions({ roleId: role.roleId, permissions: ["sdk.set.b", "sdk.set.a"] });
    expect(res.data.map((p) => p.slug)).toEqual(["sdk.set.a", "sdk.set.b"]);
    expect((await unkey.permissions.getRole({ role: role.roleId })).data.permissions?.map((p) => p.slug).sort()).toEqual([
      "sdk.set.a",
      "sdk.set.b",
    ]);
  });

  it("keys.migrateKeys: a key hashed elsewhere verifies with its plaintext (sha256, and the prefixed-api-key migration)", async () => {
    const plaintext = "legacy_sdk_2b6fK9qz";
    const { migrationId } = await local.service.createKeyMigration();
    const hash = createHash("sha256").update(plaintext).digest("base64");
    const res = await unkey.keys.migrateKeys({
      migrationId,
      apiId: local.apiId,
      keys: [{ hash, name: "from-legacy", externalId: "legacy-user" }],
    });
    expect(res.data.failed).toEqual([]);
    expect(res.data.migrated).toEqual([{ hash, keyId: expect.stringMatching(/^key_/) }]);
    expect((await unkey.keys.verifyKey({ key: plaintext })).data).toMatchObject({
      valid: true,
      name: "from-legacy",
      identity: { externalId: "legacy-user" },
    });
    expect((await unkey.keys.migrateKeys({ migrationId, apiId: local.apiId, keys: [{ hash }] })).data).toEqual({
      migrated: [],
      failed: [hash],
    });

    const seam = await local.service.createKeyMigration({ algorithm: "github.com/seamapi/prefixed-api-key" });
    const longToken = "51FwqftsmMDHHbJAMEXXHCgGqj";
    const seamKey = `seam_BRTRKFsL_${longToken}`;
    await unkey.keys.migrateKeys({
      migrationId: seam.migrationId,
      apiId: local.apiId,
      keys: [{ hash: createHash("sha256").update(longToken).digest("hex") }],
    });
    expect((await unkey.keys.verifyKey({ key: seamKey, migrationId: seam.migrationId })).data).toMatchObject({
      valid: true,
      code: "VALID",
    });
    await expectSdkError(
      unkey.keys.migrateKeys({ migrationId: "mig_nope", apiId: local.apiId, keys: [{ hash: "abcd" }] }),
      errors.NotFoundErrorResponse,
      404,
    );
  });
});

describe("typed errors", () => {
  it("400 → BadRequestErrorResponse with errors[]", async () => {
    const err = await expectSdkError(
      unkey.permissions.createPermission({ name: "x", slug: "not a slug" }),
      errors.BadRequestErrorResponse,
      400,
    );
    expect(err.error.errors[0]).toMatchObject({ location: "body.slug" });
  });

  it("401 → UnauthorizedErrorResponse", async () => {
    await expectSdkError(sdk("root_wrongwrongwrong").keys.verifyKey({ key: "k" }), errors.UnauthorizedErrorResponse, 401);
  });

  it("403 → ForbiddenErrorResponse", async () => {
    const { rootKey } = await local.service.createRootKey({ permissions: ["api.*.verify_key"] });
    const err = await expectSdkError(
      sdk(rootKey).permissions.createPermission({ name: "n", slug: "n" }),
      errors.ForbiddenErrorResponse,
      403,
    );
    expect(err.error.title).toBe("Insufficient Permissions");
  });

  it("404 → NotFoundErrorResponse", async () => {
    const err = await expectSdkError(unkey.permissions.getPermission({ permission: "perm_missing" }), errors.NotFoundErrorResponse, 404);
    expect(err.error.type).toMatch(/\/data\/permission_not_found$/);
    await expectSdkError(unkey.keys.getKey({ keyId: "key_missing" }), errors.NotFoundErrorResponse, 404);
  });

  it("deleteIdentity: the SDK sends Accept: application/json but matches its typed errors on problem+json only", async () => {
    // Error bodies follow the Accept header (application/json here), so the SDK reports a generic APIError.
    const err = await expectSdkError(unkey.identities.deleteIdentity({ identity: "missing" }), errors.APIError, 404);
    expect(err.body).toContain("identity_not_found");
  });

  it("409 → ConflictErrorResponse", async () => {
    await unkey.permissions.createPermission({ name: "dup", slug: "dup.slug" });
    await expectSdkError(unkey.permissions.createPermission({ name: "dup", slug: "dup.slug" }), errors.ConflictErrorResponse, 409);
  });
});

// Checked once every test of the file has run, whatever their order.
afterAll(() => {
  const probe = new Unkey({ rootKey: "unused", serverURL: local.baseUrl });
  const all = GROUPS.flatMap((name) => methodsOf(probe[name]).map((method) => `${name}.${method}`)).sort();
  // @unkey/api 2.5.1: keys 15, apis 4, permissions 9, identities 5, ratelimit 6.
  expect(all).toHaveLength(39);
  expect([...driven].sort()).toEqual(all);
});
