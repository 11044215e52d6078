// How a denial reaches the caller: the app's `onDenied` (sync or async), `next(err)` with
// `passErrors`, or a problem+json response. Guards reuse the responder of the `apiKeyAuth()` that
// ran on the request.

import type { IncomingMessage, ServerResponse } from "node:http";
import { defaultLogger, type Logger } from "../logger";
import type { DenialContext } from "./denials";
import type { KeyguardError } from "./errors";
import { createLogThrottle } from "./log-throttle";
import { failOnce, isThenable, once } from "./next-once";
import type { DeniedHandler, NextFunction } from "./options";
import { DEFAULT_STATUS_POLICY } from "./policy";
import { sendProblem } from "./problem";

export interface Responder {
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

// Which responder answers a request's denials, for the guards after `apiKeyAuth()`. Kept in a
// WeakMap, not as a property of `req`: adding a property changes the request object's shape, which
// measurably slows every later handler. A verified request is registered through its result (for
// a cached key, one long-lived object, so the hot path adds no entry per request); a request let
// through without a key, or denied, is registered itself. Registered globally so that two loaded
// copies of the package share it.
const REGISTRY = Symbol.for("keyguard.responders");
const responders = ((globalThis as Record<symbol, unknown>)[REGISTRY] ??= new WeakMap()) as WeakMap<object, Partial<Responder>>;

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
export const DEFAULT_RESPONDER: Responder = createResponder({
  denial: Object.freeze({ policy: DEFAULT_STATUS_POLICY, realm: "api", keyHint: "send your API key", rateLimitHeaders: false }),
  onDenied: undefined,
  passErrors: false,
  logger: defaultLogger,
});

/** Remembers which responder answers denials for a request, or for requests verified with a result. */
export function attachResponder(target: object, responder: Responder): void {
  if (responders.get(target) !== responder) responders.set(target, responder);
}

export function responderOf(req: object): Responder {
  const verified = (req as { apiKey?: unknown }).apiKey;
  const r = (typeof verified === "object" && verified !== null ? responders.get(verified) : undefined) ?? responders.get(req);
  if (typeof r !== "object" || r === null || typeof r.deny !== "function") return DEFAULT_RESPONDER;
  // A responder attached by another (older) loaded copy of keyguard may lack reportLateError.
  return typeof r.reportLateError === "function" ? (r as Responder) : { ...(r as Responder), reportLateError: DEFAULT_RESPONDER.reportLateError };
}
