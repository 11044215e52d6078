// The verification step: the cache, the call to the key service with its time limits, the
// `staleIfError` fallback, and the (throttled) logs of failures. Knows nothing of HTTP requests.

import { KeyServiceTimeoutError, type KeyServiceClient, type RetryOptions } from "../client";
import type { Logger } from "../logger";
import type { VerifyKeyResult } from "../protocol/types";
import { cacheKeyFor, createVerificationCache, hashKey, isReusable, type CacheSettings } from "./cache";
import { createLogThrottle } from "./log-throttle";
import type { ResolvedShape } from "./request-shape";
import { classifyServiceFailure, type ServiceFailure } from "./service-failure";
import { createStaleStore } from "./stale";

export type VerifyOutcome =
  | {
      readonly kind: "result";
      readonly result: Readonly<VerifyKeyResult>;
      /** `meta.requestId` of the call that produced the result. */
      readonly requestId: string | undefined;
      /** Served by `staleIfError` while the service failed. */
      readonly stale: boolean;
    }
  | { readonly kind: "failure"; readonly failure: ServiceFailure };

export interface Verifier {
  verify(key: string, shape: ResolvedShape): Promise<VerifyOutcome>;
  /** A cached answer for this key and shape, without waiting; undefined on a miss. */
  peek(key: string, shape: ResolvedShape): Readonly<VerifyKeyResult> | undefined;
  /** Logs (throttled) a misconfiguration found before any call, e.g. a bad computed option. */
  reportMisconfiguration(reason: string): void;
  /** Forgets every cached and stale answer for a key. */
  invalidate(key: string): void;
  clear(): void;
}

export interface VerifierSettings {
  readonly client: KeyServiceClient;
  readonly call: { readonly timeout: number; readonly deadline: number; readonly retry: RetryOptions | false };
  readonly cache: CacheSettings | undefined;
  /** ms; 0 = off. */
  readonly staleIfError: number;
  readonly staleMax: number;
  readonly onServiceError: "closed" | "open";
  readonly logger: Logger;
}

/** Codes that say the key itself is unusable, whatever the request: every kept answer for it goes. */
const KEY_GONE: ReadonlySet<string> = new Set(["NOT_FOUND", "DISABLED", "EXPIRED"]);

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

const requestIdOf = (result: object): string | undefined => {
  const id = (result as { requestId?: unknown }).requestId;
  return typeof id === "string" ? id : undefined;
};

/** Whether a result lets the request through: `valid: true` with the code `VALID`, nothing else. */
export const passes = (result: Readonly<VerifyKeyResult>): boolean => result.valid === true && result.code === "VALID";

export function createVerifier(settings: VerifierSettings): Verifier {
  const cache = settings.cache === undefined ? undefined : createVerificationCache(settings.cache);
  const stale = settings.staleIfError > 0 ? createStaleStore(settings.staleIfError, settings.staleMax) : undefined;
  const throttle = createLogThrottle();
  const { logger, call } = settings;

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
      logger.warn(fields, "apiKeyAuth: key service unavailable; letting requests through unauthenticated (onServiceError: \"open\")");
    } else {
      logger.warn(fields, "apiKeyAuth: key service unavailable; answering 503");
    }
  }

  /** One call, within what is left of the deadline of the request that started at `started`. */
  async function callService(key: string, shape: ResolvedShape, started: number): Promise<Readonly<VerifyKeyResult>> {
    const left = call.deadline - (Date.now() - started);
    if (left <= 0) {
      // Only after waiting on another request's call whose answer could not be shared.
      throw new KeyServiceTimeoutError("verifyKey: the deadline ran out while waiting for another request's call", {
        attempts: 0,
        timeout: call.deadline,
        scope: "deadline",
        operation: "keys.verifyKey",
      });
    }
    const options = { timeout: call.timeout, deadline: left, retry: call.retry };
    const result: unknown = await settings.client.keys.verifyKey({ key, ...shape.body }, options);
    if (typeof result !== "object" || result === null || typeof (result as VerifyKeyResult).valid !== "boolean") {
      throw Object.assign(new Error("verifyKey returned no verification result"), { code: "KEY_SERVICE_INVALID_RESPONSE" });
    }
    return deepFreeze(result as VerifyKeyResult);
  }

  /**
   * What an answer teaches the cache and the stale store. Only a reusable VALID answer is kept
   * for `staleIfError`; any other answer drops the one kept for this shape, and an answer saying
   * the key is gone (or now charged) drops every one kept for the key.
   */
  function learn(keyHash: string, cacheKey: string | undefined, result: Readonly<VerifyKeyResult>): void {
    cache?.observe(keyHash, result);
    if (stale === undefined) return;
    const reusable = isReusable(result);
    if (passes(result) && reusable) {
      if (cacheKey !== undefined) stale.remember(cacheKey, result);
    } else if (!reusable || KEY_GONE.has(result.code)) {
      stale.deleteKeyHash(keyHash);
    } else if (cacheKey !== undefined) {
      stale.forget(cacheKey);
    }
  }

  return {
    async verify(key, shape) {
      const started = Date.now();
      const keyHash = cache !== undefined || stale !== undefined ? hashKey(key) : undefined;
      const cacheKey = keyHash !== undefined && shape.cacheable ? cacheKeyFor(keyHash, shape.shapeKey) : undefined;
      const run = async () => {
        const result = await callService(key, shape, started);
        if (keyHash !== undefined) learn(keyHash, cacheKey, result);
        return result;
      };
      try {
        const result =
          cache !== undefined && keyHash !== undefined && cacheKey !== undefined
            ? await cache.verify(keyHash, shape.shapeKey, run)
            : await run();
        return { kind: "result", result, requestId: requestIdOf(result), stale: false };
      } catch (e) {
        const failure = classifyServiceFailure(e);
        const kept = failure.kind === "unavailable" && stale !== undefined && cacheKey !== undefined ? stale.recall(cacheKey) : undefined;
        report(failure, kept !== undefined);
        if (kept !== undefined) return { kind: "result", result: kept.result, requestId: requestIdOf(kept.result), stale: true };
        return { kind: "failure", failure };
      }
    },
    peek(key, shape) {
      if (cache === undefined || !shape.cacheable) return undefined;
      return cache.peek(hashKey(key), shape.shapeKey);
    },
    reportMisconfiguration(reason) {
      report({ kind: "misconfigured", reason, log: {}, cause: undefined }, false);
    },
    invalidate(key) {
      const hash = hashKey(key);
      cache?.deleteKeyHash(hash);
      stale?.deleteKeyHash(hash);
    },
    clear() {
      cache?.clear();
      stale?.clear();
    },
  };
}
