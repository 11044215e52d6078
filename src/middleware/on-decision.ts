// The `onDecision` hook of apiKeyAuth(): one call per request that reached a decision (admitted or
// denied), with the code, the keyId, where the answer came from and how long the key service took.
// Called synchronously; a hook that throws (or returns a promise that rejects) is logged, throttled,
// and never changes what happens to the request. Off (no hook), nothing here runs.

import { createLogThrottle, type Logger } from "../logger";
import type { VerifyKeyResult } from "../protocol/types";
import type { KeyguardError } from "./errors";

/** Where the answer that decided came from. */
export type DecisionSource =
  /** A kept answer (the verification cache or the store), without calling the service. */
  | "cache"
  /** The service's answer to a call made for this request (or one it joined). */
  | "service"
  /** A kept VALID answer served while the service was unavailable (`staleIfError`). */
  | "stale"
  /**
   * No answer was needed: no key, malformed credentials, an over-long key, a key whose checksum
   * fails (code `INVALID_CHECKSUM`), a bad value from an option function, an address over
   * `unknownKeyLimit` (code `TOO_MANY_UNKNOWN_KEYS`).
   */
  | "none";

/**
 * With `migrateFrom`, what became of a key the key service did not know: `"imported"` (imported
 * now, then verified here) or `"held"` (another instance had imported it); `"refused"` (the old
 * service refused it, with the decision's code); `"unreachable"` (the old service could not be
 * asked); `"import-failed"` (verified at the old service, the import having failed).
 */
export type MigrationStep = "imported" | "held" | "refused" | "unreachable" | "import-failed";

/** What `onDecision` receives. Never the key. */
export interface AuthDecision {
  /**
   * `"admitted"`: the request goes on (`next()`): with a verified key (code `VALID`), or without
   * one, by `optional` (code `MISSING_KEY`) or `onServiceError: "open"` (code `SERVICE_UNAVAILABLE`).
   * `"denied"`: answered with `status` (or handed to `onDenied` / `next(err)`).
   */
  readonly outcome: "admitted" | "denied";
  /** The status of a denial (the status policy's); undefined when admitted. */
  readonly status: number | undefined;
  /**
   * `VALID`; the service's code of a rejected key (`NOT_FOUND`, `DISABLED`, `EXPIRED`,
   * `INSUFFICIENT_PERMISSIONS`, `RATE_LIMITED`, …); or the middleware's: `MISSING_KEY`,
   * `INVALID_REQUEST`, `INVALID_CHECKSUM` (refused offline), `TOO_MANY_UNKNOWN_KEYS` (`unknownKeyLimit`),
   * `SERVICE_UNAVAILABLE`, `VERIFICATION_FAILED`.
   */
  readonly code: string;
  /** The key's id when the answer named one (not for unknown keys). */
  readonly keyId: string | undefined;
  readonly source: DecisionSource;
  /**
   * When the service was called (`source` `"service"` or `"stale"`, and service failures): how long
   * this request waited for it, ms: retries included, and the wait for a call it joined.
   */
  readonly serviceMs: number | undefined;
  /**
   * With `migrateFrom`, for a key the key service did not know (the old service was asked about it):
   * what became of it (see {@link MigrationStep}); absent otherwise. Count these to see the calls to
   * the old service fall to zero before switching it off.
   */
  readonly migration?: MigrationStep;
}

/** `onDecision(decision, req)`: called synchronously; its return value is ignored. */
export type DecisionHandler<Req> = (decision: AuthDecision, req: Req) => void;

interface DecisionReporter<Req> {
  /** The hot path: a kept VALID answer; one frozen decision per answer, no allocation per request. */
  cached(result: Readonly<VerifyKeyResult>, req: Req): void;
  /** A denial. */
  denied(err: KeyguardError, req: Req, source: DecisionSource, serviceMs?: number, migration?: MigrationStep): void;
  /** Admitted with a verified key that was not a synchronous cache hit. */
  admitted(result: Readonly<VerifyKeyResult>, req: Req, source: DecisionSource, serviceMs?: number, migration?: MigrationStep): void;
  /** Let through without a key: `MISSING_KEY` (optional) or `SERVICE_UNAVAILABLE` (failing open). */
  passed(code: string, req: Req, source: DecisionSource, serviceMs?: number, migration?: MigrationStep): void;
}

const keyIdOf = (result: Readonly<VerifyKeyResult> | undefined): string | undefined =>
  typeof result?.keyId === "string" ? result.keyId : undefined;

export function createDecisionReporter<Req>(hook: DecisionHandler<Req>, logger: Logger): DecisionReporter<Req> {
  const throttle = createLogThrottle();
  const cachedDecisions = new WeakMap<object, AuthDecision>();

  function failed(err: unknown): void {
    const decision = throttle("onDecision");
    if (!decision.log) return;
    // Only the name: the message is the app's.
    logger.error(
      { error: err instanceof Error ? err.name : typeof err, suppressedSinceLastLog: decision.suppressed },
      "apiKeyAuth: onDecision threw; the request goes on as decided",
    );
  }

  function call(decision: AuthDecision, req: Req): void {
    let returned: unknown;
    try {
      returned = hook(decision, req);
    } catch (err) {
      failed(err);
      return;
    }
    if (returned !== undefined && typeof (returned as { then?: unknown }).then === "function") {
      Promise.resolve(returned).then(undefined, failed);
    }
  }

  const make = (
    outcome: AuthDecision["outcome"],
    status: number | undefined,
    code: string,
    keyId: string | undefined,
    source: DecisionSource,
    serviceMs: number | undefined,
    migration?: MigrationStep,
  ): AuthDecision =>
    Object.freeze(
      migration === undefined
        ? { outcome, status, code, keyId, source, serviceMs }
        : { outcome, status, code, keyId, source, serviceMs, migration },
    );

  return {
    cached(result, req) {
      let decision = cachedDecisions.get(result);
      if (decision === undefined)
        cachedDecisions.set(result, (decision = make("admitted", undefined, "VALID", keyIdOf(result), "cache", undefined)));
      call(decision, req);
    },
    denied(err, req, source, serviceMs, migration) {
      const result = (err as { result?: Readonly<VerifyKeyResult> }).result;
      call(make("denied", err.status, err.code, keyIdOf(result), source, serviceMs, migration), req);
    },
    admitted(result, req, source, serviceMs, migration) {
      call(make("admitted", undefined, "VALID", keyIdOf(result), source, serviceMs, migration), req);
    },
    passed(code, req, source, serviceMs, migration) {
      call(make("admitted", undefined, code, undefined, source, serviceMs, migration), req);
    },
  };
}
