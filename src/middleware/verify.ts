// The verification step: the answers kept in the store, one shared in-flight call per answer, the
// call to the key service with its time limits, the `staleIfError` fallback, and the sorting and
// (throttled) logging of failed calls. Knows nothing of HTTP requests.
//
// The invariant: never let more requests through than the service would have. A result that
// reports credits or rate limits was charged by the service, so it is neither stored nor handed
// to the requests that waited on it: each of those verifies on its own. Such a key is then
// remembered as charged, and its later requests call the service in parallel instead of joining.

import { LRUCache } from "lru-cache";
import type { CallOptions, KeyServiceClient } from "../client";
import { KeyServiceTimeoutError } from "../client/errors";
import type { CallSettings } from "../client/options";
import { createLogThrottle, type LogFields, type Logger } from "../logger";
import type { InvalidationMessage } from "../protocol/invalidation-message";
import type { VerifyKeyResult } from "../protocol/types";
import type { ResolvedShape } from "./request-shape";
import {
  deepFreeze,
  isReusable,
  isRefKeyOf,
  memoryStore,
  refKey,
  storableFor,
  type AnswerRef,
  type Store,
  type StoreSettings,
  type Ticket,
} from "./cache-store";

export type VerifyOutcome =
  | {
      readonly kind: "result";
      readonly result: Readonly<VerifyKeyResult>;
      /** `meta.requestId` of the call that produced the result. */
      readonly requestId: string | undefined;
      /** A kept answer (`cache`), the service's, or a `staleIfError` one. */
      readonly source: "cache" | "service" | "stale";
      /** How long this request waited for the service, ms; undefined for a kept answer. */
      readonly serviceMs: number | undefined;
    }
  | { readonly kind: "failure"; readonly failure: ServiceFailure; readonly serviceMs: number }
  /** The gate refused the call (`unknownKeyLimit`): no kept answer, and no call was made. */
  | { readonly kind: "blocked"; readonly retryAfter: number };

/**
 * Asked right before the service would be called (after the kept answers missed): undefined to
 * call it, else the seconds of `Retry-After` of a refusal without a call.
 */
type CallGate = () => number | undefined | Promise<number | undefined>;

/** Thrown by a call its gate refused; never leaves the verifier. */
class Blocked {
  constructor(readonly retryAfter: number) {}
}

interface Verifier {
  /** A kept answer for this key hash and shape, without waiting; undefined on a miss. */
  peek(keyHash: string, shape: ResolvedShape): Readonly<VerifyKeyResult> | undefined;
  verify(key: string, keyHash: string, shape: ResolvedShape, gate?: CallGate): Promise<VerifyOutcome>;
  /** Logs (throttled) a misconfiguration found before any call, e.g. a bad computed option. */
  reportMisconfiguration(reason: string): void;
  /** Forgets answers (kept, stale, in flight) here and, through the store, on every instance. */
  invalidate(message: InvalidationMessage): Promise<void>;
}

interface VerifierSettings {
  readonly client: KeyServiceClient;
  readonly call: { readonly settings: CallSettings; readonly options: CallOptions };
  readonly cache: StoreSettings | undefined;
  readonly store: Store | undefined;
  /** ms; 0 = off. */
  readonly staleIfError: number;
  readonly staleMax: number;
  readonly onServiceError: "closed" | "open";
  readonly logger: Logger;
}

/** Codes that say the key itself is unusable, whatever the request: every kept answer for it goes. */
const KEY_GONE: ReadonlySet<string> = new Set(["NOT_FOUND", "DISABLED", "EXPIRED"]);

/** How long a key stays marked as charged when `ttl` is 0 (no answers stored), ms. */
const CHARGED_MARK_TTL_WITHOUT_CACHE = 30_000;

const requestIdOf = (result: object): string | undefined => {
  const id = (result as { requestId?: unknown }).requestId;
  return typeof id === "string" ? id : undefined;
};

/** Whether a result lets the request through: `valid: true` with the code `VALID`, nothing else. */
export const passes = (result: Readonly<VerifyKeyResult>): boolean => result.valid === true && result.code === "VALID";

interface Shared {
  readonly result: Readonly<VerifyKeyResult>;
  readonly reusable: boolean;
  /** Whether the answer came from a call to the service (false: from the store). */
  readonly called: boolean;
}

export function createVerifier(settings: VerifierSettings): Verifier {
  const { logger, call, store, cache } = settings;
  const stale = settings.staleIfError > 0 ? memoryStore({ max: settings.staleMax }) : undefined;
  const throttle = createLogThrottle();
  // One call per answer at a time; the requests asking meanwhile wait for it (its answer is
  // handed to them only when reusable).
  const inflight = new Map<string, Promise<Shared>>();
  // Key hashes whose last answer was charged (bounded; a mark lives as long as a VALID answer would).
  const charged = new LRUCache<string, true>({
    max: settings.staleMax,
    ttl: cache !== undefined && cache.ttl > 0 ? cache.ttl : CHARGED_MARK_TTL_WITHOUT_CACHE,
    perf: { now: () => Date.now() },
    ttlResolution: 0, // no timer per millisecond on the hot path (see store.ts)
  });

  // Every invalidation the store applies (ours or another instance's) reaches what we keep here.
  function forget(message: InvalidationMessage): void {
    stale?.apply(message);
    if (message.kind === "key") {
      charged.delete(message.keyHash);
      for (const k of [...inflight.keys()]) if (isRefKeyOf(k, message.keyHash)) inflight.delete(k);
    } else {
      // A keyId names no key hash we could match: no request joins a call started before.
      if (message.kind === "all") charged.clear();
      inflight.clear();
    }
  }
  store?.subscribe(forget);

  function report(failure: ServiceFailure, servedStale: boolean): void {
    const failsOpen = failure.kind === "unavailable" && failure.mayFailOpen && settings.onServiceError === "open";
    const decision = throttle(servedStale ? "stale" : failsOpen ? "open" : failure.kind);
    if (!decision.log) return;
    const fields = { ...failure.log, suppressedSinceLastLog: decision.suppressed };
    if (failure.kind === "misconfigured") {
      logger.error(fields, `apiKeyAuth: cannot verify API keys: ${failure.reason}; answering 500`);
    } else if (servedStale) {
      logger.warn(fields, "apiKeyAuth: key service unavailable; serving earlier answers (staleIfError)");
    } else if (failsOpen) {
      logger.warn(fields, 'apiKeyAuth: key service unavailable; letting requests through unauthenticated (onServiceError: "open")');
    } else {
      logger.warn(fields, "apiKeyAuth: key service unavailable; answering 503");
    }
  }

  /** One call, within what is left of the deadline of the request that started at `started`. */
  async function callService(key: string, shape: ResolvedShape, started: number): Promise<Readonly<VerifyKeyResult>> {
    const left = call.settings.deadline - (Date.now() - started);
    if (left <= 0) {
      // Only after waiting on another request's call whose answer could not be shared.
      throw new KeyServiceTimeoutError("verifyKey: the deadline ran out while waiting for another request's call", {
        attempts: 0,
        timeout: call.settings.deadline,
        scope: "deadline",
        operation: "keys.verifyKey",
      });
    }
    // The normalised options as they are (the client does not check them again), unless time was spent waiting.
    const options = left >= call.settings.deadline ? call.options : { ...call.options, deadline: left };
    const result: unknown = await settings.client.keys.verifyKey({ key, ...shape.body }, options);
    if (typeof result !== "object" || result === null || typeof (result as VerifyKeyResult).valid !== "boolean") {
      throw Object.assign(new Error("verifyKey returned no verification result"), { code: "KEY_SERVICE_INVALID_RESPONSE" });
    }
    return deepFreeze(result as VerifyKeyResult);
  }

  /**
   * What an answer teaches the charged marks and the stale store. Only a reusable VALID answer is
   * kept for `staleIfError` (unless invalidated since `staleMark`); any other answer drops the one
   * kept for this shape, and an answer saying the key is gone (or now charged) drops all for the key.
   */
  function learn(ref: AnswerRef, cacheable: boolean, result: Readonly<VerifyKeyResult>, staleMark: number): void {
    const reusable = isReusable(result);
    // While a key is marked, answers kept from before it was charged are not used (they expire
    // before the mark does).
    if (reusable) charged.delete(ref.keyHash);
    else charged.set(ref.keyHash, true);
    if (stale === undefined) return;
    if (passes(result) && reusable) {
      if (cacheable) stale.fill(ref, result, settings.staleIfError, staleMark);
    } else if (!reusable || KEY_GONE.has(result.code)) {
      stale.apply({ v: 1, kind: "key", keyHash: ref.keyHash });
    } else if (cacheable) {
      stale.forget(ref);
    }
  }

  /** The store's answer, or the service's (stored when it may be), for a cacheable shape. */
  async function lookupOrCall(ref: AnswerRef, run: () => Promise<Readonly<VerifyKeyResult>>): Promise<Shared> {
    const found = await store!.lookup(ref, call.settings.deadline);
    if (found.hit !== undefined) return { result: found.hit, reusable: true, called: false };
    const ticket: Ticket = found.ticket;
    let result: Readonly<VerifyKeyResult> | undefined;
    try {
      result = await run();
    } finally {
      store!.settle(ticket, result, result === undefined ? 0 : storableFor(result, cache!, Date.now()));
    }
    return { result, reusable: isReusable(result), called: true };
  }

  /** One call per answer at a time; see the invariant at the top of this file. */
  async function shared(ref: AnswerRef, run: () => Promise<Readonly<VerifyKeyResult>>): Promise<Shared> {
    const own = async (): Promise<Shared> => {
      const result = await run();
      return { result, reusable: isReusable(result), called: true };
    };
    // A charged key's answers are never shared: joining would only make each request wait for
    // another's call before making its own.
    if (charged.has(ref.keyHash)) return own();
    const k = refKey(ref);
    const joined = inflight.get(k);
    if (joined !== undefined) {
      // A call its gate refused is another request's refusal: this request asks through its own gate.
      const answer = await joined.catch((e: unknown) => {
        if (e instanceof Blocked) return undefined;
        throw e;
      });
      return answer !== undefined && answer.reusable ? answer : own();
    }
    const mine = lookupOrCall(ref, run);
    inflight.set(k, mine);
    try {
      return await mine;
    } finally {
      if (inflight.get(k) === mine) inflight.delete(k);
    }
  }

  return {
    peek(keyHash, shape) {
      if (store === undefined || !shape.cacheable || (charged.size > 0 && charged.has(keyHash))) return undefined;
      return store.peek({ keyHash, query: shape.query });
    },
    async verify(key, keyHash, shape, gate) {
      const started = Date.now();
      const waitStarted = performance.now();
      const ref: AnswerRef = { keyHash, query: shape.query };
      const staleMark = stale?.mark() ?? 0;
      const run = async () => {
        if (gate !== undefined) {
          const blocked = await gate();
          if (blocked !== undefined) throw new Blocked(blocked);
        }
        const result = await callService(key, shape, started);
        learn(ref, shape.cacheable, result, staleMark);
        return result;
      };
      try {
        const answer = store !== undefined && shape.cacheable ? await shared(ref, run) : undefined;
        const result = answer === undefined ? await run() : answer.result;
        const called = answer === undefined || answer.called;
        return {
          kind: "result",
          result,
          requestId: requestIdOf(result),
          source: called ? "service" : "cache",
          serviceMs: called ? performance.now() - waitStarted : undefined,
        };
      } catch (e) {
        if (e instanceof Blocked) return { kind: "blocked", retryAfter: e.retryAfter };
        const serviceMs = performance.now() - waitStarted;
        const failure = classifyServiceFailure(e);
        const kept = failure.kind === "unavailable" && stale !== undefined && shape.cacheable ? recall(ref) : undefined;
        report(failure, kept !== undefined);
        if (kept !== undefined) return { kind: "result", result: kept, requestId: requestIdOf(kept), source: "stale", serviceMs };
        return { kind: "failure", failure, serviceMs };
      }
    },
    reportMisconfiguration(reason) {
      report({ kind: "misconfigured", reason, log: {}, cause: undefined }, false);
    },
    async invalidate(message) {
      if (store !== undefined) await store.invalidate(message);
      else forget(message);
    },
  };

  /** The kept `staleIfError` answer, unless the key has expired since. */
  function recall(ref: AnswerRef): Readonly<VerifyKeyResult> | undefined {
    const kept = stale!.peek(ref);
    if (kept === undefined) return undefined;
    return typeof kept.expires === "number" && kept.expires <= Date.now() ? undefined : kept;
  }
}

/** `Retry-After` (seconds) of a 503 when the service did not send one. */
const DEFAULT_RETRY_AFTER_SECONDS = 5;

interface FailureBase {
  /** `meta.requestId` of the service's answer, when there was one. */
  readonly requestId?: string;
  /** Safe fields for the log: codes, statuses, request ids; never a key. */
  readonly log: LogFields;
  /** What the call threw. */
  readonly cause: unknown;
}

type ServiceFailure =
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
  url?: unknown;
  reason?: unknown;
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
  // A network failure names the service's URL (`{baseUrl}/v2/keys.verifyKey`) and its cause
  // (ECONNREFUSED, ENOTFOUND, a TLS code such as DEPTH_ZERO_SELF_SIGNED_CERT).
  if (typeof e.url === "string") fields.url = e.url;
  if (typeof e.reason === "string") fields.cause = e.reason;
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
  if (status === 400)
    return misconfigured("the key service rejected the verification request (check the permissions, cost, ratelimits and tags options)", e);
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
