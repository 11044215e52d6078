// Strict parsing of the service's response envelopes (pure): a 2xx must be `{meta:{requestId}, data}`
// with `data` of the operation's shape (the required fields of its answer schema in the contract); an
// error status may or may not carry `{error:{...}}`. Text that ends up in errors is redacted of the
// given secrets before anything is derived from it.

import type { TSchema } from "typebox";
import { CONTRACT } from "../protocol/contract";
import { checkValue } from "../protocol/contract/check";
import { parseErrorType } from "../protocol/errors";
import type { Pagination, ValidationErrorDetail } from "../protocol/types";
import { LIST_OPERATIONS, PAGED_EXTENSION_OPERATIONS } from "../protocol/types";
import { redact, safeRequestId } from "./redact";

type ParsedSuccess =
  { ok: true; data: object; requestId: string; pagination?: Pagination } | { ok: false; reason: string; requestId?: string };

/** What an error answer says, or what we say for it when it is not an envelope. */
interface ParsedError {
  requestId?: string;
  title: string;
  detail: string;
  type: string;
  identifier?: string;
  kind?: string;
  errors?: ValidationErrorDetail[];
}

const LIST_SET: ReadonlySet<string> = new Set([...LIST_OPERATIONS, ...PAGED_EXTENSION_OPERATIONS]);

const str = (v: unknown) => typeof v === "string";

/**
 * The outline of an answer's schema: its required fields and their JSON types, nothing deeper, and
 * any other field accepted (a newer server may add fields or extend nested ones).
 */
function outline(schema: TSchema): TSchema {
  const { properties = {}, required = [] } = schema as { properties?: Record<string, { type?: string }>; required?: string[] };
  return { type: "object", required, properties: Object.fromEntries(required.map((name) => [name, { type: properties[name]?.type }])) };
}

/**
 * Operations whose callers act on a field of `data`: the answer must have the required fields of
 * the contract's answer schema, so that a 200 with `data: {}` fails loudly instead of reading as
 * "invalid key" or "no id".
 */
const CHECKED = [
  "keys.verifyKey",
  "keys.createKey",
  "keys.rerollKey",
  "apis.createApi",
  "permissions.createPermission",
  "permissions.createRole",
  "identities.createIdentity",
  "ratelimit.limit",
  "ratelimit.multiLimit",
  "ratelimit.setOverride",
  "keys.migrateKeys",
] as const satisfies ReadonlyArray<keyof typeof CONTRACT>;

const DATA_CHECKS: ReadonlyMap<string, TSchema> = new Map(CHECKED.map((name) => [name, outline(CONTRACT[name].response)]));

/** Operations whose `data` is an array of rows (without pagination). */
const ROW_OPERATIONS: ReadonlySet<string> = new Set(["analytics.getVerifications"]);

/**
 * Parses the body of a 2xx answer to `operation`. A `meta.requestId` that does not look like one
 * (`[A-Za-z0-9_-]{1,128}`) or holds one of `secrets` reads as `"unknown"`.
 */
export function parseSuccessEnvelope(operation: string, text: string, secrets: readonly string[] = []): ParsedSuccess {
  const body = parseJson(text);
  if (!isRecord(body)) return { ok: false, reason: body === undefined ? "the body is not JSON" : "the body is not a JSON object" };
  const requestId = readRequestId(body, secrets);
  if (requestId === undefined) return { ok: false, reason: "meta.requestId is missing" };
  if (!("data" in body) || body.data === undefined) return { ok: false, reason: "data is missing", requestId };
  const data = body.data;
  if (typeof data !== "object" || data === null) return { ok: false, reason: "data is not an object", requestId };
  if (LIST_SET.has(operation)) {
    if (!Array.isArray(data)) return { ok: false, reason: "data of a list operation is not an array", requestId };
    const pagination = readPagination(body.pagination);
    if (pagination === undefined) return { ok: false, reason: "pagination is malformed", requestId };
    return { ok: true, data, requestId, pagination };
  }
  if (ROW_OPERATIONS.has(operation)) {
    if (!Array.isArray(data)) return { ok: false, reason: `data of ${operation} is not an array`, requestId };
    return { ok: true, data, requestId };
  }
  const check = DATA_CHECKS.get(operation);
  if (check && checkValue(check, data, { unknownFields: "accept", maxErrors: 1 }).length > 0) {
    return { ok: false, reason: `data does not have the shape of a ${operation} result`, requestId };
  }
  return { ok: true, data, requestId };
}

/**
 * Parses the body of a non-2xx answer. Without a valid error envelope the title is the status's
 * reason phrase, the type `"about:blank"` and `kind` undefined. Every text field is redacted of
 * `secrets`, and `identifier`/`kind` come from the redacted `type` (so a key echoed as its last
 * segment yields no kind); the request id is checked as for a success.
 */
export function parseErrorEnvelope(
  status: number,
  text: string | undefined,
  reasonPhrase: string,
  secrets: readonly string[] = [],
): ParsedError {
  const body = text === undefined ? undefined : parseJson(text);
  const requestId = isRecord(body) ? readRequestId(body, secrets) : undefined;
  const error = isRecord(body) && isRecord(body.error) ? body.error : undefined;
  if (error && str(error.title) && str(error.detail) && str(error.type)) {
    const clean = (v: string) => redact(v, secrets);
    const type = clean(error.type as string);
    const parsedType = parseErrorType(type);
    const errors = readValidationErrors(error.errors)?.map((e) => ({
      location: clean(e.location),
      message: clean(e.message),
      ...(e.fix !== undefined && { fix: clean(e.fix) }),
    }));
    return {
      ...(requestId !== undefined && { requestId }),
      title: clean(error.title as string),
      detail: clean(error.detail as string),
      type,
      ...(parsedType && { identifier: parsedType.identifier, kind: parsedType.kind }),
      ...(errors && { errors }),
    };
  }
  const title = reasonPhrase || `HTTP ${status}`;
  return {
    ...(requestId !== undefined && { requestId }),
    title,
    detail: `The key service answered HTTP ${status} without an error envelope.`,
    type: "about:blank",
  };
}

function readRequestId(body: Record<string, unknown>, secrets: readonly string[]): string | undefined {
  return isRecord(body.meta) ? safeRequestId(body.meta.requestId, secrets) : undefined;
}

function readPagination(value: unknown): Pagination | undefined {
  // Absent pagination on a list answer reads as a single, last page.
  if (value === undefined) return { hasMore: false };
  if (!isRecord(value) || typeof value.hasMore !== "boolean") return undefined;
  if (value.cursor !== undefined && (typeof value.cursor !== "string" || value.cursor === "")) return undefined;
  return value.cursor === undefined ? { hasMore: value.hasMore } : { cursor: value.cursor, hasMore: value.hasMore };
}

function readValidationErrors(value: unknown): ValidationErrorDetail[] | undefined {
  if (!Array.isArray(value)) return undefined;
  return value
    .filter((e): e is Record<string, unknown> => isRecord(e) && str(e.location) && str(e.message))
    .slice(0, 100)
    .map((e) => ({ location: e.location as string, message: e.message as string, ...(str(e.fix) && { fix: e.fix as string }) }));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
