// A key's SHA-256 in base64: the one form in which keyguard names a key anywhere. The key service
// stores it (and finds keys and root keys by it), apiKeyAuth() keys its remembered answers by it,
// and Redis and the invalidation bus carry it. Never the key itself.
import * as crypto from "node:crypto";
import { KEY_HASH_PATTERN } from "./key-hash-web";

const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: "base64") => string }).hash;

/** base64(SHA-256(key)), 44 characters. The encoding is persisted by every key store: never change it. */
export function keyHash(key: string): string {
  // crypto.hash (Node >= 20.12) is the one-shot form, a few times cheaper than createHash.
  return oneShotHash !== undefined
    ? oneShotHash("sha256", key, "base64")
    : crypto.createHash("sha256").update(key, "utf8").digest("base64");
}

/** What {@link keyHash} returns (shared with the Web Crypto form). */
export { KEY_HASH_PATTERN };
