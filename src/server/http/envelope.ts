// Response envelopes of the local service: success `{meta, data, pagination?}`, failure
// `{meta, error}` from the error catalog, and the content negotiation of error bodies.
import { ERROR_CATALOG, errorTypeUrl, type ErrorKind } from "../../protocol/errors";
import type { ErrorEnvelope, Pagination, ValidationErrorDetail } from "../../protocol/types";

/** A failure to answer with an error envelope. Thrown by handlers, turned into a response by the app. */
export class ServiceError extends Error {
  readonly code = "LOCAL_SERVICE_ERROR";
  readonly kind: ErrorKind;
  readonly status: number;
  readonly detail: string;
  readonly errors?: ValidationErrorDetail[];
  readonly headers: Readonly<Record<string, string>>;

  constructor(kind: ErrorKind, detail: string, extra: { errors?: ValidationErrorDetail[]; headers?: Record<string, string> } = {}) {
    super(detail);
    this.name = "ServiceError";
    this.kind = kind;
    this.status = ERROR_CATALOG[kind].status;
    this.detail = detail;
    if (extra.errors) this.errors = extra.errors;
    this.headers = Object.freeze({ ...extra.headers });
  }
}

/** The failure envelope for an error; every 400 carries `errors` (at least `[]`). */
export function errorEnvelope(err: ServiceError, requestId: string): ErrorEnvelope {
  const entry = ERROR_CATALOG[err.kind];
  const error: ErrorEnvelope["error"] = {
    title: entry.title,
    detail: err.detail,
    status: entry.status,
    type: errorTypeUrl(err.kind),
  };
  if (entry.status === 400 || err.errors) error.errors = err.errors ?? [];
  return { meta: { requestId }, error };
}

export function successEnvelope(data: unknown, requestId: string, pagination?: Pagination): Record<string, unknown> {
  const body: Record<string, unknown> = { meta: { requestId }, data };
  if (pagination) body.pagination = pagination;
  return body;
}

/**
 * Content type of an error body: `application/problem+json` when `Accept` includes it,
 * `application/*` or `*\/*`; otherwise `application/json`.
 */
export function errorContentType(accept: string | undefined): string {
  if (!accept) return "application/json";
  const types = accept.split(",").map((part) => part.split(";", 1)[0]!.trim().toLowerCase());
  const problem = types.some((t) => t === "application/problem+json" || t === "application/*" || t === "*/*");
  return problem ? "application/problem+json" : "application/json";
}
