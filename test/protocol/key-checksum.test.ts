// The checksummed key format: its CRC32 is zlib's, every key the service generates passes and
// matches the scanner's pattern, every single-character change and every swap of neighbours
// fails, and keys of the plain format are never checked.
import { crc32 } from "node:zlib";
import { describe, expect, it } from "vitest";
import { CHECKSUM_WIDTH, CHECKSUMMED_KEY_PATTERN, claimsChecksum, failsChecksum, keyChecksum } from "../../src/protocol/key-checksum";
import { generateChecksummedKey, generateKey } from "../../src/server/domain/key-material";

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const fromBase58 = (digits: string) => [...digits].reduce((n, d) => n * 58 + BASE58.indexOf(d), 0);

describe("the checksummed key format", () => {
  it("its checksum is zlib's CRC32 of the rest, in 6 base58 digits", () => {
    for (const body of ["kg0", "sk_live_kg0abc", "x".repeat(400)]) {
      const sum = keyChecksum(body);
      expect(sum).toHaveLength(CHECKSUM_WIDTH);
      expect(fromBase58(sum)).toBe(crc32(body));
    }
  });

  it("generated keys pass, claim the format and match the scanner's pattern, with and without prefix and at every length", () => {
    for (const prefix of [undefined, "sk", "sk_live", "a".repeat(16)]) {
      for (const bytes of [16, 32, 255]) {
        const { key, start } = generateChecksummedKey(prefix, bytes);
        expect(claimsChecksum(key)).toBe(true);
        expect(failsChecksum(key)).toBe(false);
        expect(key.startsWith(`${prefix ? `${prefix}_` : ""}kg0`)).toBe(true);
        expect(CHECKSUMMED_KEY_PATTERN.exec(`token: ${key}\n`)?.[0]).toBe(key);
        expect(key.startsWith(start)).toBe(true);
      }
    }
  });

  it("every single-character change and every swap of neighbours fails", () => {
    const { key } = generateChecksummedKey("sk", 16);
    const start = key.lastIndexOf("_") + 1 + 3;
    let changed = 0;
    for (let i = start; i < key.length; i++) {
      for (const d of BASE58) {
        if (d === key[i]) continue;
        expect(failsChecksum(key.slice(0, i) + d + key.slice(i + 1)), `${i} → ${d}`).toBe(true);
        changed++;
      }
      if (i + 1 < key.length && key[i] !== key[i + 1]) {
        expect(failsChecksum(key.slice(0, i) + key[i + 1] + key[i] + key.slice(i + 2))).toBe(true);
      }
    }
    expect(changed).toBeGreaterThan(1500);
    // A changed prefix fails too; so do truncation and a character outside base58.
    expect(failsChecksum(`sl${key.slice(2)}`)).toBe(true);
    expect(failsChecksum(key.slice(0, -1))).toBe(true);
    expect(failsChecksum(`${key.slice(0, -1)}0`)).toBe(true);
    expect(failsChecksum(`${key.slice(0, -1)}é`)).toBe(true);
    expect(failsChecksum("kg0")).toBe(true);
    expect(failsChecksum("sk_kg0123456")).toBe(true);
  });

  it("keys of the plain format (and root keys) never claim it, so they are never checked", () => {
    for (let i = 0; i < 200; i++) {
      for (const prefix of [undefined, "sk", "kg0", "a_kg0"]) {
        const { key } = generateKey(prefix, 16 + (i % 20));
        expect(claimsChecksum(key)).toBe(false);
        expect(failsChecksum(key)).toBe(false);
        expect(CHECKSUMMED_KEY_PATTERN.test(key)).toBe(false);
      }
    }
    expect(failsChecksum("")).toBe(false);
    expect(failsChecksum("any-key-at-all")).toBe(false);
  });
});
