// `unknownKeyLimit`: after `max` unknown keys (the service said NOT_FOUND) or malformed ones
// (refused before any call: bad credentials, an over-long key, a failed checksum) from one client
// address within `window` ms, that address's keys are answered 429 without a call to the key
// service until the window ends. A key the verification cache holds as valid still passes. The
// count lives in the store (`Store.count`): per process with `memoryStore()`, shared by the fleet
// with `redisStore()`. An address found blocked is remembered here until its window ends, so a
// flood from it costs no store call either.

import { LRUCache } from "lru-cache";
import type { CounterState, Store } from "./cache-store";

/** The settings of `unknownKeyLimit`, parsed. */
export interface UnknownKeyLimitSettings<Req> {
  readonly max: number;
  /** ms. */
  readonly window: number;
  /** The app's own way to name a request's client address; undefined: the adapter's. */
  readonly address: ((req: Req) => string | undefined) | undefined;
}

export interface UnknownKeyLimit {
  /** Seconds to send in `Retry-After` when this address is blocked as far as this process knows; else undefined. */
  blockedHere(address: string): number | undefined;
  /** The same, asking the store (shared with the fleet) when this process knows of no block. */
  blocked(address: string): number | undefined | Promise<number | undefined>;
  /**
   * Counts one unknown or malformed key from this address. Resolves when counted, with the seconds
   * of `Retry-After` when this key was over the limit (another instance may have counted the
   * others); never rejects.
   */
  count(address: string): Promise<number | undefined>;
}

/** How many blocked addresses one process remembers (the least recently seen go first). */
const MAX_BLOCKED = 10_000;

/** The counter's name in the store. */
const counterName = (address: string): string => `unknown-keys:${address}`;

export function createUnknownKeyLimit(
  settings: { max: number; window: number },
  store: Store & Required<Pick<Store, "count">>,
): UnknownKeyLimit {
  const { max, window } = settings;
  // Address → when its block ends (ms since the epoch).
  const blockedUntil = new LRUCache<string, number>({ max: MAX_BLOCKED });

  function blockedHere(address: string): number | undefined {
    const until = blockedUntil.get(address);
    if (until === undefined) return undefined;
    const left = until - Date.now();
    if (left > 0) return Math.max(1, Math.ceil(left / 1000));
    blockedUntil.delete(address);
    return undefined;
  }

  /** Learns from a counter's state; the seconds of the block when it is one. */
  function learn(address: string, state: CounterState): number | undefined {
    if (state.count < max || state.resetMs <= 0) return undefined;
    blockedUntil.set(address, Date.now() + state.resetMs);
    return Math.max(1, Math.ceil(state.resetMs / 1000));
  }

  return {
    blockedHere,
    blocked(address) {
      const here = blockedHere(address);
      if (here !== undefined) return here;
      const state = store.count(counterName(address), 0, window);
      // A store must not reject; one that does blocks nothing.
      return state instanceof Promise
        ? state.then(
            (s) => learn(address, s),
            () => undefined,
          )
        : learn(address, state);
    },
    async count(address) {
      let state: CounterState;
      try {
        state = await store.count(counterName(address), 1, window);
      } catch {
        return undefined; // As above: a store that rejects counts nothing.
      }
      const retryAfter = learn(address, state);
      return state.count > max ? retryAfter : undefined;
    },
  };
}
