// keys.migrateKeys and verifying migrated keys: keys hashed by another system, imported under a
// migration the admin surface registered, verify with their original plaintext.
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { start, type Started } from "../helpers";

let s: Started;
beforeAll(async () => {
  s = await start();
});
afterAll(() => s.close());

const sha256Base64 = (text: string) => createHash("sha256").update(text, "utf8").digest("base64");
const sha256Hex = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
let n = 0;
const unique = (label: string) => `${label}${++n}${Date.now()}`;

describe("keys.migrateKeys (sha256)", () => {
  it("imports base64 SHA-256 hashes; each key then verifies with its original plaintext, with everything given", async () => {
    const { migrationId } = await s.service.createKeyMigration();
    expect(migrationId).toMatch(/^mig_/);
    const plain = unique("legacy_live_");
    const other = unique("legacy_live_");
    const res = await s.call("keys.migrateKeys", {
      migrationId,
      apiId: s.apiId,
      keys: [
        {
          hash: sha256Base64(plain),
          name: "imported",
          externalId: "customer@example.com",
          meta: { plan: "pro" },
          roles: ["migrated-admin"],
          permissions: ["docs.read.migrated"],
          credits: { remaining: 2 },
          ratelimits: [{ name: "requests", limit: 10, duration: 60_000, autoApply: true }],
        },
        { hash: sha256Base64(other), enabled: false },
      ],
    });
    expect(res.status).toBe(200);
    const { migrated, failed } = res.body.data;
    expect(failed).toEqual([]);
    expect(migrated).toEqual([
      { hash: sha256Base64(plain), keyId: expect.stringMatching(/^key_/) },
      { hash: sha256Base64(other), keyId: expect.stringMatching(/^key_/) },
    ]);

    const verified = await s.verify(plain, { permissions: "docs.read.migrated" });
    expect(verified).toMatchObject({
      valid: true,
      code: "VALID",
      keyId: migrated[0].keyId,
      name: "imported",
      meta: { plan: "pro" },
      credits: 1,
      roles: ["migrated-admin"],
      identity: { externalId: "customer@example.com" },
    });
    expect(verified.ratelimits).toEqual([expect.objectContaining({ name: "requests", limit: 10, remaining: 9 })]);
    expect(await s.verify(other)).toMatchObject({ valid: false, code: "DISABLED" });
    // Roles and permissions that did not exist were created.
    expect((await s.call("permissions.getRole", { role: "migrated-admin" })).status).toBe(200);
    expect((await s.call("permissions.getPermission", { permission: "docs.read.migrated" })).status).toBe(200);
    // The stored record holds the hash, never the key.
    expect(JSON.stringify(await s.service.exportState())).not.toContain(plain);
  });

  it("a hash some key already has goes to failed; the others are imported", async () => {
    const { migrationId } = await s.service.createKeyMigration({ algorithm: "sha256" });
    const { key } = await s.createKey();
    const fresh = sha256Base64(unique("k_"));
    const res = await s.call("keys.migrateKeys", {
      migrationId,
      apiId: s.apiId,
      keys: [{ hash: sha256Base64(key) }, { hash: fresh }, { hash: fresh }],
    });
    expect(res.status).toBe(200);
    expect(res.body.data.failed).toEqual([sha256Base64(key), fresh]);
    expect(res.body.data.migrated).toEqual([{ hash: fresh, keyId: expect.stringMatching(/^key_/) }]);
  });

  it("concurrent imports of one hash (a fleet meeting a new key at once): one imports it, every other answers it failed", async () => {
    const { migrationId } = await s.service.createKeyMigration({ algorithm: "sha256" });
    const plain = unique("fleet_");
    const hash = sha256Base64(plain);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        s.call("keys.migrateKeys", { migrationId, apiId: s.apiId, keys: [{ hash, credits: { remaining: 5 } }] }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    const migrated = answers.flatMap((a) => a.body.data.migrated as unknown[]);
    expect(migrated).toEqual([{ hash, keyId: expect.stringMatching(/^key_/) }]);
    expect(answers.filter((a) => (a.body.data.failed as string[]).includes(hash))).toHaveLength(9);
    // The one key holds the balance it was given once.
    expect(await s.verify(plain)).toMatchObject({ valid: true, credits: 4 });
  });

  it("404 for an unknown migration or API, 403 without create_key, 400 for a bad body", async () => {
    const { migrationId } = await s.service.createKeyMigration();
    const keys = [{ hash: sha256Base64(unique("x_")) }];
    const unknown = await s.call("keys.migrateKeys", { migrationId: "mig_unknown", apiId: s.apiId, keys });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ detail: "The requested Migration does not exist or has been deleted." });
    expect(unknown.body.error.type).toMatch(/\/data\/migration_not_found$/);
    const noApi = await s.call("keys.migrateKeys", { migrationId, apiId: "api_missing", keys });
    expect(noApi.status).toBe(404);
    expect(noApi.body.error.type).toMatch(/\/data\/api_not_found$/);
    // A migration of another workspace is unknown here.
    const { workspaceId } = await s.service.createWorkspace();
    const foreign = await s.service.createKeyMigration({ workspaceId });
    expect((await s.call("keys.migrateKeys", { migrationId: foreign.migrationId, apiId: s.apiId, keys })).status).toBe(404);
    const { rootKey } = await s.service.createRootKey({ permissions: ["api.*.read_key"] });
    const denied = await s.call("keys.migrateKeys", { migrationId, apiId: s.apiId, keys }, rootKey);
    expect(denied.status).toBe(403);
    expect(denied.body.error.type).toMatch(/insufficient_permissions$/);
    for (const bad of [
      { migrationId, apiId: s.apiId, keys: [] },
      { migrationId, apiId: s.apiId, keys: [{ hash: "ab" }] },
      { migrationId, apiId: s.apiId, keys: [{ hash: "abc", prefix: "sk" }] },
      { migrationId, apiId: s.apiId, keys: [{ hash: "abc", credits: { remaining: 1, refill: { interval: "monthly", amount: 1 } } }] },
      { migrationId: "m", apiId: s.apiId, keys },
    ]) {
      expect((await s.call("keys.migrateKeys", bad)).status, JSON.stringify(bad)).toBe(400);
    }
  });

  it("the admin surface refuses a bad algorithm or id, and a duplicate id", async () => {
    await expect(s.service.createKeyMigration({ algorithm: "md5" as "sha256" })).rejects.toThrow(/algorithm "md5" is not supported/);
    await expect(s.service.createKeyMigration({ migrationId: "ab" })).rejects.toThrow(/3 to 255 characters/);
    await s.service.createKeyMigration({ migrationId: "mig_fixed" });
    await expect(s.service.createKeyMigration({ migrationId: "mig_fixed" })).rejects.toThrow(/already exists/);
    expect((await s.service.exportState()).keyMigrations?.mig_fixed).toMatchObject({ algorithm: "sha256", workspaceId: s.workspaceId });
  });
});

describe("keys.migrateKeys (github.com/seamapi/prefixed-api-key)", () => {
  it("a key imported as hex SHA-256 of its long token verifies with migrationId, and from then on without it", async () => {
    const { migrationId } = await s.service.createKeyMigration({ algorithm: "github.com/seamapi/prefixed-api-key" });
    const shortToken = "BRTRKFsL";
    const longToken = unique("51FwqftsmMDHHbJAMEXXHCgG");
    const key = `unkeyed_${shortToken}_${longToken}`;
    const res = await s.call("keys.migrateKeys", { migrationId, apiId: s.apiId, keys: [{ hash: sha256Hex(longToken), name: "seam" }] });
    const keyId = res.body.data.migrated[0].keyId;
    // Never seen, so not known: a placeholder no key starts with, as production's document wants a start.
    expect((await s.call("keys.getKey", { keyId })).body.data.start).toBe("(imported)");
    expect(await s.verify(key)).toMatchObject({ valid: false, code: "NOT_FOUND" });
    expect(await s.verify(key, { migrationId: "mig_other" })).toMatchObject({ valid: false, code: "NOT_FOUND" });
    expect(await s.verify(key, { migrationId })).toMatchObject({ valid: true, code: "VALID", keyId, name: "seam" });
    // Rehashed: the service's own hash now, found directly; start as production sets it.
    expect(await s.verify(key)).toMatchObject({ valid: true, keyId });
    expect((await s.call("keys.getKey", { keyId })).body.data.start).toBe(`unkeyed_${shortToken.slice(0, 4)}`);
    const stored = (await s.service.exportState()).keys[keyId]!;
    expect(stored.hash).toBe(sha256Base64(key));
    expect(stored).not.toHaveProperty("pendingMigrationId");
  });

  it("a key not of the form prefix_short_long is malformed under such a migration", async () => {
    const { migrationId } = await s.service.createKeyMigration({ algorithm: "github.com/seamapi/prefixed-api-key" });
    const res = await s.call("keys.verifyKey", { key: "nounderscores", migrationId });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ detail: "Invalid key format" });
    expect(res.body.error.type).toMatch(/\/authentication\/malformed$/);
  });
});
