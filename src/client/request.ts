// The one request chokepoint of the client: POST {base}/v2/<operation> with the root key, a
// per-attempt timeout, retries with backoff on transient failures, an overall deadline, and strict
// envelope parsing into `data` (with non-enumerable `requestId`/`pagination`) or a typed error.

import { STATUS_CODES } from "node:http";
import type { Pagination } from "../protocol/types";
import { parseErrorEnvelope, parseSuccessEnvelope } from "./envelope";
import {
  KeyServiceHttpError,
  KeyServiceNetworkError,
  KeyServiceResponseError,
  KeyServiceTimeoutError,
  RETRYABLE_STATUSES,
  type KeyServiceError,
} from "./errors";
import { resolveCallOptions, type CallConfig, type CallOptions, type ClientConfig } from "./options";
import { cancelQuietly, readBodyCapped } from "./read-body";
import { parseRetryAfter, retryAfterDelay, retryDelay } from "./retry";
import type { Runtime } from "./runtime";

export interface RequestContext {
  readonly config: ClientConfig;
  readonly runtime: Runtime;
}

type Outcome = { ok: true; value: object } | { ok: false; error: KeyServiceError; retryAfter?: number };

interface Attempt {
  readonly operation: string;
  readonly url: string;
  readonly init: RequestInit;
  readonly call: CallConfig;
  readonly number: number;
  /** Time left before the call's deadline, ms. */
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
export async function sendRequest(ctx: RequestContext, operation: string, body: unknown, options?: CallOptions): Promise<object> {
  if (typeof operation !== "string" || !OPERATION_NAME.test(operation)) {
    throw new TypeError(`keyguard client: ${JSON.stringify(String(operation)).slice(0, 80)} is not an operation name like "keys.verifyKey".`);
  }
  const call = resolveCallOptions(ctx.config, options, operation);
  const payload = body === undefined ? {} : body;
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
    throw new TypeError(`${operation}: the request body must be an object.`);
  }
  const { config, runtime } = ctx;
  const init: RequestInit = {
    method: "POST",
    headers: {
      Authorization: `Bearer ${config.rootKey}`,
      "Content-Type": "application/json",
      Accept: "application/json",
      "User-Agent": config.userAgent,
    },
    body: JSON.stringify(payload),
    redirect: "manual",
  };
  const callerKey = (payload as { key?: unknown }).key;
  const secrets = typeof callerKey === "string" && callerKey.length >= 4 ? [config.rootKey, callerKey] : [config.rootKey];
  const url = `${config.baseUrl}/v2/${operation}`;
  const attempts = call.retry?.attempts ?? 1;
  const started = runtime.now();

  for (let number = 1; number <= attempts; number++) {
    call.signal?.throwIfAborted();
    const left = call.deadline - (runtime.now() - started);
    if (left <= 0) throw deadlineError(operation, call.deadline, number - 1);
    const outcome = await attemptOnce(config, { operation, url, init, call, number, left, secrets });
    if (outcome.ok) return outcome.value;

    const error = outcome.error;
    const fields = { operation, attempt: number, code: error.code, status: (error as { status?: number }).status, requestId: error.requestId };
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

async function attemptOnce(config: ClientConfig, a: Attempt): Promise<Outcome> {
  const timeout = Math.min(a.call.timeout, a.left);
  const scope = timeout < a.call.timeout ? "deadline" : "attempt";
  const timer = AbortSignal.timeout(timeout);
  const signal = a.call.signal ? AbortSignal.any([a.call.signal, timer]) : timer;
  const onAbort = (cause: unknown): Outcome => {
    if (a.call.signal?.aborted) throw a.call.signal.reason;
    const message = `${a.operation}: no answer within ${scope === "deadline" ? `the call's deadline of ${a.call.deadline}` : `the per-attempt timeout of ${timeout}`} ms`;
    return {
      ok: false,
      error: new KeyServiceTimeoutError(message, { operation: a.operation, attempts: a.number, timeout: scope === "deadline" ? a.call.deadline : timeout, scope, cause }),
    };
  };

  let response: Response;
  try {
    response = await raceAbort(config.fetch(a.url, { ...a.init, signal }), signal);
  } catch (cause) {
    if (signal.aborted) return onAbort(cause);
    const message = `${a.operation}: could not reach the key service (${describeCause(cause, a.secrets)})`;
    return { ok: false, error: new KeyServiceNetworkError(message, { operation: a.operation, attempts: a.number, cause: safeCause(cause, a.secrets) }) };
  }

  const status = response.status;
  const isSuccess = status >= 200 && status < 300;
  let text: string | undefined;
  try {
    const read = await raceAbort(readBodyCapped(response, config.maxResponseBytes), signal);
    if (read.tooLarge && isSuccess) {
      const message = `${a.operation}: invalid response from the key service (HTTP ${status}): the body is larger than ${config.maxResponseBytes} bytes`;
      return { ok: false, error: new KeyServiceResponseError(message, { operation: a.operation, attempts: a.number, status }) };
    }
    text = read.tooLarge ? undefined : read.text;
  } catch (cause) {
    void cancelQuietly(response.body);
    if (signal.aborted) return onAbort(cause);
    if (isSuccess || !RETRYABLE_STATUSES.has(status)) {
      // Headers arrived, so the service may have acted on the request: not retried.
      const message = `${a.operation}: the connection broke while reading the answer (HTTP ${status}, ${describeCause(cause, a.secrets)})`;
      const init = { operation: a.operation, attempts: a.number, cause: safeCause(cause, a.secrets), retryable: false };
      return { ok: false, error: new KeyServiceNetworkError(message, init) };
    }
    text = undefined; // a 502/503/504 whose body broke off: still that status
  }

  if (isSuccess) {
    const parsed = parseSuccessEnvelope(a.operation, text ?? "");
    if (!parsed.ok) {
      const message = `${a.operation}: invalid response from the key service (HTTP ${status}): ${parsed.reason}`;
      return { ok: false, error: new KeyServiceResponseError(message, { operation: a.operation, attempts: a.number, status, requestId: parsed.requestId }) };
    }
    return { ok: true, value: attachMeta(parsed.data, parsed.requestId, parsed.pagination) };
  }

  const parsed = parseErrorEnvelope(status, text, STATUS_CODES[status] ?? "");
  const retryAfter = parseRetryAfter(response.headers.get("retry-after"), Date.now());
  const title = redact(parsed.title, a.secrets).slice(0, MAX_DETAIL);
  const detail = redact(parsed.detail, a.secrets).slice(0, MAX_DETAIL);
  const errors = parsed.errors?.map((e) => ({
    location: redact(e.location, a.secrets),
    message: redact(e.message, a.secrets),
    ...(e.fix !== undefined && { fix: redact(e.fix, a.secrets) }),
  }));
  const error = new KeyServiceHttpError(`${a.operation}: HTTP ${status} ${title}: ${detail}`, {
    operation: a.operation,
    attempts: a.number,
    status,
    title,
    detail,
    type: redact(parsed.type, a.secrets),
    ...(parsed.requestId !== undefined && { requestId: parsed.requestId }),
    ...(parsed.identifier !== undefined && { identifier: parsed.identifier, kind: parsed.kind }),
    ...(retryAfter !== undefined && { retryAfter }),
    ...(errors !== undefined && { errors }),
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
  return new KeyServiceTimeoutError(`${operation}: the call's deadline of ${deadline} ms passed`, { operation, attempts, timeout: deadline, scope: "deadline" });
}

/** Rejects with `signal.reason` when `signal` aborts first, even if `promise` ignores the signal. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error as Error);
      },
    );
  });
}

/** A short, secret-free description of a fetch failure: the system error code when there is one. */
function describeCause(cause: unknown, secrets: readonly string[]): string {
  const inner = (cause as { cause?: unknown } | undefined)?.cause ?? cause;
  const code = (inner as { code?: unknown } | undefined)?.code;
  if (typeof code === "string" && /^[A-Z0-9_]{2,40}$/.test(code)) return code;
  const message = inner instanceof Error ? inner.message : String(inner);
  return redact(message, secrets).slice(0, 200);
}

/**
 * The cause to keep on an error: the original, unless its text (or its own cause's) holds a secret,
 * e.g. a custom fetch quoting the Authorization header; then a redacted copy with the same `code`.
 */
function safeCause(cause: unknown, secrets: readonly string[]): unknown {
  const texts = [cause, (cause as { cause?: unknown } | undefined)?.cause].map((c) => (c instanceof Error ? `${c.message}\n${c.stack ?? ""}` : String(c)));
  if (!texts.some((t) => secrets.some((s) => s !== "" && t.includes(s)))) return cause;
  const copy = new Error(redact(cause instanceof Error ? cause.message : String(cause), secrets));
  const code = (cause as { code?: unknown } | undefined)?.code;
  if (typeof code === "string") Object.assign(copy, { code });
  return copy;
}

/** Replaces every occurrence of a secret in text from outside (a server's answer, a fetch error). */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret !== "") out = out.split(secret).join("[redacted]");
  return out;
}
