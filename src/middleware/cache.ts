// The verification cache (lru-cache): short-lived answers for keys whose verification changes no
// state at the service, and one shared in-flight call per key. Keys are SHA-256 hashes, never keys.
//
// The invariant: never let more requests through than the service would have. A result that
// reports credits or rate limits was charged by the service, so it is neither stored nor handed to
// the requests that waited on it: each of those verifies on its own. Such a key is then remembered
// as charged, and its later requests call the service in parallel instead of joining one call.

import * as crypto from "node:crypto";
import { LRUCache } from "lru-cache";
import type { VerifyKeyResult } from "../protocol/types";

export interface CacheSettings {
  /** Lifetime of a VALID answer, ms (capped by the key's `expires`); 0 stores none. */
  readonly ttl: number;
  /** Lifetime of a NOT_FOUND answer, ms; 0 stores none. */
  readonly negativeTtl: number;
  /** Most answers kept. */
  readonly max: number;
}

const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: "base64url") => string }).hash;

/** SHA-256 of a key, base64url. The only form in which a key is kept. */
export function hashKey(key: string): string {
  // crypto.hash (Node >= 20.12) is the one-shot form, a few times cheaper than createHash.
  return oneShotHash !== undefined ? oneShotHash("sha256", key, "base64url") : crypto.createHash("sha256").update(key).digest("base64url");
}

/** The cache key: the key's hash plus the request shape that can change the answer. */
export function cacheKeyFor(keyHash: string, shape: string): string {
  return `${keyHash}\u0000${shape}`;
}

/** A result that no service-side counter depends on: no credits, no rate limits. */
export function isReusable(result: Readonly<VerifyKeyResult>): boolean {
  if (result.credits !== undefined && result.credits !== null) return false;
  if (Array.isArray(result.ratelimits) && result.ratelimits.length > 0) return false;
  const identityLimits = result.identity?.ratelimits;
  return !(Array.isArray(identityLimits) && identityLimits.length > 0);
}

/** How long this result may be stored, ms; 0 = not at all. */
export function storableFor(result: Readonly<VerifyKeyResult>, settings: CacheSettings, now: number): number {
  if (!isReusable(result)) return 0;
  if (result.valid === true && result.code === "VALID") {
    const untilExpiry = typeof result.expires === "number" ? result.expires - now : Infinity;
    return Math.max(0, Math.floor(Math.min(settings.ttl, untilExpiry)));
  }
  if (result.valid === false && result.code === "NOT_FOUND") return settings.negativeTtl;
  return 0;
}

interface Entry {
  readonly result: Readonly<VerifyKeyResult>;
  readonly reusable: boolean;
  readonly storable: boolean;
  /** The context of the request whose call produced it. */
  readonly owner: Context;
}

interface Context {
  readonly run: () => Promise<Readonly<VerifyKeyResult>>;
}

export interface VerificationCache {
  /**
   * The answer for a key hash and request shape: a stored one, the result of an in-flight call
   * another request started (only if reusable, and never for a key known to be charged), or the
   * result of `run()`. Failures are never stored.
   */
  verify(keyHash: string, shapeKey: string, run: () => Promise<Readonly<VerifyKeyResult>>): Promise<Readonly<VerifyKeyResult>>;
  /** A stored answer, synchronously; undefined when none is stored (or one is in flight). */
  peek(keyHash: string, shapeKey: string): Readonly<VerifyKeyResult> | undefined;
  /**
   * Learns from any answer the service gave for a key: one with credits or rate limits marks the
   * key as charged (its requests then call the service in parallel instead of joining one call,
   * and answers stored before are dropped); a reusable one clears the mark.
   */
  observe(keyHash: string, result: Readonly<VerifyKeyResult>): void;
  /** Drops every answer (and forgets in-flight calls) for a key hash. */
  deleteKeyHash(keyHash: string): void;
  clear(): void;
  readonly size: number;
}

/** How long a key stays marked as charged when `ttl` is 0 (no answers stored), ms. */
const CHARGED_MARK_TTL_WITHOUT_CACHE = 30_000;

export function createVerificationCache(settings: CacheSettings): VerificationCache {
  // Wall-clock time, so that TTLs follow `Date.now()` (and fake timers in tests).
  const perf = { now: () => Date.now() };
  const lru = new LRUCache<string, Entry, Context>({
    max: settings.max,
    perf,
    // An invalidation while a call is in flight must not fail the requests waiting on it;
    // their answer is then returned but not stored.
    ignoreFetchAbort: true,
    fetchMethod: async (_key, _stale, { options, context }) => {
      const result = await context.run();
      const ttl = storableFor(result, settings, Date.now());
      // Entries that must not be kept are deleted by the first waiter (see verify) before any
      // other request can read them; the 1 ms TTL is a backstop.
      options.ttl = ttl > 0 ? ttl : 1;
      return { result, reusable: isReusable(result), storable: ttl > 0, owner: context };
    },
  });
  // Key hashes whose last answer was charged (bounded; a mark lives as long as a VALID answer would).
  const charged = new LRUCache<string, true>({
    max: settings.max,
    ttl: settings.ttl > 0 ? settings.ttl : CHARGED_MARK_TTL_WITHOUT_CACHE,
    perf,
  });

  // lru-cache does not list in-flight fetches in keys(); track them so invalidation reaches them.
  const pending = new Map<string, number>();

  function deleteStored(keyHash: string, includePending: boolean): void {
    const prefix = cacheKeyFor(keyHash, "");
    const keys = includePending ? [...lru.keys(), ...pending.keys()] : [...lru.keys()];
    for (const k of new Set(keys.filter((key) => key.startsWith(prefix)))) lru.delete(k);
  }

  return {
    async verify(keyHash, shapeKey, run) {
      // A charged key's answers are never shared: joining would only make each request wait for
      // another's call before making its own.
      if (charged.has(keyHash)) return run();
      const cacheKey = cacheKeyFor(keyHash, shapeKey);
      const context: Context = { run };
      pending.set(cacheKey, (pending.get(cacheKey) ?? 0) + 1);
      let entry: Entry | undefined;
      try {
        entry = await lru.fetch(cacheKey, { context });
      } finally {
        const n = pending.get(cacheKey)! - 1;
        if (n === 0) pending.delete(cacheKey);
        else pending.set(cacheKey, n);
      }
      if (entry === undefined) return run();
      if (!entry.storable && lru.peek(cacheKey, { allowStale: true }) === entry) lru.delete(cacheKey);
      if (entry.owner === context || entry.reusable) return entry.result;
      return run();
    },
    peek(keyHash, shapeKey) {
      const entry = lru.get(cacheKeyFor(keyHash, shapeKey));
      return entry !== undefined && entry.storable ? entry.result : undefined;
    },
    observe(keyHash, result) {
      if (isReusable(result)) {
        charged.delete(keyHash);
        return;
      }
      if (charged.has(keyHash)) return;
      charged.set(keyHash, true);
      deleteStored(keyHash, false);
    },
    deleteKeyHash(keyHash) {
      charged.delete(keyHash);
      deleteStored(keyHash, true);
    },
    clear() {
      lru.clear();
      charged.clear();
    },
    get size() {
      return lru.size;
    },
  };
}
