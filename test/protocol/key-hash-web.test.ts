// The Web path's key hash names a key exactly as the node:crypto one does, in both of its forms
// (node:crypto lent by the runtime, and Web Crypto where none is lent): answers kept, stored or
// invalidated by one runtime are found by the other.
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { keyHash, KEY_HASH_PATTERN } from "../../src/protocol/key-hash";
import { subtleKeyHash, webKeyHash } from "../../src/protocol/key-hash-web";

describe("webKeyHash", () => {
  it("equals keyHash for any key, ASCII or not, with Web Crypto and with the runtime's node:crypto", async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: "grapheme", maxLength: 600 }), async (key) => {
        expect(await webKeyHash(key)).toBe(keyHash(key));
        expect(await subtleKeyHash(key)).toBe(keyHash(key));
      }),
    );
    expect(await webKeyHash("sk_test")).toMatch(KEY_HASH_PATTERN);
  });

  it("hashes at once where the runtime lends node:crypto (Node does), with no promise on the cached path", () => {
    expect(typeof process.getBuiltinModule).toBe("function");
    expect(webKeyHash("sk_test")).toBe(keyHash("sk_test"));
  });

  it("falls back to Web Crypto where the runtime lends no node:crypto (Workers)", async () => {
    const lend = process.getBuiltinModule;
    vi.resetModules();
    try {
      (process as { getBuiltinModule?: unknown }).getBuiltinModule = undefined;
      const fresh = await import("../../src/protocol/key-hash-web");
      const hashed = fresh.webKeyHash("sk_test");
      expect(hashed).toBeInstanceOf(Promise);
      expect(await hashed).toBe(keyHash("sk_test"));
    } finally {
      process.getBuiltinModule = lend;
    }
  });
});
