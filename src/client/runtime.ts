// The clock, randomness and sleep the request chokepoint uses, gathered in one object so the
// retry loop can be driven deterministically (tests pass their own; production uses these).

export interface Runtime {
  /** Monotonic milliseconds. */
  now(): number;
  /** A number in [0, 1). */
  random(): number;
  /** Resolves after `ms`; rejects with `signal.reason` if the signal aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Waits `ms` with `setTimeout`, abandoning the wait when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

export const defaultRuntime: Runtime = Object.freeze({
  now: () => performance.now(),
  random: () => Math.random(),
  sleep,
});
