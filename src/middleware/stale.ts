// `staleIfError`: the last VALID answer per key hash and request shape, with its time, kept apart
// from the cache (bounded, lru-cache) and served only when the key service fails.

import { LRUCache } from "lru-cache";
import type { VerifyKeyResult } from "../protocol/types";
import { cacheKeyFor } from "./cache";

export interface StaleStore {
  /** Keeps a VALID, reusable answer. */
  remember(cacheKey: string, result: Readonly<VerifyKeyResult>): void;
  /** The kept answer if younger than the limit and the key has not expired since. */
  recall(cacheKey: string): { result: Readonly<VerifyKeyResult>; age: number } | undefined;
  /** Drops the answer kept for one key hash and request shape. */
  forget(cacheKey: string): void;
  /** Drops every answer kept for a key hash. */
  deleteKeyHash(keyHash: string): void;
  clear(): void;
}

interface Kept {
  readonly result: Readonly<VerifyKeyResult>;
  readonly at: number;
}

export function createStaleStore(maxAge: number, max: number): StaleStore {
  const lru = new LRUCache<string, Kept>({ max, ttl: maxAge, perf: { now: () => Date.now() } });
  return {
    remember(cacheKey, result) {
      lru.set(cacheKey, { result, at: Date.now() });
    },
    recall(cacheKey) {
      const kept = lru.get(cacheKey);
      if (kept === undefined) return undefined;
      const now = Date.now();
      if (typeof kept.result.expires === "number" && kept.result.expires <= now) return undefined;
      return { result: kept.result, age: now - kept.at };
    },
    forget(cacheKey) {
      lru.delete(cacheKey);
    },
    deleteKeyHash(keyHash) {
      const prefix = cacheKeyFor(keyHash, "");
      const doomed = [...lru.keys()].filter((k) => k.startsWith(prefix));
      for (const k of doomed) lru.delete(k);
    },
    clear() {
      lru.clear();
    },
  };
}
