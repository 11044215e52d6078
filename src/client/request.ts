// The one request chokepoint of the client: POST {base}/v2/<operation> with the root key, a
// per-attempt timeout, retries with backoff on transient failures, an overall deadline, and strict
// envelope parsing into `data` (with non-enumerable `requestId`/`pagination`) or a typed error.

import { STATUS_TITLES } from "../protocol/status-titles";
import { ARRAY_BODY_OPERATIONS, type Pagination } from "../protocol/types";
import { attemptSignal, raceAbort } from "./abort";
import { parseErrorEnvelope, parseSuccessEnvelope } from "./envelope";
import {
  KeyServiceConfigError,
  KeyServiceHttpError,
  KeyServiceNetworkError,
  KeyServiceResponseError,
  KeyServiceTimeoutError,
  RETRYABLE_STATUSES,
  type KeyServiceError,
  type TimeoutScope,
} from "./errors";
import { resolveCallOptions, type CallConfig, type CallOptions, type ClientConfig } from "./options";
import { describeCause, safeCause } from "./redact";
import { parseRetryAfter, retryAfterDelay, retryDelay } from "./retry";
import type { Runtime } from "./runtime";
import type { AttemptReport, Telemetry } from "./telemetry";
import type { Transport, TransportResponse } from "./transport";

export interface RequestContext {
  readonly config: ClientConfig;
  readonly runtime: Runtime;
  readonly transport: Transport;
  /** Spans and the duration histogram, when the client was created with `telemetry`. */
  readonly telemetry?: Telemetry | undefined;
}

type Outcome = { ok: true; value: object; status: number } | { ok: false; error: KeyServiceError; retryAfter?: number };

/** How telemetry describes an attempt: status, and the error type (the status for an HTTP error, else the error's code). */
function reportOf(outcome: Outcome): AttemptReport {
  if (outcome.ok) return { status: outcome.status, errorType: undefined, data: outcome.value };
  const status = (outcome.error as { status?: unknown }).status;
  const hasStatus = typeof status === "number";
  const errorType = hasStatus && status >= 400 ? String(status) : outcome.error.code;
  return { status: hasStatus ? status : undefined, errorType, data: undefined };
}

interface Attempt {
  readonly operation: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly call: CallConfig;
  readonly number: number;
  /** Time left before the call's deadline, ms (fractional: the clock is performance.now()). */
  readonly left: number;
  readonly secrets: readonly string[];
}

const OPERATION_NAME = /^[a-z][A-Za-z0-9]*\.[a-z][A-Za-z0-9]*$/;
const MAX_DETAIL = 500;

/**
 * Sends `operation` with `body` and resolves to the envelope's `data`, with `requestId` (and
 * `pagination` for list operations) as non-enumerable properties. Rejects with a KeyServiceError
 * subclass, or with the caller's `signal.reason` when that signal aborts.
 */
export async function sendRequest(
  ctx: RequestContext,
  operation: string,
  body: unknown,
  options?: CallOptions,
  /** Sent instead of the root key: a portal session's access token (`client.portal.session(token)`). */
  bearer?: string,
): Promise<object> {
  if (typeof operation !== "string" || !OPERATION_NAME.test(operation)) {
    throw new TypeError(
      `keyguard client: ${JSON.stringify(String(operation)).slice(0, 80)} is not an operation name like "keys.verifyKey".`,
    );
  }
  const call = resolveCallOptions(ctx.config, options, operation);
  const payload = body === undefined ? {} : body;
  const wantsArray = (ARRAY_BODY_OPERATIONS as readonly string[]).includes(operation);
  if (typeof payload !== "object" || payload === null || Array.isArray(payload) !== wantsArray) {
    throw new TypeError(`${operation}: the request body must be ${wantsArray ? "an array" : "an object"}.`);
  }
  const { config, runtime, transport } = ctx;
  const headers = {
    Authorization: `Bearer ${bearer ?? config.rootKey}`,
    "Content-Type": "application/json",
    Accept: "application/json",
    "User-Agent": config.userAgent,
  };
  const json = JSON.stringify(payload);
  const callerKey = (payload as { key?: unknown }).key;
  // A portal exchange code and access token are credentials too: never repeated in an error.
  const portalCode = (payload as { code?: unknown }).code;
  const secrets = [config.rootKey, callerKey, portalCode, bearer].filter((v): v is string => typeof v === "string" && v.length >= 4);
  const attempts = call.retry?.attempts ?? 1;
  // The transport's loading (undici's, once per process) is not the service's time: waited for first.
  const loading = transport.ready();
  if (loading !== undefined) await (call.signal === undefined ? loading : raceAbort(loading, call.signal));
  const started = runtime.now();

  for (let number = 1; number <= attempts; number++) {
    call.signal?.throwIfAborted();
    const left = call.deadline - (runtime.now() - started);
    if (left <= 0) throw deadlineError(operation, call.deadline, number - 1);
    const attempt: Attempt = { operation, headers, body: json, call, number, left, secrets };
    const outcome =
      ctx.telemetry === undefined
        ? await attemptOnce(config, transport, attempt)
        : await ctx.telemetry.attempt(operation, number, () => attemptOnce(config, transport, attempt), reportOf);
    if (outcome.ok) return outcome.value;

    const error = outcome.error;
    const fields = {
      operation,
      attempt: number,
      code: error.code,
      status: (error as { status?: number }).status,
      requestId: error.requestId,
    };
    if (!error.retryable || call.retry === null || number >= attempts) {
      if (number > 1) config.logger.warn(fields, `key service call failed after ${number} attempts`);
      throw error;
    }
    const wait =
      outcome.retryAfter === undefined ? retryDelay(call.retry, number, runtime.random()) : retryAfterDelay(call.retry, outcome.retryAfter);
    if (runtime.now() - started + wait >= call.deadline) {
      config.logger.warn({ ...fields, delay: wait }, "key service call failed; no time left before the deadline to retry");
      throw error;
    }
    config.logger.debug?.({ ...fields, delay: wait }, "key service call failed; retrying");
    await runtime.sleep(wait, call.signal);
  }
  // Unreachable: the last attempt returns or throws above.
  throw deadlineError(operation, call.deadline, attempts);
}

/** One attempt under `min(timeout, time left)`, combined with the caller's signal. */
async function attemptOnce(config: ClientConfig, transport: Transport, a: Attempt): Promise<Outcome> {
  const scope: TimeoutScope = a.left < a.call.timeout ? "deadline" : "attempt";
  // Whole milliseconds, as timers take them; the time left is fractional.
  const timeout = Math.max(1, Math.floor(Math.min(a.call.timeout, a.left)));
  const attempt = attemptSignal(a.call.signal, timeout);
  try {
    return await exchange(config, transport, a, attempt.signal, scope, timeout);
  } finally {
    attempt.dispose();
  }
}

async function exchange(
  config: ClientConfig,
  transport: Transport,
  a: Attempt,
  signal: AbortSignal,
  scope: TimeoutScope,
  timeout: number,
): Promise<Outcome> {
  const base = { operation: a.operation, attempts: a.number };
  const onAbort = (cause: unknown): Outcome => {
    if (a.call.signal?.aborted) throw a.call.signal.reason;
    const limit = scope === "deadline" ? a.call.deadline : timeout;
    const message = `${a.operation}: no answer within ${scope === "deadline" ? "the call's deadline" : "the per-attempt timeout"} of ${limit} ms`;
    return {
      ok: false,
      error: new KeyServiceTimeoutError(message, { ...base, timeout: limit, scope, cause: safeCause(cause, a.secrets) }),
    };
  };

  let response: TransportResponse;
  try {
    response = await transport.post(a.operation, a.headers, a.body, signal);
  } catch (cause) {
    if (signal.aborted) return onAbort(cause);
    if (cause instanceof KeyServiceConfigError) throw cause;
    const reason = describeCause(cause, a.secrets);
    const url = `${config.baseUrl}/v2/${a.operation}`;
    const message = `${a.operation}: could not reach the key service at ${url} (${reason})`;
    return { ok: false, error: new KeyServiceNetworkError(message, { ...base, url, reason, cause: safeCause(cause, a.secrets) }) };
  }

  const status = response.status;
  const isSuccess = status >= 200 && status < 300;
  let text: string | undefined;
  try {
    const read = await response.readBody(config.maxResponseBytes, signal);
    if (read.tooLarge && isSuccess) {
      const message = `${a.operation}: invalid response from the key service (HTTP ${status}): the body is larger than ${config.maxResponseBytes} bytes`;
      return { ok: false, error: new KeyServiceResponseError(message, { ...base, status }) };
    }
    text = read.tooLarge ? undefined : read.text;
  } catch (cause) {
    if (signal.aborted) return onAbort(cause);
    if (isSuccess || !RETRYABLE_STATUSES.has(status)) {
      // Headers arrived, so the service may have acted on the request: not retried.
      const reason = describeCause(cause, a.secrets);
      const url = `${config.baseUrl}/v2/${a.operation}`;
      const message = `${a.operation}: the connection to ${url} broke while reading the answer (HTTP ${status}, ${reason})`;
      const init = { ...base, url, reason, cause: safeCause(cause, a.secrets), retryable: false };
      return { ok: false, error: new KeyServiceNetworkError(message, init) };
    }
    text = undefined; // a 502/503/504 whose body broke off: still that status
  }

  if (isSuccess) {
    const parsed = parseSuccessEnvelope(a.operation, text ?? "", a.secrets);
    if (!parsed.ok) {
      const message = `${a.operation}: invalid response from the key service (HTTP ${status}): ${parsed.reason}`;
      return { ok: false, error: new KeyServiceResponseError(message, { ...base, status, requestId: parsed.requestId }) };
    }
    return { ok: true, value: attachMeta(parsed.data, parsed.requestId, parsed.pagination), status };
  }
  return httpFailure(a, status, text, response.header("retry-after"));
}

/** The outcome of a non-2xx answer: a KeyServiceHttpError built from redacted fields only. */
function httpFailure(a: Attempt, status: number, text: string | undefined, retryAfterHeader: string | undefined): Outcome {
  const parsed = parseErrorEnvelope(status, text, STATUS_TITLES[status] ?? "", a.secrets);
  const retryAfter = parseRetryAfter(retryAfterHeader, Date.now());
  const title = parsed.title.slice(0, MAX_DETAIL);
  const detail = parsed.detail.slice(0, MAX_DETAIL);
  const error = new KeyServiceHttpError(`${a.operation}: HTTP ${status} ${title}: ${detail}`, {
    operation: a.operation,
    attempts: a.number,
    status,
    title,
    detail,
    type: parsed.type,
    ...(parsed.requestId !== undefined && { requestId: parsed.requestId }),
    ...(parsed.identifier !== undefined && { identifier: parsed.identifier, kind: parsed.kind }),
    ...(retryAfter !== undefined && { retryAfter }),
    ...(parsed.errors !== undefined && { errors: parsed.errors }),
  });
  return { ok: false, error, ...(retryAfter !== undefined && { retryAfter }) };
}

/** Puts `requestId` (and `pagination`) on `data` as non-enumerable, read-only properties. */
function attachMeta(data: object, requestId: string, pagination: Pagination | undefined): object {
  Object.defineProperty(data, "requestId", { value: requestId, enumerable: false });
  if (pagination !== undefined) Object.defineProperty(data, "pagination", { value: Object.freeze(pagination), enumerable: false });
  return data;
}

function deadlineError(operation: string, deadline: number, attempts: number): KeyServiceTimeoutError {
  return new KeyServiceTimeoutError(`${operation}: the call's deadline of ${deadline} ms passed`, {
    operation,
    attempts,
    timeout: deadline,
    scope: "deadline",
  });
}
