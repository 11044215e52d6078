// The checksummed key format: `[prefix_]kg0<random><checksum>`, where the checksum is the CRC32 of
// everything before it in 6 base58 digits. A key claims the format when the part after its last
// `_` (the whole key without one) starts with `kg0`: keys of the other format never do, since
// their random part is base58, which has no `0`. Pure TypeScript (no node: imports): the key
// service, apiKeyAuth() and its Web adapters all check keys with it, without a lookup.
import { BASE58_ALPHABET, encodeBase58Fixed } from "./base58";

/** Marks a key of the checksummed format: right after the prefix's `_` (or at the start). */
export const CHECKSUM_MARKER = "kg0";

/** Base58 digits of the checksum (58^6 > 2^32). */
export const CHECKSUM_WIDTH = 6;

/**
 * What a secret scanner searches for: an optional prefix of up to 16 letters, digits and
 * underscores with its `_`, the marker, then base58 (the random part of 16..255 bytes: 22..349
 * digits, and the 6 of the checksum).
 */
export const CHECKSUMMED_KEY_PATTERN = /\b(?:[A-Za-z0-9_]{1,16}_)?kg0[1-9A-HJ-NP-Za-km-z]{28,355}\b/;

const DIGIT_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < BASE58_ALPHABET.length; i++) DIGIT_VALUE[BASE58_ALPHABET.charCodeAt(i)] = i;

const CRC_TABLE = new Int32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  CRC_TABLE[n] = c;
}

/** CRC32 (IEEE, as zlib's) of the first `length` characters of an ASCII string; -1 when one is not ASCII. */
function crc32Ascii(text: string, length: number): number {
  let crc = -1;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code > 0x7f) return -1;
    crc = CRC_TABLE[(crc ^ code) & 0xff]! ^ (crc >>> 8);
  }
  return (crc ^ -1) >>> 0;
}

/** The checksum of `body` (the key without its checksum, all ASCII): CRC32 in 6 base58 digits. */
export function keyChecksum(body: string): string {
  const n = crc32Ascii(body, body.length);
  if (n === -1) throw new TypeError("keyChecksum: a key is ASCII");
  return encodeBase58Fixed(BigInt(n), CHECKSUM_WIDTH);
}

/** Whether the key claims the checksummed format (its last `_`-separated part starts with the marker). */
export function claimsChecksum(key: string): boolean {
  return key.startsWith(CHECKSUM_MARKER, key.lastIndexOf("_") + 1);
}

/**
 * Whether a key that claims the checksummed format fails it: a random part that is not base58,
 * or a checksum that does not match. False for keys of the other format (they are not checked).
 * No allocation.
 */
export function failsChecksum(key: string): boolean {
  const start = key.lastIndexOf("_") + 1;
  if (!key.startsWith(CHECKSUM_MARKER, start)) return false;
  const end = key.length - CHECKSUM_WIDTH;
  // At least one random digit.
  if (end <= start + CHECKSUM_MARKER.length) return true;
  for (let i = start + CHECKSUM_MARKER.length; i < key.length; i++) {
    const code = key.charCodeAt(i);
    if (code > 0x7f || DIGIT_VALUE[code]! < 0) return true;
  }
  let expected = crc32Ascii(key, end);
  if (expected === -1) return true;
  for (let i = key.length - 1; i >= end; i--) {
    if (DIGIT_VALUE[key.charCodeAt(i)] !== expected % 58) return true;
    expected = Math.floor(expected / 58);
  }
  return false;
}
