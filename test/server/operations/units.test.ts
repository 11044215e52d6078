// Pure parts of the local service: base58, ids, key material, pagination and content negotiation.
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BASE58_ALPHABET, encodeBase58, encodeBase58Fixed } from "../../../src/protocol/base58";
import { errorContentType } from "../../../src/server/http/envelope";
import { encodeWords, newId } from "../../../src/server/domain/ids";
import { generateKey } from "../../../src/server/domain/key-material";
import { keyHash } from "../../../src/protocol/key-hash";
import { paginate } from "../../../src/server/domain/pagination";

describe("base58", () => {
  it("encodes known vectors (Bitcoin alphabet, leading zeros as 1)", () => {
    expect(encodeBase58(new Uint8Array([]))).toBe("");
    expect(encodeBase58(new Uint8Array([0, 0, 1]))).toBe("112");
    expect(encodeBase58(Buffer.from("hello world"))).toBe("StV1DL6CwTryKyV");
    expect(encodeBase58(new Uint8Array([255, 255]))).toBe("LUv");
  });

  it("encodes any bytes as the base58 digits of their number, after a 1 per leading zero byte", () => {
    const byDefinition = (bytes: Uint8Array): string => {
      let zeros = 0;
      while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
      let n = 0n;
      for (const b of bytes) n = (n << 8n) | BigInt(b);
      let out = "";
      for (; n > 0n; n /= 58n) out = BASE58_ALPHABET[Number(n % 58n)]! + out;
      return "1".repeat(zeros) + out;
    };
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat({ max: 4 }), (tail, zeros) => {
        const bytes = new Uint8Array([...new Array<number>(zeros).fill(0), ...tail]);
        expect(encodeBase58(bytes)).toBe(byDefinition(bytes));
      }),
      { numRuns: 300 },
    );
  });

  it("fixed-width encodings sort like the numbers", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 60n }), fc.bigInt({ min: 0n, max: 2n ** 60n }), (a, b) => {
        const ea = encodeBase58Fixed(a, 11);
        const eb = encodeBase58Fixed(b, 11);
        expect(ea < eb).toBe(a < b);
      }),
    );
    expect([...BASE58_ALPHABET].sort().join("")).toBe(BASE58_ALPHABET);
  });
});

describe("ids", () => {
  it("have the prefix and sort in creation order", () => {
    const ids = Array.from({ length: 500 }, () => newId("perm"));
    for (const id of ids) expect(id).toMatch(/^perm_[1-9A-HJ-NP-Za-km-z]{22}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("encode their 64 random bits as the fixed-width base58 of the number", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: 0, max: 2 ** 32 - 1 }), (hi, lo) => {
        expect(encodeWords(hi, lo)).toBe(encodeBase58Fixed((BigInt(hi) << 32n) | BigInt(lo), 11));
      }),
    );
    expect(encodeWords(2 ** 32 - 1, 2 ** 32 - 1)).toBe(encodeBase58Fixed(2n ** 64n - 1n, 11));
    expect(encodeWords(0, 0)).toBe("11111111111");
  });
});

describe("key material", () => {
  it("prefix_ + base58 of byteLength random bytes; start = prefix + 4; hash = base64 SHA-256", () => {
    const { key, hash, start } = generateKey("sk", 16);
    expect(key).toMatch(/^sk_[1-9A-HJ-NP-Za-km-z]{16,23}$/);
    expect(start).toBe(key.slice(0, 7));
    expect(hash).toBe(createHash("sha256").update(key).digest("base64"));
    expect(keyHash(key)).toBe(hash);
    expect(generateKey(undefined, 32).key).toMatch(/^[1-9A-HJ-NP-Za-km-z]{40,44}$/);
    expect(generateKey("sk").key).not.toBe(generateKey("sk").key);
  });

  it("draws fresh bytes for every key across the pool's refills, and the largest keys too", () => {
    // 4 KiB pool: 200 keys of 255 bytes refill it a dozen times, and a draw may not fit its rest.
    const keys = Array.from({ length: 200 }, (_, i) => generateKey(undefined, i % 2 === 0 ? 255 : 16).key);
    expect(new Set(keys).size).toBe(keys.length);
    // No key's bytes repeat in part either: the bodies share no 8-character run.
    const runs = new Set<string>();
    for (const key of keys) for (let i = 0; i + 8 <= key.length; i += 8) runs.add(key.slice(i, i + 8));
    expect(runs.size).toBe(keys.reduce((n, key) => n + Math.floor(key.length / 8), 0));
    expect(generateKey(undefined, 5000).key.length).toBeGreaterThan(6000);
  });
});

describe("paginate", () => {
  const items = ["a", "b", "c", "d", "e"].map((id) => ({ id }));
  it("cursor is the next page's first id; omitted on the last page", () => {
    expect(paginate(items, undefined, 2)).toEqual({ items: items.slice(0, 2), pagination: { cursor: "c", hasMore: true } });
    expect(paginate(items, "c", 2)).toEqual({ items: items.slice(2, 4), pagination: { cursor: "e", hasMore: true } });
    expect(paginate(items, "e", 2)).toEqual({ items: items.slice(4), pagination: { hasMore: false } });
    expect(paginate(items, undefined, 5).pagination).toEqual({ hasMore: false });
  });
});

describe("errorContentType", () => {
  it("follows the Accept header", () => {
    expect(errorContentType("application/problem+json")).toBe("application/problem+json");
    expect(errorContentType("text/plain, */*;q=0.1")).toBe("application/problem+json");
    expect(errorContentType("Application/*")).toBe("application/problem+json");
    expect(errorContentType("application/json")).toBe("application/json");
    expect(errorContentType(undefined)).toBe("application/json");
  });
});
