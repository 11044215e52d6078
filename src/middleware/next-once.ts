// Hands control to Connect/Express `next` exactly once, from sync or async code. An error thrown
// by the handlers after ours (out of next() itself) is never passed back into next().

import type { NextFunction } from "./options";

/** A `next` that ignores every call after the first, and says whether it was called. */
export interface OnceNext extends NextFunction {
  readonly called: boolean;
}

export function once(next: NextFunction): OnceNext {
  const wrapped = ((err?: unknown): void => {
    if (wrapped.called) return;
    wrapped.called = true;
    next(err);
  }) as NextFunction & { called: boolean };
  wrapped.called = false;
  return wrapped;
}

/**
 * For an error caught in async code: passes it to `next(err)` when `next` was not called yet;
 * otherwise (it came from the handlers after ours, or from a hook that already called next)
 * hands it to `report`. Never throws.
 */
export function failOnce(next: OnceNext, err: unknown, report: (err: unknown) => void): void {
  if (next.called) {
    report(err);
    return;
  }
  try {
    next(err);
  } catch (e) {
    report(e);
  }
}

export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}
