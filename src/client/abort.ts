// Abort-signal helpers for the request chokepoint: one attempt's signal (the caller's signal and the
// attempt's timer in one), and racing a promise that may ignore its signal.

/** A signal for one attempt; `dispose()` stops its timer and detaches it from the caller's signal. */
interface AttemptSignal {
  readonly signal: AbortSignal;
  dispose(): void;
}

const noop = () => undefined;

/**
 * A signal that aborts when `caller` does (with its reason) or after `ms` (with a `TimeoutError`
 * DOMException, as `AbortSignal.timeout` gives). Call `dispose()` when the attempt is over: the
 * timer is cleared at once, so no timer or listener outlives the attempt.
 */
export function attemptSignal(caller: AbortSignal | undefined, ms: number): AttemptSignal {
  const controller = new AbortController();
  if (caller?.aborted) {
    controller.abort(caller.reason);
    return { signal: controller.signal, dispose: noop };
  }
  const onCallerAbort = () => controller.abort(caller?.reason);
  const timer = setTimeout(() => controller.abort(new DOMException("The operation was aborted due to timeout", "TimeoutError")), ms);
  caller?.addEventListener("abort", onCallerAbort, { once: true });
  return {
    signal: controller.signal,
    dispose: () => {
      clearTimeout(timer);
      caller?.removeEventListener("abort", onCallerAbort);
    },
  };
}

/**
 * Settles like `promise`, but rejects with `signal.reason` as soon as `signal` aborts, even if
 * `promise` ignores the signal. A value `promise` still delivers after that goes to `onLate`
 * (e.g. to cancel a response body nobody will read).
 */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal, onLate: (value: T) => void = noop): Promise<T> {
  if (signal.aborted) {
    promise.then(onLate, noop);
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    let abandoned = false;
    const onAbort = () => {
      abandoned = true;
      reject(signal.reason as Error);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        if (abandoned) onLate(value);
        else resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error as Error);
      },
    );
  });
}
