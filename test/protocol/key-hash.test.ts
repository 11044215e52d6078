// keyHash: the one way keyguard names a key. The key service persists it, so its encoding (base64
// SHA-256) is fixed: data written by earlier versions must keep verifying.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { keyHash as exported, silentLogger } from "keyguard";
import { createLocalKeyService, memoryStorage } from "keyguard/server";
import { KEY_HASH_PATTERN, keyHash } from "../../src/protocol/key-hash";
import { parseInvalidation } from "../../src/protocol/invalidation";

describe("keyHash", () => {
  it("is base64 SHA-256, the reference digest, and never the key", () => {
    for (const key of ["sk_secret", "ключ_🔑", "x".repeat(512), ""]) {
      expect(keyHash(key)).toBe(createHash("sha256").update(key, "utf8").digest("base64"));
      expect(keyHash(key)).toMatch(KEY_HASH_PATTERN);
    }
    // A fixed vector: the hashes stored by every version so far are exactly this form.
    expect(keyHash("abc")).toBe("ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
    expect(keyHash("sk_secret")).not.toContain("secret");
    expect(exported).toBe(keyHash);
  });

  it("is what the key service stores, and a key stored in that form by an earlier version verifies", async () => {
    const store = memoryStorage();
    const { service, app, close } = await createLocalKeyService({ storage: store, logger: silentLogger });
    try {
      const state = await service.exportState();
      const root = Object.values(state.rootKeys).find((r) => r.workspaceId === service.workspaceId)!;
      expect(root.hash).toBe(keyHash(service.rootKey));
      // A key record as an earlier version wrote it: the hash computed independently of keyguard.
      const old = "old_3x4mpleKeyWrittenLongAgo";
      const hash = createHash("sha256").update(old, "utf8").digest("base64");
      await store.transaction((tx) =>
        tx.put("keys", {
          id: "key_old",
          workspaceId: service.workspaceId,
          apiId: service.apiId,
          hash,
          start: "old_3x4m",
          byteLength: 16,
          createdAt: 1_600_000_000_000,
          enabled: true,
          permissionIds: [],
          roleIds: [],
          ratelimits: [],
        }),
      );
      const { createServer } = await import("node:http");
      const server = createServer(app).listen(0, "127.0.0.1");
      await new Promise((r) => server.once("listening", r));
      try {
        const { port } = server.address() as { port: number };
        const res = await fetch(`http://127.0.0.1:${port}/v2/keys.verifyKey`, {
          method: "POST",
          headers: { authorization: `Bearer ${service.rootKey}`, "content-type": "application/json" },
          body: JSON.stringify({ key: old }),
        });
        expect(((await res.json()) as { data: unknown }).data).toMatchObject({ valid: true, code: "VALID", keyId: "key_old" });
      } finally {
        server.closeAllConnections();
        await new Promise((r) => server.close(r));
      }
    } finally {
      await close();
      await store.close();
    }
  });

  it("is the form the invalidation bus carries; keyguard 0.1's base64url form is read as the same hash", () => {
    const hash = keyHash("sk_a");
    expect(parseInvalidation(JSON.stringify({ v: 1, kind: "key", keyHash: hash }))).toEqual({ v: 1, kind: "key", keyHash: hash });
    // An older instance's message, during a rolling upgrade: the same key, so the same hash here.
    for (const key of ["sk_a", "sk_b", "k".repeat(300)]) {
      const older = createHash("sha256").update(key).digest("base64url");
      expect(parseInvalidation(JSON.stringify({ v: 1, kind: "key", keyHash: older }))).toEqual({
        v: 1,
        kind: "key",
        keyHash: keyHash(key),
      });
    }
    // Neither form with anything else: refused.
    for (const bad of [`${hash}=`, `${"A".repeat(42)}==`, "A".repeat(42), "A".repeat(44), "+".repeat(43)]) {
      expect(parseInvalidation(JSON.stringify({ v: 1, kind: "key", keyHash: bad }))).toBeUndefined();
    }
  });
});
