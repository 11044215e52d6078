// What a change announces to the fleet: per key (by keyId) or everything, and never a key.
import { describe, expect, it } from "vitest";
import { encodeInvalidation, invalidationAfter, parseInvalidation } from "../../src/protocol/invalidation";
import { keyHash } from "../../src/protocol/key-hash";

describe("invalidationAfter", () => {
  it("names the key of key changes by its keyId", () => {
    const keyChanges = ["keys.deleteKey", "keys.updateKey", "keys.updateCredits", "keys.rerollKey", "keys.addPermissions", "keys.setRoles"];
    for (const op of [...keyChanges, "portal.rerollKey", "portal.setKeyEnabled", "portal.deleteKey"]) {
      expect(invalidationAfter(op, { keyId: "key_123" }), op).toEqual({ v: 1, kind: "keyId", keyId: "key_123" });
    }
  });

  it("forgets everything after changes under many keys, or when the keyId is missing", () => {
    for (const op of [
      "permissions.deletePermission",
      "permissions.deleteRole",
      "permissions.setRolePermissions",
      "apis.deleteApi",
      "identities.updateIdentity",
      "identities.deleteIdentity",
    ]) {
      expect(invalidationAfter(op, { identity: "x" }), op).toEqual({ v: 1, kind: "all" });
    }
    expect(invalidationAfter("keys.updateKey", {})).toEqual({ v: 1, kind: "all" });
    // An API's IP allow-list changes the answers for all its keys; its other settings none.
    expect(invalidationAfter("apis.updateApi", { apiId: "api_1", ipWhitelist: [] })).toEqual({ v: 1, kind: "all" });
    expect(invalidationAfter("apis.updateApi", { apiId: "api_1", name: "renamed", leakResponse: "disable" })).toBeUndefined();
    expect(invalidationAfter("keys.updateKey", null)).toEqual({ v: 1, kind: "all" });
  });

  it("announces nothing after reads, creations and verifications", () => {
    for (const op of [
      "keys.verifyKey",
      "keys.createKey",
      "keys.getKey",
      "apis.listKeys",
      "permissions.createRole",
      "ratelimit.limit",
      "ratelimit.multiLimit",
      "ratelimit.setOverride",
      "ratelimit.deleteOverride",
      "keys.migrateKeys",
    ]) {
      expect(invalidationAfter(op, { keyId: "key_1" }), op).toBeUndefined();
    }
  });
});

describe("messages on the wire", () => {
  it("round-trip and hold the key's SHA-256 only", () => {
    const key = "sk_live_secret_value";
    const text = encodeInvalidation({ v: 1, kind: "key", keyHash: keyHash(key) });
    expect(text).not.toContain(key);
    expect(parseInvalidation(text)).toEqual({ v: 1, kind: "key", keyHash: keyHash(key) });
    for (const bad of [
      "",
      "{",
      "null",
      '{"v":2,"kind":"all"}',
      '{"v":1,"kind":"key","keyHash":"short"}',
      '{"v":1,"kind":"keyId","keyId":""}',
    ]) {
      expect(parseInvalidation(bad), bad).toBeUndefined();
    }
  });
});
