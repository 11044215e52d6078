// `rootKeyFailureLimit`: after `max` failed root-key authentications (an unknown root key, or an
// Authorization header that is not `Bearer <key>`) from one address within the window, that
// address's requests are answered 429 without looking at their root key until the window ends.
// The failures are charged to a sliding-window counter through the store's `limit`, the one the
// rate limits use (PostgreSQL + Redis: in Redis, so every instance counts them together); only a
// failure touches the store. An address found over the limit is remembered here until its window
// ends: from then on this instance refuses it without a store call.
import { ServiceError } from "../errors";
import type { Storage } from "../storage/seam";

/** How many blocked addresses one instance remembers (the oldest go first). */
const MAX_BLOCKED = 10_000;

/** Failures that count: a guess at a root key, not a request that sent none. */
const COUNTED: ReadonlySet<string> = new Set(["authentication.key_not_found", "authentication.malformed"]);

export interface RootKeyFailureLimit {
  /**
   * Authenticates with `authenticate` unless `ip` is over the limit (then 429 at once); a failure
   * that counts is charged to `ip`, and the one past the limit is answered 429 as well.
   */
  guard<T>(ip: string, now: number, authenticate: () => Promise<T>): Promise<T>;
}

function tooMany(retryAfterMs: number): ServiceError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new ServiceError(
    "too_many_requests.authentication_failures",
    "Too many requests with an invalid root key came from your address. Try again later.",
    { headers: { "Retry-After": String(seconds) } },
  );
}

export function rootKeyFailureLimit(store: Storage, settings: { readonly max: number; readonly windowMs: number }): RootKeyFailureLimit {
  const { max, windowMs } = settings;
  // Address → when its block ends (the service's clock, ms).
  const blocked = new Map<string, number>();
  const counter = (ip: string) => `root-key-failures:${ip}`;

  function block(ip: string, until: number): void {
    blocked.delete(ip);
    if (blocked.size >= MAX_BLOCKED) blocked.delete(blocked.keys().next().value!);
    blocked.set(ip, until);
  }

  /** Charges one failure; the ms until the window ends when the address is now over the limit. */
  async function charge(ip: string, now: number): Promise<number | undefined> {
    let result;
    try {
      result = await store.direct.limit([{ counter: counter(ip), limit: max, duration: windowMs, cost: 1 }], now);
    } catch {
      return undefined; // A store that cannot count blocks nothing; the failure is answered as it is.
    }
    const state = result.states[0]!;
    if (result.passed && state.remaining > 0) return undefined;
    block(ip, state.reset);
    // The max-th failure is answered as it is; those past it, 429.
    return result.passed ? undefined : state.reset - now;
  }

  return {
    async guard(ip, now, authenticate) {
      const until = blocked.get(ip);
      if (until !== undefined) {
        if (until > now) throw tooMany(until - now);
        blocked.delete(ip);
      }
      try {
        return await authenticate();
      } catch (err) {
        if (!(err instanceof ServiceError) || !COUNTED.has(err.kind)) throw err;
        const over = await charge(ip, now);
        throw over === undefined ? err : tooMany(over);
      }
    },
  };
}
