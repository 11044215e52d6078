// The errors the middleware and its guards produce. Each carries the HTTP `status`, the response
// `headers`, a stable string `code` and whether its message may be shown to the caller (`expose`).

import { CONFIG_ERROR_CODE } from "../config-error";
import type { VerifyKeyResult } from "../protocol/types";

const BRAND = Symbol.for("keyguard.error");

/** Codes of the middleware's own outcomes; a rejected key uses the service's code (`EXPIRED`, …). */
export const ERROR_CODES = Object.freeze({
  missingKey: "MISSING_KEY",
  invalidRequest: "INVALID_REQUEST",
  /** A key of the checksummed format whose checksum fails, refused without a call (`rejectBadChecksums`). */
  invalidChecksum: "INVALID_CHECKSUM",
  insufficientScope: "INSUFFICIENT_SCOPE",
  serviceUnavailable: "SERVICE_UNAVAILABLE",
  /** The client address sent too many unknown or malformed keys (`unknownKeyLimit`): 429 without a call. */
  tooManyUnknownKeys: "TOO_MANY_UNKNOWN_KEYS",
  verificationFailed: "VERIFICATION_FAILED",
  config: CONFIG_ERROR_CODE,
} as const);

interface KeyguardErrorInit {
  status: number;
  code: string;
  title: string;
  /** Shown to the caller when `expose` is true. Never holds a key. */
  detail: string;
  headers?: Record<string, string>;
  expose: boolean;
  /** `meta.requestId` of the key service's answer, when there was one. */
  requestId?: string;
  cause?: unknown;
}

/** Base class of every denial: what to answer, as data. */
export class KeyguardError extends Error {
  override readonly name: string = "KeyguardError";
  readonly status: number;
  readonly code: string;
  readonly title: string;
  readonly detail: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Whether `detail` may be sent to the caller (false for server-side failures). */
  readonly expose: boolean;
  readonly requestId?: string;

  constructor(init: KeyguardErrorInit) {
    super(init.detail, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.title = init.title;
    this.detail = init.detail;
    this.headers = Object.freeze({ ...init.headers });
    this.expose = init.expose;
    if (init.requestId !== undefined) this.requestId = init.requestId;
    Object.defineProperty(this, BRAND, { value: true });
  }
}

/** No key was presented (401 with a bare `WWW-Authenticate: Bearer realm="…"` by default). */
export class MissingKeyError extends KeyguardError {
  override readonly name: string = "MissingKeyError";
}

/** The credentials were malformed: bad Bearer syntax, a repeated header, two different keys (400). */
export class InvalidRequestError extends KeyguardError {
  override readonly name: string = "InvalidRequestError";
}

/** The key service rejected the key; `code` is the verification code (`NOT_FOUND`, `EXPIRED`, …). */
export class KeyRejectedError extends KeyguardError {
  override readonly name: string = "KeyRejectedError";
  /** The verification result (never holds the key itself). */
  readonly result: Readonly<VerifyKeyResult>;
  constructor(init: KeyguardErrorInit & { result: Readonly<VerifyKeyResult> }) {
    super(init);
    this.result = init.result;
  }
}

/** A guard found the verified key lacking (403 `insufficient_scope`). */
export class InsufficientScopeError extends KeyguardError {
  override readonly name: string = "InsufficientScopeError";
  /** The permission query the route requires, when the guard is about permissions. */
  readonly scope?: string;
  constructor(init: KeyguardErrorInit & { scope?: string }) {
    super(init);
    if (init.scope !== undefined) this.scope = init.scope;
  }
}

/** The key service could not be reached, timed out or failed (503 with `Retry-After`). */
export class ServiceUnavailableError extends KeyguardError {
  override readonly name: string = "ServiceUnavailableError";
  /** Seconds sent in `Retry-After`. */
  readonly retryAfter: number;
  constructor(init: KeyguardErrorInit & { retryAfter: number }) {
    super(init);
    this.retryAfter = init.retryAfter;
  }
}

/**
 * The request's client address sent too many unknown or malformed keys within the window of
 * `unknownKeyLimit` (429 with `Retry-After`); its key was not sent to the key service.
 */
export class UnknownKeyLimitError extends KeyguardError {
  override readonly name: string = "UnknownKeyLimitError";
  /** Seconds sent in `Retry-After`: until the window ends. */
  readonly retryAfter: number;
  constructor(init: KeyguardErrorInit & { retryAfter: number }) {
    super(init);
    this.retryAfter = init.retryAfter;
  }
}

/** Verification failed because of this server's configuration (root key, query, rate-limit names): 500. */
export class VerificationFailedError extends KeyguardError {
  override readonly name: string = "VerificationFailedError";
}

/** Misconfiguration found when `apiKeyAuth()`, a guard, `createClient()` or the local service is created. */
export { ConfigError } from "../config-error";

/** True for any denial made by keyguard, from any loaded copy of it. */
export function isKeyguardError(e: unknown): e is KeyguardError {
  return typeof e === "object" && e !== null && (e as Record<symbol, unknown>)[BRAND] === true;
}
