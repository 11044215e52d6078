// Base58 (Bitcoin alphabet) encoding: generated keys, ids and the checksum of checksummed keys.
// The alphabet is in ASCII order, so fixed-width encodings sort like the numbers they encode.
// Pure TypeScript (no node: imports): the middleware checks keys with it too.

export const BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** Encodes bytes as base58; each leading zero byte becomes a leading "1". */
export function encodeBase58(bytes: Uint8Array): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  // The number's base-58 digits, least significant first: each byte multiplies them by 256 and
  // adds itself. 32-bit integers, no BigInt (log 256 / log 58 < 1.37 digits a byte).
  const digits = new Uint8Array(Math.ceil((bytes.length - zeros) * 1.37) + 1);
  let length = 0;
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i]!;
    for (let j = 0; j < length; j++) {
      carry += digits[j]! << 8;
      digits[j] = carry % 58;
      carry = (carry / 58) | 0;
    }
    while (carry > 0) {
      digits[length++] = carry % 58;
      carry = (carry / 58) | 0;
    }
  }
  let out = "1".repeat(zeros);
  for (let j = length - 1; j >= 0; j--) out += BASE58_ALPHABET[digits[j]!]!;
  return out;
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
