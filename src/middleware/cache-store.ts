// The store: where apiKeyAuth() keeps verification answers between requests. The `Store`
// interface is the one extension point a backend implements (as express-rate-limit's Store);
// `memoryStore()` is the default (lru-cache), `redisStore()` from "keyguard/redis" a shared one.
//
// What is kept: only answers no service-side counter depends on (no credits, no rate limits):
// VALID for `ttl` (never past the key's `expires`) and NOT_FOUND for `negativeTtl`, each under the
// SHA-256 of the key plus the permission query. Never a key.
//
// Counters: `count` adds to a named counter in a fixed window (apiKeyAuth()'s `unknownKeyLimit`
// counts unknown and malformed keys per client address with it), kept where the answers are:
// in this process, or with `redisStore()` in Redis, shared by the fleet.
//
// Revocation: every invalidation (by key hash, by keyId, or all) is recorded with a sequence
// number; an answer whose verification started before an invalidation that concerns it is
// refused by `settle`, so a call in flight during a revoke can never put the old answer back.

import { LRUCache } from "lru-cache";
import { ConfigError, optionNames } from "../config-error";
import { optionChecks } from "../option-checks";
import type { InvalidationMessage } from "../protocol/invalidation-message";
import type { VerifyKeyResult } from "../protocol/types";

/** One answer's place: the key's SHA-256 (`keyHash`, base64) and the permission query it was asked with. */
export interface AnswerRef {
  readonly keyHash: string;
  /** The permission query sent with the key ("" for none). */
  readonly query: string;
}

/** A miss: what `settle` needs to store the answer the service then gives. Opaque to the middleware. */
export interface Ticket {
  readonly ref: AnswerRef;
}

export type Lookup =
  { readonly hit: Readonly<VerifyKeyResult>; readonly ticket?: undefined } | { readonly hit?: undefined; readonly ticket: Ticket };

/** The cache settings of the apiKeyAuth() using a store. */
export interface StoreSettings {
  /** Lifetime of a VALID answer, ms (capped by the key's `expires`); 0 keeps none. */
  readonly ttl: number;
  /** Lifetime of a NOT_FOUND answer, ms; 0 keeps none. */
  readonly negativeTtl: number;
}

/**
 * What a store backend implements. Every method must be safe to call at any time and must not
 * throw or reject: a store that cannot reach its backend answers from memory, or reports a miss.
 */
export interface Store {
  /** The answer kept in this process, synchronously; undefined when there is none here. The hot path. */
  peek(ref: AnswerRef): Readonly<VerifyKeyResult> | undefined;
  /**
   * The answer kept anywhere (memory, then a shared tier), or a miss with a ticket. A shared
   * store may wait up to `maxWait` ms for another instance that is already asking the service.
   */
  lookup(ref: AnswerRef, maxWait: number): Lookup | Promise<Lookup>;
  /**
   * After a miss: keeps the service's answer for `ttl` ms, unless an invalidation concerning it
   * (its key hash, its `keyId`, or all) came after the lookup. `ttl` 0 (or no result: the call
   * failed) keeps nothing and only ends the ticket.
   */
  settle(ticket: Ticket, result: Readonly<VerifyKeyResult> | undefined, ttl: number): void;
  /** Forgets answers, here and on every instance sharing the store. Resolves when sent; never rejects. */
  invalidate(message: InvalidationMessage): Promise<void>;
  /**
   * Calls `listener` with every invalidation applied to this store: local ones, ones from other
   * instances, and `{ kind: "all" }` when the store may have missed some (e.g. after a reconnect).
   * Returns a function that removes the listener.
   */
  subscribe(listener: (message: InvalidationMessage) => void): () => void;
  /**
   * Adds `add` (0 only reads) to the counter `name` and gives its state. A counter counts in a
   * fixed window of `window` ms, opened by the first addition after the last one ended. Shared as
   * the answers are (`redisStore()`: by every instance; when Redis cannot answer, this instance's
   * own count). Optional: `apiKeyAuth({ unknownKeyLimit })` needs it.
   */
  count?(name: string, add: number, window: number): CounterState | Promise<CounterState>;
  /** Releases connections, timers and listeners (optional). */
  close?(): Promise<void>;
}

/** A counter's state (see {@link Store.count}). */
export interface CounterState {
  /** What the counter holds in its current window; 0 when no window is open. */
  readonly count: number;
  /** ms until its window ends; 0 when no window is open. */
  readonly resetMs: number;
}

/** A result no service-side counter depends on: no credits, no rate limits. */
export function isReusable(result: Readonly<VerifyKeyResult>): boolean {
  if (result.credits !== undefined && result.credits !== null) return false;
  if (Array.isArray(result.ratelimits) && result.ratelimits.length > 0) return false;
  const identityLimits = result.identity?.ratelimits;
  return !(Array.isArray(identityLimits) && identityLimits.length > 0);
}

/** How long this result may be kept, ms; 0 = not at all. */
export function storableFor(result: Readonly<VerifyKeyResult>, settings: StoreSettings, now: number): number {
  if (!isReusable(result)) return 0;
  if (result.valid === true && result.code === "VALID") {
    const untilExpiry = typeof result.expires === "number" ? result.expires - now : Infinity;
    return Math.max(0, Math.floor(Math.min(settings.ttl, untilExpiry)));
  }
  if (result.valid === false && result.code === "NOT_FOUND") return settings.negativeTtl;
  return 0;
}

/** Freezes a result and everything in it (answers are shared between requests). */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * The key of one answer in a map: the key hash alone for no query (the usual case, and no string
 * to build per request), else key hash, NUL and query.
 */
export const refKey = (ref: AnswerRef): string => (ref.query === "" ? ref.keyHash : `${ref.keyHash}\u0000${ref.query}`);

/** Whether a {@link refKey} belongs to this key hash. */
export const isRefKeyOf = (k: string, keyHash: string): boolean =>
  k === keyHash || (k.startsWith(keyHash) && k.charCodeAt(keyHash.length) === 0);

/** How many tombstones are kept before older ones are summarised (conservatively) as one. */
const MAX_TOMBSTONES = 10_000;

/**
 * Which invalidations happened since a point in time: `mark()` before a verification, then
 * `allows(mark, keyHash, keyId)` when its answer comes back. Bounded: past MAX_TOMBSTONES, every
 * answer started before the oldest forgotten one is refused.
 */
class Tombstones {
  #seq = 0;
  #cleared = 0;
  #forgotten = 0;
  readonly #byHash = new Map<string, number>();
  readonly #byId = new Map<string, number>();

  mark(): number {
    return this.#seq;
  }

  record(message: InvalidationMessage): void {
    const seq = ++this.#seq;
    if (message.kind === "all") {
      this.#cleared = seq;
      this.#byHash.clear();
      this.#byId.clear();
      return;
    }
    if (this.#byHash.size + this.#byId.size >= MAX_TOMBSTONES) {
      this.#forgotten = seq - 1;
      this.#byHash.clear();
      this.#byId.clear();
    }
    if (message.kind === "key") this.#byHash.set(message.keyHash, seq);
    else this.#byId.set(message.keyId, seq);
  }

  allows(mark: number, keyHash: string, keyId: string | undefined): boolean {
    if (mark === this.#seq) return true;
    if (this.#cleared > mark || this.#forgotten > mark) return false;
    if ((this.#byHash.get(keyHash) ?? 0) > mark) return false;
    return keyId === undefined || (this.#byId.get(keyId) ?? 0) <= mark;
  }
}

export interface MemoryStoreOptions {
  /** Most answers kept. Default 1000. */
  max?: number;
}

interface Kept {
  readonly result: Readonly<VerifyKeyResult>;
  readonly keyId: string | undefined;
}

interface MemoryTicket extends Ticket {
  readonly mark: number;
}

/** The memory tier, with what a shared store needs on top of the {@link Store} interface. */
export interface MemoryStore extends Store {
  /** Always synchronous here. */
  lookup(ref: AnswerRef, maxWait?: number): Lookup;
  /** Keeps an answer read from a shared tier, unless invalidated since `mark`. */
  fill(ref: AnswerRef, result: Readonly<VerifyKeyResult>, ttl: number, mark: number): void;
  /** The current point in the invalidation sequence. */
  mark(): number;
  /** Applies an invalidation here only (a shared store sends it to the others). */
  apply(message: InvalidationMessage): void;
  /** Drops one answer here only (e.g. a newer answer for it could not be kept). */
  forget(ref: AnswerRef): void;
  /** Always synchronous here. */
  count(name: string, add: number, window: number): CounterState;
  readonly size: number;
}

/** How many counters the memory tier keeps at most (the least recently used go first). */
const MAX_COUNTERS = 10_000;

const OPTION_NAMES = optionNames<MemoryStoreOptions>()({ max: true });

/**
 * The default store: answers in this process (lru-cache), invalidations reach this process only.
 * Throws `ConfigError` for a bad `max` or an unknown option name.
 */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const check = optionChecks("memoryStore", ConfigError);
  check.unknownNames(Object.keys(check.options(options, "Pass { max } or nothing.")), OPTION_NAMES);
  const max = check.integer("max", options.max, { min: 1, default: 1000 });
  // Wall-clock time, so that TTLs follow `Date.now()` (and fake timers in tests).
  const byKeyId = new Map<string, Set<string>>();
  const lru = new LRUCache<string, Kept>({
    max,
    perf: { now: () => Date.now() },
    // Date.now() is cheap: read it per lookup rather than cache it behind a timer armed every ms.
    ttlResolution: 0,
    dispose: (kept, k) => {
      if (kept.keyId === undefined) return;
      const set = byKeyId.get(kept.keyId);
      set?.delete(k);
      if (set?.size === 0) byKeyId.delete(kept.keyId);
    },
  });
  const tombstones = new Tombstones();
  // Counters: a window's end and its count, per name.
  const counters = new LRUCache<string, { count: number; end: number }>({ max: MAX_COUNTERS });
  const listeners = new Set<(message: InvalidationMessage) => void>();

  function keep(ref: AnswerRef, result: Readonly<VerifyKeyResult>, ttl: number, mark: number): void {
    const keyId = typeof result.keyId === "string" ? result.keyId : undefined;
    if (ttl <= 0 || !tombstones.allows(mark, ref.keyHash, keyId)) return;
    const k = refKey(ref);
    lru.set(k, { result, keyId }, { ttl });
    if (keyId !== undefined) {
      let set = byKeyId.get(keyId);
      if (set === undefined) byKeyId.set(keyId, (set = new Set()));
      set.add(k);
    }
  }

  function apply(message: InvalidationMessage): void {
    tombstones.record(message);
    if (message.kind === "all") lru.clear();
    else if (message.kind === "keyId") {
      for (const k of [...(byKeyId.get(message.keyId) ?? [])]) lru.delete(k);
    } else {
      for (const k of [...lru.keys()]) if (isRefKeyOf(k, message.keyHash)) lru.delete(k);
    }
    for (const listener of listeners) listener(message);
  }

  return {
    peek(ref) {
      return lru.get(refKey(ref))?.result;
    },
    lookup(ref) {
      const kept = lru.get(refKey(ref));
      if (kept !== undefined) return { hit: kept.result };
      return { ticket: { ref, mark: tombstones.mark() } as MemoryTicket };
    },
    settle(ticket, result, ttl) {
      if (result !== undefined) keep(ticket.ref, result, ttl, (ticket as MemoryTicket).mark);
    },
    fill: keep,
    forget(ref) {
      lru.delete(refKey(ref));
    },
    mark: () => tombstones.mark(),
    apply,
    count(name, add, window) {
      const now = Date.now();
      let counter = counters.get(name);
      if (counter !== undefined && counter.end <= now) counter = undefined;
      if (add <= 0) return counter === undefined ? { count: 0, resetMs: 0 } : { count: counter.count, resetMs: counter.end - now };
      if (counter === undefined) counters.set(name, (counter = { count: 0, end: now + window }));
      counter.count += add;
      return { count: counter.count, resetMs: counter.end - now };
    },
    async invalidate(message) {
      apply(message);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    get size() {
      return lru.size;
    },
  };
}
