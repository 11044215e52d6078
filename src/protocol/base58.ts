// Base58 (Bitcoin alphabet) encoding: generated keys, ids and the checksum of checksummed keys.
// The alphabet is in ASCII order, so fixed-width encodings sort like the numbers they encode.
// Pure TypeScript (no node: imports): the middleware checks keys with it too.

export const BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** Encodes bytes as base58; each leading zero byte becomes a leading "1". */
export function encodeBase58(bytes: Uint8Array): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = "";
  while (n > 0n) {
    out = BASE58_ALPHABET[Number(n % 58n)]! + out;
    n /= 58n;
  }
  return "1".repeat(zeros) + out;
}

/** Encodes a non-negative integer in exactly `width` base58 digits (left-padded with "1"). */
export function encodeBase58Fixed(value: bigint, width: number): string {
  let n = value;
  let out = "";
  for (let i = 0; i < width; i++) {
    out = BASE58_ALPHABET[Number(n % 58n)]! + out;
    n /= 58n;
  }
  return out;
}
