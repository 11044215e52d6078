// Abort-signal helpers for the request chokepoint: combining the caller's signal with the attempt's
// timer (AbortSignal.any only exists from Node 20.3), and racing a promise that may ignore its signal.

/** A signal that aborts when any of its sources does; `dispose()` detaches it from them. */
export interface CombinedSignal {
  readonly signal: AbortSignal;
  dispose(): void;
}

const noop = () => undefined;

/**
 * Combines `signals`: the result aborts with the reason of the first one to abort. Uses
 * `AbortSignal.any` when the runtime has it, else an AbortController fed by listeners that
 * `dispose()` removes (call it once the combined signal is no longer needed).
 */
export function anySignal(signals: readonly AbortSignal[]): CombinedSignal {
  const any = (AbortSignal as { any?: (signals: AbortSignal[]) => AbortSignal }).any;
  if (typeof any === "function") return { signal: any.call(AbortSignal, [...signals]), dispose: noop };

  const controller = new AbortController();
  const first = signals.find((s) => s.aborted);
  if (first) {
    controller.abort(first.reason);
    return { signal: controller.signal, dispose: noop };
  }
  const dispose = () => {
    for (const s of signals) s.removeEventListener("abort", onAbort);
  };
  const onAbort = (event: Event) => {
    dispose();
    controller.abort((event.target as AbortSignal).reason);
  };
  for (const s of signals) s.addEventListener("abort", onAbort, { once: true });
  return { signal: controller.signal, dispose };
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
