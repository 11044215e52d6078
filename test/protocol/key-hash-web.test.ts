// The Web Crypto key hash names a key exactly as the node:crypto one does: answers kept, stored or
// invalidated by one runtime are found by the other.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { keyHash, KEY_HASH_PATTERN } from "../../src/protocol/key-hash";
import { webKeyHash } from "../../src/protocol/key-hash-web";

describe("webKeyHash", () => {
  it("equals keyHash for any key, ASCII or not", async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: "grapheme", maxLength: 600 }), async (key) => {
        expect(await webKeyHash(key)).toBe(keyHash(key));
      }),
    );
    expect(await webKeyHash("sk_test")).toMatch(KEY_HASH_PATTERN);
  });
});
