// What an error message may repeat of a caller's value: every generated key and root key is
// described, every id this service makes is quoted, and ordinary names are quoted.
import { describe, expect, it } from "vitest";
import { echo, mayBeSecret } from "../../../src/server/domain/echo";
import { newId } from "../../../src/server/domain/ids";
import { generateKey } from "../../../src/server/domain/key-material";

describe("echo", () => {
  it("never quotes a generated key or root key, whatever its prefix and length", () => {
    for (const prefix of [undefined, "sk", "key", "api", "prod_live", "x"]) {
      for (const bytes of [16, 24, 32, 64]) {
        for (let i = 0; i < 200; i++) {
          const { key } = generateKey(prefix, bytes);
          expect(mayBeSecret(key), key).toBe(true);
          expect(echo(key)).not.toContain(key.slice(-12));
        }
      }
    }
  });

  it("quotes every id this service makes", () => {
    for (const prefix of ["req", "key", "api", "perm", "role", "id", "rl", "ws", "rk", "rlor", "mig"] as const) {
      for (let i = 0; i < 200; i++) {
        const id = newId(prefix);
        expect(mayBeSecret(id), id).toBe(false);
        expect(echo(id)).toBe(JSON.stringify(id));
      }
    }
  });

  it("quotes a rate-limit namespace's derived id", async () => {
    const { createNamespace } = await import("../../../src/server/operations/namespaces");
    const { memoryStorage } = await import("../../../src/server/storage/memory/store");
    const store = memoryStorage();
    for (let i = 0; i < 50; i++) {
      const { id } = await store.transaction((tx) => createNamespace(tx, "ws_1", `ns-${i}`, 0));
      expect(mayBeSecret(id), id).toBe(false);
    }
    await store.close();
  });

  it("quotes names, slugs and external ids", () => {
    for (const name of [
      "docs.write",
      "api.*.read_key",
      "customer-123",
      "user_42",
      "Premium plan",
      "readwritedocumentsandmore",
      "my-api-v2",
    ]) {
      expect(echo(name)).toBe(JSON.stringify(name));
    }
  });

  it("does not take a key shaped like an id (a known prefix, 22 characters) for one: its time part is no creation time", () => {
    // 22 base58 characters after "key_", the first 11 not a time this service could have written.
    expect(mayBeSecret("key_zzzzzzzzzzzAbCdEfGh1234")).toBe(true);
  });
});
