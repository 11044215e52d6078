// The service's error catalog: identifiers, HTTP statuses and titles, and the helpers that
// turn an identifier into the `type` URL and back. Used by the local service (to answer)
// and by the client (to classify).

/** `<category>.<name>`: the vendor-free kind of an error, e.g. `data.permission_not_found`. */
export type ErrorKind =
  | "application.invalid_input"
  | "bad_request.permissions_query_syntax_error"
  | "bad_request.request_body_too_large"
  | "bad_request.invalid_analytics_query"
  | "bad_request.invalid_analytics_table"
  | "bad_request.invalid_analytics_function"
  | "bad_request.invalid_analytics_query_type"
  | "bad_request.query_range_exceeds_retention"
  | "unprocessable_entity.query_rows_limit_exceeded"
  | "unprocessable_entity.query_execution_timeout"
  | "data.analytics_not_configured"
  | "authentication.missing"
  | "authentication.malformed"
  | "authentication.key_not_found"
  | "authentication.portal_token_missing"
  | "authentication.portal_session_not_found"
  | "authorization.forbidden"
  | "authorization.insufficient_permissions"
  | "data.key_not_found"
  | "data.api_not_found"
  | "data.permission_not_found"
  | "data.role_not_found"
  | "data.identity_not_found"
  | "data.ratelimit_namespace_not_found"
  | "data.ratelimit_override_not_found"
  | "data.migration_not_found"
  | "data.portal_not_found"
  | "data.permission_already_exists"
  | "data.role_already_exists"
  | "data.identity_already_exists"
  | "application.precondition_failed"
  | "too_many_requests.workspace_rate_limited"
  | "too_many_requests.authentication_failures"
  | "application.unexpected_error"
  | "application.service_unavailable"
  | "routing.not_found"
  | "routing.method_not_allowed";

interface CatalogEntry {
  vendor: "svc" | "user";
  status: number;
  title: string;
}

/** Every error the local service can answer with, by kind. */
export const ERROR_CATALOG: Readonly<Record<ErrorKind, CatalogEntry>> = Object.freeze({
  "application.invalid_input": { vendor: "svc", status: 400, title: "Bad Request" },
  "bad_request.permissions_query_syntax_error": { vendor: "user", status: 400, title: "Bad Request" },
  "bad_request.request_body_too_large": { vendor: "user", status: 413, title: "Request Entity Too Large" },
  "bad_request.invalid_analytics_query": { vendor: "user", status: 400, title: "Bad Request" },
  "bad_request.invalid_analytics_table": { vendor: "user", status: 400, title: "Bad Request" },
  "bad_request.invalid_analytics_function": { vendor: "user", status: 400, title: "Bad Request" },
  "bad_request.invalid_analytics_query_type": { vendor: "user", status: 400, title: "Bad Request" },
  "bad_request.query_range_exceeds_retention": { vendor: "user", status: 400, title: "Bad Request" },
  "unprocessable_entity.query_rows_limit_exceeded": { vendor: "user", status: 422, title: "Unprocessable Entity" },
  "unprocessable_entity.query_execution_timeout": { vendor: "user", status: 422, title: "Unprocessable Entity" },
  "data.analytics_not_configured": { vendor: "svc", status: 412, title: "Precondition Failed" },
  "authentication.missing": { vendor: "svc", status: 400, title: "Bad Request" },
  "authentication.malformed": { vendor: "svc", status: 400, title: "Bad Request" },
  "authentication.key_not_found": { vendor: "svc", status: 401, title: "Unauthorized" },
  "authentication.portal_token_missing": { vendor: "svc", status: 400, title: "Bad Request" },
  "authentication.portal_session_not_found": { vendor: "svc", status: 401, title: "Unauthorized" },
  "authorization.forbidden": { vendor: "svc", status: 403, title: "Forbidden" },
  "authorization.insufficient_permissions": { vendor: "svc", status: 403, title: "Insufficient Permissions" },
  "data.key_not_found": { vendor: "svc", status: 404, title: "Not Found" },
  "data.api_not_found": { vendor: "svc", status: 404, title: "Not Found" },
  "data.permission_not_found": { vendor: "svc", status: 404, title: "Not Found" },
  "data.role_not_found": { vendor: "svc", status: 404, title: "Not Found" },
  "data.identity_not_found": { vendor: "svc", status: 404, title: "Not Found" },
  "data.ratelimit_namespace_not_found": { vendor: "svc", status: 404, title: "Not Found" },
  "data.ratelimit_override_not_found": { vendor: "svc", status: 404, title: "Not Found" },
  "data.migration_not_found": { vendor: "svc", status: 404, title: "Not Found" },
  "data.portal_not_found": { vendor: "svc", status: 404, title: "Not Found" },
  "data.permission_already_exists": { vendor: "svc", status: 409, title: "Conflicting Resource" },
  "data.role_already_exists": { vendor: "svc", status: 409, title: "Conflicting Resource" },
  "data.identity_already_exists": { vendor: "svc", status: 409, title: "Conflicting Resource" },
  "application.precondition_failed": { vendor: "svc", status: 412, title: "Precondition Failed" },
  "too_many_requests.workspace_rate_limited": { vendor: "user", status: 429, title: "Too Many Requests" },
  "too_many_requests.authentication_failures": { vendor: "svc", status: 429, title: "Too Many Requests" },
  "application.unexpected_error": { vendor: "svc", status: 500, title: "Internal Server Error" },
  "application.service_unavailable": { vendor: "svc", status: 503, title: "Service Unavailable" },
  "routing.not_found": { vendor: "svc", status: 404, title: "Not Found" },
  "routing.method_not_allowed": { vendor: "svc", status: 405, title: "Method Not Allowed" },
});

/** Base of the `type` URLs the local service writes. */
const ERROR_DOCS_BASE = "https://unkey.com/docs/api-reference/errors-v2";

/** The `type` URL for a kind in the catalog. */
export function errorTypeUrl(kind: ErrorKind): string {
  const [category, name] = splitKind(kind);
  return `${ERROR_DOCS_BASE}/${ERROR_CATALOG[kind].vendor}/${category}/${name}`;
}

interface ParsedErrorType {
  /** `err:<system>:<category>:<name>`, e.g. `err:unkey:data:key_not_found` */
  identifier: string;
  /** `<category>.<name>`, vendor-free; compare against {@link ErrorKind}. */
  kind: string;
}

/**
 * Reads the system (vendor), category and name from an error's `type`: the production service's
 * URL (`https://unkey.com/docs/errors/<system>/<category>/<name>`), the specification's
 * (`…/api-reference/errors-v2/<vendor>/<category>/<name>`), or an identifier
 * (`err:<system>:<category>:<name>`). The three segments must end the URL's path (a query or
 * fragment is ignored) and be `[A-Za-z0-9_]+`. Returns undefined for anything else.
 */
export function parseErrorType(type: unknown): ParsedErrorType | undefined {
  if (typeof type !== "string" || type.length > 2048) return undefined;
  let parts: string[];
  if (type.startsWith("err:")) {
    parts = type.slice(4).split(":");
  } else {
    const segments = type.split(/[?#]/, 1)[0]!.replace(/\/$/, "").split("/");
    const marker = segments.at(-4);
    if (marker !== "errors" && marker !== "errors-v2") return undefined;
    parts = segments.slice(-3);
  }
  if (parts.length !== 3 || parts.some((p) => !TYPE_SEGMENT.test(p))) return undefined;
  const [system, category, name] = parts as [string, string, string];
  return { identifier: `err:${system}:${category}:${name}`, kind: `${category}.${name}` };
}

const TYPE_SEGMENT = /^[a-z0-9_]+$/i;

function splitKind(kind: ErrorKind): [string, string] {
  const dot = kind.indexOf(".");
  return [kind.slice(0, dot), kind.slice(dot + 1)];
}
