// Response envelopes of the local service: success `{meta, data, pagination?}`, failure
// `{meta, error}` from the error catalog, and the content negotiation of error bodies.
import { ERROR_CATALOG, errorTypeUrl } from "../../protocol/errors";
import type { ErrorEnvelope, Pagination } from "../../protocol/types";
import type { ServiceError } from "../errors";

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
