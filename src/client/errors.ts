// The errors the key-service client throws. Each has a stable string `code`; tell them apart with
// `code` (or `isKeyServiceError`), not only `instanceof`, since two copies of keyguard can be loaded.

import { ConfigError } from "../config-error";
import type { ValidationErrorDetail } from "../protocol/types";

/** Stable codes of the client's errors. */
export const KEY_SERVICE_ERROR_CODES = Object.freeze({
  http: "KEY_SERVICE_HTTP_ERROR",
  network: "KEY_SERVICE_NETWORK_ERROR",
  timeout: "KEY_SERVICE_TIMEOUT",
  response: "KEY_SERVICE_INVALID_RESPONSE",
  config: "KEY_SERVICE_CONFIG_ERROR",
} as const);

/** The `code` of an error a call to the key service can end with. */
export type KeyServiceErrorCode = AnyKeyServiceError["code"];

interface BaseInit {
  operation?: string;
  retryable: boolean;
  requestId?: string;
  attempts: number;
  cause?: unknown;
}

/** Base class of every failure of a call to the key service. */
export class KeyServiceError extends Error {
  override readonly name: string = "KeyServiceError";
  /** Stable machine-readable code, e.g. `"KEY_SERVICE_HTTP_ERROR"`. */
  readonly code: string;
  /** Whether this kind of failure is transient (the client retries it when retries are on). */
  readonly retryable: boolean;
  /** `meta.requestId` of the service's answer, when there was one. */
  declare readonly requestId?: string;
  /** How many attempts the call made before giving up. */
  readonly attempts: number;
  /** The operation, e.g. `"keys.verifyKey"`. */
  declare readonly operation?: string;

  constructor(code: string, message: string, init: BaseInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = code;
    this.retryable = init.retryable;
    this.attempts = init.attempts;
    if (init.requestId !== undefined) this.requestId = init.requestId;
    if (init.operation !== undefined) this.operation = init.operation;
  }
}

interface HttpErrorInit extends Omit<BaseInit, "retryable"> {
  status: number;
  title: string;
  detail: string;
  type: string;
  identifier?: string;
  kind?: string;
  retryAfter?: number;
  errors?: ValidationErrorDetail[];
}

/** Statuses the client retries: the gateway-ish ones that mean "not processed, try again". */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

/**
 * The service answered with a non-2xx status. With an error envelope, `title`, `detail`, `type`,
 * `identifier` and `kind` come from it; without one (an HTML page from a proxy, a truncated body),
 * `title` is the status's reason phrase, `type` is `"about:blank"` and `kind` is undefined.
 */
export class KeyServiceHttpError extends KeyServiceError {
  override readonly name: string = "KeyServiceHttpError";
  declare readonly code: typeof KEY_SERVICE_ERROR_CODES.http;
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly type: string;
  /** `err:<system>:<category>:<name>`, e.g. `"err:unkey:data:permission_not_found"`. */
  declare readonly identifier?: string;
  /** `<category>.<name>`, without the system, e.g. `"data.permission_not_found"`. */
  declare readonly kind?: string;
  /** Milliseconds from the `Retry-After` header (seconds or HTTP-date), when present. */
  declare readonly retryAfter?: number;
  /** Validation details of a 400. */
  declare readonly errors?: ValidationErrorDetail[];

  constructor(message: string, init: HttpErrorInit) {
    super(KEY_SERVICE_ERROR_CODES.http, message, { ...init, retryable: RETRYABLE_STATUSES.has(init.status) });
    this.status = init.status;
    this.title = init.title;
    this.detail = init.detail;
    this.type = init.type;
    if (init.identifier !== undefined) this.identifier = init.identifier;
    if (init.kind !== undefined) this.kind = init.kind;
    if (init.retryAfter !== undefined) this.retryAfter = init.retryAfter;
    if (init.errors !== undefined) this.errors = init.errors;
  }
}

/**
 * No usable answer arrived: connection refused or reset, DNS failure, socket closed. Retryable
 * when nothing was received; not retryable when the connection broke while reading the body of a
 * non-retryable status (the service may have acted on the request). The original error is `cause`.
 */
export class KeyServiceNetworkError extends KeyServiceError {
  override readonly name: string = "KeyServiceNetworkError";
  declare readonly code: typeof KEY_SERVICE_ERROR_CODES.network;
  /** The URL the request went to (`{baseUrl}/v2/{operation}`: never credentials, a query or a key). */
  declare readonly url?: string;
  /** What went wrong, short: the system error code when there is one (`ECONNREFUSED`, `ENOTFOUND`, a TLS code), else the cause's message. */
  declare readonly reason?: string;
  constructor(message: string, init: Omit<BaseInit, "retryable"> & { retryable?: boolean; url?: string; reason?: string }) {
    super(KEY_SERVICE_ERROR_CODES.network, message, { ...init, retryable: init.retryable ?? true });
    if (init.url !== undefined) this.url = init.url;
    if (init.reason !== undefined) this.reason = init.reason;
  }
}

export type TimeoutScope = "attempt" | "deadline";

/**
 * A time limit ran out. `scope` `"attempt"`: the per-attempt `timeout` (never retried: the service
 * may have processed the request); `"deadline"`: the call's overall `deadline`.
 */
export class KeyServiceTimeoutError extends KeyServiceError {
  override readonly name: string = "KeyServiceTimeoutError";
  declare readonly code: typeof KEY_SERVICE_ERROR_CODES.timeout;
  /** The limit that ran out, in ms. */
  readonly timeout: number;
  readonly scope: TimeoutScope;
  constructor(message: string, init: Omit<BaseInit, "retryable"> & { timeout: number; scope: TimeoutScope }) {
    super(KEY_SERVICE_ERROR_CODES.timeout, message, { ...init, retryable: false });
    this.timeout = init.timeout;
    this.scope = init.scope;
  }
}

/**
 * The service answered 2xx with something that is not a valid success envelope: not JSON, no
 * `meta.requestId`, no `data`, `data` of the wrong shape, a body over the size cap, or a list whose
 * paging does not end.
 */
export class KeyServiceResponseError extends KeyServiceError {
  override readonly name: string = "KeyServiceResponseError";
  declare readonly code: typeof KEY_SERVICE_ERROR_CODES.response;
  readonly status: number;
  constructor(message: string, init: Omit<BaseInit, "retryable"> & { status: number }) {
    super(KEY_SERVICE_ERROR_CODES.response, message, { ...init, retryable: false });
    this.status = init.status;
  }
}

/** Misconfiguration of the client, thrown at `createClient` (or for bad per-call options). */
export class KeyServiceConfigError extends ConfigError {
  override readonly name: string = "KeyServiceConfigError";
  override readonly code: string = KEY_SERVICE_ERROR_CODES.config;
}

/**
 * Any error a call to the key service ends with. Its `code` tells the kinds apart, so
 * `if (isKeyServiceError(e) && e.code === "KEY_SERVICE_HTTP_ERROR") e.status` type-checks.
 */
export type AnyKeyServiceError = KeyServiceHttpError | KeyServiceNetworkError | KeyServiceTimeoutError | KeyServiceResponseError;

const CALL_ERROR_CODES: ReadonlySet<string> = new Set([
  KEY_SERVICE_ERROR_CODES.http,
  KEY_SERVICE_ERROR_CODES.network,
  KEY_SERVICE_ERROR_CODES.timeout,
  KEY_SERVICE_ERROR_CODES.response,
]);

/**
 * True for any failure of a call to the key service, from any copy of keyguard (checks `code`, not
 * `instanceof`). Narrows to {@link AnyKeyServiceError}: compare `code` to reach a kind's fields.
 */
export function isKeyServiceError(e: unknown): e is AnyKeyServiceError {
  if (typeof e !== "object" || e === null) return false;
  const code = (e as { code?: unknown }).code;
  return typeof code === "string" && CALL_ERROR_CODES.has(code);
}
