// Turns each outcome (no key, malformed credentials, a rejected key, a failed guard, a service
// failure) into the error that describes the answer: status from the policy, the
// `WWW-Authenticate: Bearer …` challenge (RFC 6750 §3) with its `scope`, headers. Pure.

import { STATUS_TITLES } from "../protocol/status-titles";
import type { PermissionQuery } from "../protocol/permission-query";
import type { VerifyKeyResult } from "../protocol/types";
import {
  ERROR_CODES,
  InsufficientScopeError,
  InvalidRequestError,
  KeyRejectedError,
  MissingKeyError,
  ServiceUnavailableError,
  UnknownKeyLimitError,
  VerificationFailedError,
} from "./errors";
import { DEFAULT_STATUS_POLICY, ruleFor, type BearerError, type StatusPolicy } from "./policy";
import { rateLimitHeaders, retryAfterFromRatelimits } from "./ratelimit-headers";

interface ChallengeParams {
  realm: string;
  error?: BearerError;
  /** RFC 6750 scope: space-separated scope tokens; sent with `insufficient_scope` only. */
  scope?: string;
}

// quoted-string content: printable ASCII; `"` and `\` are escaped.
function quote(value: string): string {
  return `"${value.replace(/[^\x20-\x7e]/g, "?").replace(/(["\\])/g, "\\$1")}"`;
}

/** `Bearer realm="api"`, plus `error="…"` and, for `insufficient_scope`, `scope="…"`. */
export function bearerChallenge(params: ChallengeParams): string {
  let out = `Bearer realm=${quote(params.realm)}`;
  if (params.error !== undefined) out += `, error=${quote(params.error)}`;
  if (params.error === "insufficient_scope" && params.scope !== undefined && params.scope !== "") {
    out += `, scope=${quote(params.scope)}`;
  }
  return out;
}

/** Whether a denial with this status and error carries a challenge: every 401, and any Bearer error. */
function needsChallenge(status: number, error: BearerError | undefined): boolean {
  return status === 401 || error !== undefined;
}

/** RFC 6750 scope-token: `1*( %x21 / %x23-5B / %x5D-7E )`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

function andedPermissions(node: PermissionQuery, into: string[]): boolean {
  if (node.type === "permission") {
    if (!SCOPE_TOKEN.test(node.value)) return false;
    if (!into.includes(node.value)) into.push(node.value);
    return true;
  }
  return node.type === "and" && node.operands.every((operand) => andedPermissions(operand, into));
}

/**
 * The `scope` for a parsed permission query: its permissions joined by spaces when the query only
 * ANDs permissions (`a AND (b AND c)` → `a b c`); undefined when it uses OR, since a list of scope
 * tokens cannot say "one of".
 */
export function scopeOf(query: PermissionQuery): string | undefined {
  const tokens: string[] = [];
  return andedPermissions(query, tokens) && tokens.length > 0 ? tokens.join(" ") : undefined;
}

export interface DenialContext {
  readonly policy: StatusPolicy;
  readonly realm: string;
  /** How a caller sends a key, for the detail of a 401 without one. */
  readonly keyHint: string;
  /** Whether to add RateLimit / RateLimit-Policy headers. */
  readonly rateLimitHeaders: boolean;
}

/** The conventions of a guard that runs with no auth before it: the default policy, realm "api". */
export const DEFAULT_DENIAL: DenialContext = Object.freeze({
  policy: DEFAULT_STATUS_POLICY,
  realm: "api",
  keyHint: "send your API key",
  rateLimitHeaders: false,
});

const REJECTION_DETAILS: Readonly<Record<string, string>> = Object.freeze({
  NOT_FOUND: "The API key is not valid.",
  INVALID_CHECKSUM: "The API key is not valid: its checksum does not match (a mistyped or truncated key?).",
  EXPIRED: "The API key has expired.",
  DISABLED: "The API key is disabled.",
  FORBIDDEN: "The API key may not be used for this API.",
  INSUFFICIENT_PERMISSIONS: "The API key lacks the permissions this request requires.",
  RATE_LIMITED: "The API key's rate limit was exceeded.",
  USAGE_EXCEEDED: "The API key has no remaining uses.",
});

const titleFor = (status: number): string => STATUS_TITLES[status] ?? "Error";

/** A code the service may name: echoed into the body and the `type` URN only when it looks like one. */
const SAFE_CODE = /^[A-Z][A-Z0-9_]{0,63}$/;

/** The outcome code of a rejected result: the service's code when safe to echo, else `UNKNOWN`. */
function rejectionCode(result: Readonly<VerifyKeyResult>): string {
  const code: unknown = result.code;
  return typeof code === "string" && code !== "VALID" && SAFE_CODE.test(code) ? code : "UNKNOWN";
}

function challenge(ctx: DenialContext, outcome: string, scope?: string) {
  const rule = ruleFor(ctx.policy, outcome);
  const headers: Record<string, string> = {};
  if (needsChallenge(rule.status, rule.error)) {
    headers["WWW-Authenticate"] = bearerChallenge({ realm: ctx.realm, error: rule.error, scope });
  }
  return { status: rule.status, headers };
}

export function missingKeyDenial(ctx: DenialContext): MissingKeyError {
  const { status, headers } = challenge(ctx, "MISSING_KEY");
  return new MissingKeyError({
    status,
    headers,
    code: ERROR_CODES.missingKey,
    title: titleFor(status),
    detail: `An API key is required: ${ctx.keyHint}.`,
    expose: true,
  });
}

/** `reason` is shown to the caller; it must never contain the key. */
export function invalidRequestDenial(ctx: DenialContext, reason: string): InvalidRequestError {
  const { status, headers } = challenge(ctx, "INVALID_REQUEST");
  return new InvalidRequestError({
    status,
    headers,
    code: ERROR_CODES.invalidRequest,
    title: titleFor(status),
    detail: reason,
    expose: true,
  });
}

interface RejectionExtras {
  /** The permission query the request sent: named in the detail of `INSUFFICIENT_PERMISSIONS`. */
  query?: string;
  /** The `scope` of an `insufficient_scope` challenge for that query (see {@link scopeOf}). */
  scope?: string;
  requestId?: string;
  now: number;
}

export function rejectedKeyDenial(ctx: DenialContext, result: Readonly<VerifyKeyResult>, extras: RejectionExtras): KeyRejectedError {
  const code = rejectionCode(result);
  const { status, headers } = challenge(ctx, code, extras.scope);
  if (ctx.rateLimitHeaders) Object.assign(headers, rateLimitHeaders(result.ratelimits, extras.now));
  if (code === "RATE_LIMITED") {
    const retryAfter = retryAfterFromRatelimits(result.ratelimits, extras.now);
    if (retryAfter !== undefined) headers["Retry-After"] = String(retryAfter);
  }
  return new KeyRejectedError({
    status,
    headers,
    code,
    title: titleFor(status),
    detail:
      code === "INSUFFICIENT_PERMISSIONS" && extras.query !== undefined
        ? `The API key lacks the permissions this request requires: ${extras.query}.`
        : (REJECTION_DETAILS[code] ?? "The API key was rejected."),
    expose: true,
    // The service's code only where it is safe to show; an unsafe one is replaced here too.
    result: code === result.code ? result : Object.freeze({ ...result, code }),
    ...(extras.requestId === undefined ? {} : { requestId: extras.requestId }),
  });
}

const INVALID_CHECKSUM: Readonly<VerifyKeyResult> = Object.freeze({ valid: false, code: ERROR_CODES.invalidChecksum });

/** A key of the checksummed format whose checksum fails, refused without asking the service (`INVALID_CHECKSUM`, 401 by default). */
export function invalidChecksumDenial(ctx: DenialContext): KeyRejectedError {
  return rejectedKeyDenial(ctx, INVALID_CHECKSUM, { now: 0 });
}

/**
 * A guard's refusal: always 403 `insufficient_scope`. For permission guards `query` is the
 * requirement (the error's `scope`) and `scope` its challenge scope, when it only ANDs.
 */
export function insufficientScopeDenial(realm: string, detail: string, query?: string, scope?: string): InsufficientScopeError {
  return new InsufficientScopeError({
    status: 403,
    headers: { "WWW-Authenticate": bearerChallenge({ realm, error: "insufficient_scope", scope }) },
    code: ERROR_CODES.insufficientScope,
    title: titleFor(403),
    detail,
    expose: true,
    ...(query === undefined ? {} : { scope: query }),
  });
}

export function serviceUnavailableDenial(retryAfter: number, cause: unknown, requestId?: string): ServiceUnavailableError {
  return new ServiceUnavailableError({
    status: 503,
    headers: { "Retry-After": String(retryAfter) },
    code: ERROR_CODES.serviceUnavailable,
    title: titleFor(503),
    detail: "The API key could not be verified right now. Try again later.",
    expose: true,
    retryAfter,
    cause,
    ...(requestId === undefined ? {} : { requestId }),
  });
}

/** Too many unknown or malformed keys from the request's address (`unknownKeyLimit`): 429 with `Retry-After`. */
export function unknownKeyLimitDenial(retryAfter: number): UnknownKeyLimitError {
  return new UnknownKeyLimitError({
    status: 429,
    headers: { "Retry-After": String(retryAfter) },
    code: ERROR_CODES.tooManyUnknownKeys,
    title: titleFor(429),
    detail: "Too many requests with unknown or malformed API keys came from your address. Try again later.",
    expose: true,
    retryAfter,
  });
}

export function verificationFailedDenial(reason: string, cause: unknown, requestId?: string): VerificationFailedError {
  return new VerificationFailedError({
    status: 500,
    code: ERROR_CODES.verificationFailed,
    title: titleFor(500),
    detail: reason,
    expose: false,
    cause,
    ...(requestId === undefined ? {} : { requestId }),
  });
}
