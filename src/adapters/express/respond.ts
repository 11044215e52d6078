// How control leaves the Express middleware: `next` exactly once, from sync or async code (an error
// thrown by later handlers out of next() is never passed back into next()); and how a denial
// reaches the caller: the app's `onDenied` (sync or async), `next(err)` with `passErrors`, or the
// core's problem+json answer. Guards reuse the responder of the `apiKeyAuth()` that ran on the request.

import type { IncomingMessage, ServerResponse } from "node:http";
import { createLogThrottle, defaultLogger, type Logger } from "../../logger";
import {
  DEFAULT_DENIAL,
  isThenable,
  problemAnswer,
  type DeniedHandler,
  type DenialContext,
  type KeyguardError,
  type NextFunction,
} from "../../middleware";

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

/** Writes the denial: status, the error's headers, `Content-Type`, `Cache-Control: no-store` and the problem body. */
function sendProblem(res: ServerResponse, err: KeyguardError): void {
  const answer = problemAnswer(err);
  res.statusCode = answer.status;
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
  res.setHeader("Content-Length", Buffer.byteLength(answer.body));
  res.end(answer.body);
}

interface Responder {
  /** Policy, realm and key hint of the `apiKeyAuth()` this responder belongs to. */
  readonly denial: DenialContext;
  deny(err: KeyguardError, req: IncomingMessage, res: ServerResponse, next: NextFunction): void;
  /**
   * Logs (throttled) an error that cannot go to `next(err)` because `next` was already called: a
   * later handler threw out of next(), or an `onDenied` failed after calling next. Never the error's
   * message (it is the app's), only its name and code.
   */
  reportLateError(err: unknown): void;
}

/**
 * Which responder answers a request's denials, for the guards after `apiKeyAuth()`: a
 * non-enumerable property under `Symbol.for("keyguard.responder")` on the verified key
 * (`req.apiKey`, a per-middleware object, so the hot path adds nothing per request), or, for a
 * request let through without a key or denied, on the request itself. `Symbol.for` is shared by
 * every loaded copy of keyguard, so a guard from one copy finds the responder of another; no
 * global registry is kept.
 */
const RESPONDER = Symbol.for("keyguard.responder");

function lateErrorReporter(logger: Logger): (err: unknown) => void {
  const throttle = createLogThrottle();
  return (err) => {
    const decision = throttle("late-error");
    if (!decision.log) return;
    const code = (err as { code?: unknown } | null)?.code;
    logger.error(
      {
        error: err instanceof Error ? err.name : typeof err,
        ...(typeof code === "string" ? { code } : {}),
        suppressedSinceLastLog: decision.suppressed,
      },
      "apiKeyAuth: an error was thrown after next() had been called (by a later handler, or by onDenied); it is not passed to next() a second time",
    );
  };
}

export function createResponder(settings: {
  denial: DenialContext;
  onDenied: DeniedHandler<never, never> | undefined;
  passErrors: boolean;
  logger: Logger;
}): Responder {
  const { onDenied, passErrors, denial } = settings;
  const reportLateError = lateErrorReporter(settings.logger);
  return Object.freeze({
    denial,
    reportLateError,
    deny(err: KeyguardError, req: IncomingMessage, res: ServerResponse, next: NextFunction) {
      if (onDenied !== undefined) {
        const n = once(next);
        let returned: unknown;
        try {
          returned = (onDenied as DeniedHandler)(err, req, res, n);
        } catch (e) {
          if (n.called) throw e; // like any middleware that throws after calling next
          n(e);
          return;
        }
        if (isThenable(returned)) {
          Promise.resolve(returned).then(undefined, (e: unknown) => failOnce(n, e, reportLateError));
        }
      } else if (passErrors || res.headersSent) {
        next(err);
      } else {
        sendProblem(res, err);
      }
    },
  });
}

/** The responder used when no `apiKeyAuth()` ran before a guard: problem+json, realm "api". */
const DEFAULT_RESPONDER: Responder = createResponder({
  denial: DEFAULT_DENIAL,
  onDenied: undefined,
  passErrors: false,
  logger: defaultLogger,
});

/** Remembers which responder answers denials for a request (one without a verified key). */
export function attachResponder(req: object, responder: Responder): void {
  if ((req as { [RESPONDER]?: unknown })[RESPONDER] !== responder) {
    Object.defineProperty(req, RESPONDER, { value: responder, enumerable: false, configurable: true, writable: true });
  }
}

/** The key as this middleware hands it to the app: the result, carrying its responder. Frozen. */
export function withResponder<T extends object>(result: T, responder: Responder): T {
  // Every own property, the non-enumerable `requestId` included.
  const copy = Object.defineProperties({}, Object.getOwnPropertyDescriptors(result)) as T;
  Object.defineProperty(copy, RESPONDER, { value: responder, enumerable: false });
  return Object.freeze(copy);
}

export function responderOf(req: object): Responder {
  const verified = (req as { apiKey?: unknown }).apiKey;
  const r =
    (typeof verified === "object" && verified !== null ? (verified as { [RESPONDER]?: unknown })[RESPONDER] : undefined) ??
    (req as { [RESPONDER]?: unknown })[RESPONDER];
  const ok =
    typeof r === "object" &&
    r !== null &&
    typeof (r as Responder).deny === "function" &&
    typeof (r as Responder).reportLateError === "function";
  return ok ? (r as Responder) : DEFAULT_RESPONDER;
}
