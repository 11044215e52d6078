// Sorts a failed verification call into "the service is unavailable" (503, retry later) and "this
// server is misconfigured" (500, an operator must act). Client errors are told apart by `code`.

import type { LogFields } from "../logger";

/** `Retry-After` (seconds) of a 503 when the service did not send one. */
export const DEFAULT_RETRY_AFTER_SECONDS = 5;

interface FailureBase {
  /** `meta.requestId` of the service's answer, when there was one. */
  readonly requestId?: string;
  /** Safe fields for the log: codes, statuses, request ids; never a key. */
  readonly log: LogFields;
  /** What the call threw. */
  readonly cause: unknown;
}

export type ServiceFailure =
  | (FailureBase & {
      readonly kind: "unavailable";
      readonly retryAfter: number;
      /**
       * Whether `onServiceError: "open"` may let the request through. False for the service's 429
       * (workspace rate limit): callers sending random keys could cause it, so it must not open the gate.
       */
      readonly mayFailOpen: boolean;
    })
  | (FailureBase & { readonly kind: "misconfigured"; readonly reason: string });

interface ClientErrorShape {
  code?: unknown;
  status?: unknown;
  kind?: unknown;
  detail?: unknown;
  message?: unknown;
  requestId?: unknown;
  attempts?: unknown;
  retryAfter?: unknown;
  scope?: unknown;
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

function fieldsOf(e: ClientErrorShape): LogFields {
  const fields: LogFields = { code: str(e.code) };
  for (const name of ["status", "kind", "requestId", "attempts", "scope", "detail"] as const) {
    if (e[name] !== undefined) fields[name] = e[name];
  }
  return fields;
}

function misconfigured(reason: string, e: ClientErrorShape): ServiceFailure {
  const requestId = str(e.requestId);
  return { kind: "misconfigured", reason, log: fieldsOf(e), cause: e, ...(requestId === undefined ? {} : { requestId }) };
}

function unavailable(e: ClientErrorShape, mayFailOpen = true): ServiceFailure {
  const ms = num(e.retryAfter);
  const retryAfter = ms === undefined ? DEFAULT_RETRY_AFTER_SECONDS : Math.max(1, Math.ceil(ms / 1000));
  const requestId = str(e.requestId);
  return { kind: "unavailable", retryAfter, mayFailOpen, log: fieldsOf(e), cause: e, ...(requestId === undefined ? {} : { requestId }) };
}

function fromHttpStatus(status: number, e: ClientErrorShape): ServiceFailure {
  if (status === 429) return unavailable(e, false);
  if (status >= 500) return unavailable(e);
  if (status === 401 || status === 403) {
    return misconfigured("the key service rejected the root key (check UNKEY_ROOT_KEY and its verify_key permission)", e);
  }
  if (status === 400) return misconfigured("the key service rejected the verification request (check the permissions, cost, ratelimits and tags options)", e);
  if (status === 412) return misconfigured("the key service does not know a rate limit named in the ratelimits option", e);
  if (status === 404) return misconfigured("the key service answered 404 (check baseUrl)", e);
  return misconfigured(`the key service answered ${status}`, e);
}

/** Classifies whatever a verification call threw. Unknown errors count as misconfiguration. */
export function classifyServiceFailure(err: unknown): ServiceFailure {
  const e: ClientErrorShape = typeof err === "object" && err !== null ? (err as ClientErrorShape) : {};
  switch (e.code) {
    case "KEY_SERVICE_NETWORK_ERROR":
    case "KEY_SERVICE_TIMEOUT":
    case "KEY_SERVICE_INVALID_RESPONSE":
      return unavailable(e);
    case "KEY_SERVICE_HTTP_ERROR":
      return fromHttpStatus(num(e.status) ?? 500, e);
    default: {
      const name = err instanceof Error ? err.name : typeof err;
      return {
        kind: "misconfigured",
        reason: "the verification call failed unexpectedly",
        log: { error: name, code: str(e.code) },
        cause: err,
      };
    }
  }
}
