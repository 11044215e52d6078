// Key material: generating keys (`prefix_` + base58 of random bytes), their hash for storage
// (`keyHash`, base64 SHA-256; the plaintext is never stored) and the displayable `start`.
import { randomBytes } from "node:crypto";
import { keyHash } from "../../protocol/key-hash";
import { encodeBase58 } from "./base58";

export const DEFAULT_BYTE_LENGTH = 16;

interface GeneratedKey {
  key: string;
  hash: string;
  start: string;
}

/** A new key: `prefix_` + base58 of `byteLength` random bytes (no prefix → just the base58). */
export function generateKey(prefix: string | undefined, byteLength = DEFAULT_BYTE_LENGTH): GeneratedKey {
  const body = encodeBase58(randomBytes(byteLength));
  const key = prefix ? `${prefix}_${body}` : body;
  return { key, hash: keyHash(key), start: prefix ? `${prefix}_${body.slice(0, 4)}` : body.slice(0, 4) };
}
