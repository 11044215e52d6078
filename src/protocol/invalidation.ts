// The invalidation bus (invalidation-message.ts) with `invalidateKey`, which names a key by its hash
// computed with node:crypto. The Web runtimes use invalidation-message.ts and `webKeyHash`.

import { invalidateKeyHash, type InvalidationMessage } from "./invalidation-message";
import { keyHash } from "./key-hash";

export * from "./invalidation-message";

/** Forget every answer for `key` (sent as its hash, never the key). */
export const invalidateKey = (key: string): InvalidationMessage => invalidateKeyHash(keyHash(key));
