// Key material: generating keys in an API's format (`prefix_` + base58 of random bytes, or the
// checksummed `prefix_kg0…` of src/protocol/key-checksum.ts), their hash for storage (`keyHash`,
// base64 SHA-256; the plaintext is never stored) and the displayable `start`.
import { randomBytes, randomFillSync } from "node:crypto";
import { CHECKSUM_MARKER, keyChecksum } from "../../protocol/key-checksum";
import { keyHash } from "../../protocol/key-hash";
import { encodeBase58, encodeBase58Fixed } from "../../protocol/base58";
import type { VerifyKeyResult } from "../../protocol/types";

export const DEFAULT_BYTE_LENGTH = 16;

/**
 * The answer to a key whose checksum fails: NOT_FOUND, found without reading the store. One object,
 * so that the metrics tell it from other NOT_FOUND answers (`keyguard_checksum_rejections_total`).
 */
export const CHECKSUM_REJECTED: VerifyKeyResult = Object.freeze({ valid: false, code: "NOT_FOUND" });

/** How an API's new keys look: `plain` (today's, the default) or `checksummed`. */
export type KeyFormat = "plain" | "checksummed";

export const KEY_FORMATS: readonly KeyFormat[] = Object.freeze(["plain", "checksummed"]);

interface GeneratedKey {
  key: string;
  hash: string;
  start: string;
}

/**
 * Keys' random bytes come from a pool the system's generator fills 4 KiB at a time: `randomBytes`
 * costs about 2 µs a call whatever its size (most of it around the generator, not in it). Bytes
 * drawn are copied out and zeroed in the pool.
 */
const POOL = Buffer.alloc(4096);
let poolAt = POOL.length;

/** `n` bytes from the system's cryptographically secure generator, through the pool. */
function secureRandom(n: number): Buffer {
  if (n > POOL.length) return randomBytes(n);
  if (poolAt + n > POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  const bytes = Buffer.from(POOL.subarray(poolAt, poolAt + n));
  POOL.fill(0, poolAt, poolAt + n);
  poolAt += n;
  return bytes;
}

/** A new key: `prefix_` + base58 of `byteLength` random bytes (no prefix → just the base58). */
export function generateKey(prefix: string | undefined, byteLength = DEFAULT_BYTE_LENGTH): GeneratedKey {
  const body = encodeBase58(secureRandom(byteLength));
  const key = prefix ? `${prefix}_${body}` : body;
  return { key, hash: keyHash(key), start: prefix ? `${prefix}_${body.slice(0, 4)}` : body.slice(0, 4) };
}

/** Base58 digits that hold any `byteLength` bytes: the smallest w with 58^w ≥ 256^byteLength. */
function base58Width(byteLength: number): number {
  const max = 1n << BigInt(8 * byteLength);
  let width = 0;
  for (let n = 1n; n < max; n *= 58n) width++;
  return width;
}

/**
 * A new key of the checksummed format: `prefix_` (if any), `kg0`, base58 of `byteLength` random
 * bytes at a fixed width, and the CRC32 of all that in 6 base58 digits.
 */
export function generateChecksummedKey(prefix: string | undefined, byteLength = DEFAULT_BYTE_LENGTH): GeneratedKey {
  let n = 0n;
  for (const b of secureRandom(byteLength)) n = (n << 8n) | BigInt(b);
  const random = encodeBase58Fixed(n, base58Width(byteLength));
  const head = `${prefix ? `${prefix}_` : ""}${CHECKSUM_MARKER}`;
  const key = head + random + keyChecksum(head + random);
  return { key, hash: keyHash(key), start: head + random.slice(0, 4) };
}

/** A new key in `format`. */
export function generateKeyIn(format: KeyFormat | undefined, prefix: string | undefined, byteLength = DEFAULT_BYTE_LENGTH): GeneratedKey {
  return format === "checksummed" ? generateChecksummedKey(prefix, byteLength) : generateKey(prefix, byteLength);
}
