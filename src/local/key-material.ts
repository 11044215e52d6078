// Key material: generating keys (`prefix_` + base58 of random bytes), hashing them for storage
// (base64 SHA-256; the plaintext is never stored) and the displayable `start`.
import crypto, { randomBytes } from "node:crypto";
import { encodeBase58 } from "./base58";

export const DEFAULT_BYTE_LENGTH = 16;

export interface GeneratedKey {
  key: string;
  hash: string;
  start: string;
}

/** A new key: `prefix_` + base58 of `byteLength` random bytes (no prefix → just the base58). */
export function generateKey(prefix: string | undefined, byteLength = DEFAULT_BYTE_LENGTH): GeneratedKey {
  const body = encodeBase58(randomBytes(byteLength));
  const key = prefix ? `${prefix}_${body}` : body;
  return { key, hash: hashKey(key), start: prefix ? `${prefix}_${body.slice(0, 4)}` : body.slice(0, 4) };
}

const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: "base64") => string }).hash;

/** base64(SHA-256(key)): the only form in which keys and root keys are stored. */
export function hashKey(key: string): string {
  // crypto.hash (Node >= 20.12) is the one-shot form, cheaper than createHash per request.
  return oneShotHash !== undefined ? oneShotHash("sha256", key, "base64") : crypto.createHash("sha256").update(key, "utf8").digest("base64");
}
