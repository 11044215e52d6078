// How a denial reaches the caller: the app's `onDenied`, `next(err)` with `passErrors`, or a
// problem+json response. Guards reuse the responder of the `apiKeyAuth()` that ran on the request.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { DenialContext } from "./denials";
import type { KeyguardError } from "./errors";
import type { DeniedHandler, NextFunction } from "./options";
import { DEFAULT_STATUS_POLICY } from "./policy";
import { sendProblem } from "./problem";

export interface Responder {
  /** Policy, realm and key hint of the `apiKeyAuth()` this responder belongs to. */
  readonly denial: DenialContext;
  deny(err: KeyguardError, req: IncomingMessage, res: ServerResponse, next: NextFunction): void;
}

const RESPONDER = Symbol.for("keyguard.responder");

export function createResponder(settings: {
  denial: DenialContext;
  onDenied: DeniedHandler<never, never> | undefined;
  passErrors: boolean;
}): Responder {
  const { onDenied, passErrors, denial } = settings;
  return Object.freeze({
    denial,
    deny(err: KeyguardError, req: IncomingMessage, res: ServerResponse, next: NextFunction) {
      if (onDenied !== undefined) {
        try {
          (onDenied as DeniedHandler)(err, req, res, next);
        } catch (e) {
          next(e);
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
});

/** Remembers on the request which responder answers its denials (a hidden property). */
export function attachResponder(req: object, responder: Responder): void {
  Object.defineProperty(req, RESPONDER, { value: responder, configurable: true, enumerable: false, writable: true });
}

export function responderOf(req: object): Responder {
  const r = (req as Record<symbol, unknown>)[RESPONDER];
  return typeof r === "object" && r !== null && typeof (r as Responder).deny === "function" ? (r as Responder) : DEFAULT_RESPONDER;
}
