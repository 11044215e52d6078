// The verification step: the cache, the call to the key service with its time limits, the
// `staleIfError` fallback, and the (throttled) logs of failures. Knows nothing of HTTP requests.

import type { KeyServiceClient, RetryOptions } from "../client";
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

export function createVerifier(settings: VerifierSettings): Verifier {
  const cache = settings.cache === undefined ? undefined : createVerificationCache(settings.cache);
  const stale = settings.staleIfError > 0 ? createStaleStore(settings.staleIfError, settings.staleMax) : undefined;
  const throttle = createLogThrottle();
  const { logger } = settings;

  function report(failure: ServiceFailure, servedStale: boolean): void {
    const kind = servedStale ? "stale" : failure.kind;
    const decision = throttle(kind);
    if (!decision.log) return;
    const fields = { ...failure.log, suppressedSinceLastLog: decision.suppressed };
    if (failure.kind === "misconfigured") {
      logger.error(fields, `apiKeyAuth: cannot verify API keys: ${failure.reason}; answering 500`);
    } else if (servedStale) {
      logger.warn(fields, "apiKeyAuth: key service unavailable; serving earlier answers (staleIfError)");
    } else if (settings.onServiceError === "open") {
      logger.warn(fields, "apiKeyAuth: key service unavailable; letting requests through unauthenticated (onServiceError: \"open\")");
    } else {
      logger.warn(fields, "apiKeyAuth: key service unavailable; answering 503");
    }
  }

  async function callService(key: string, shape: ResolvedShape): Promise<Readonly<VerifyKeyResult>> {
    const result: unknown = await settings.client.keys.verifyKey({ key, ...shape.body }, { ...settings.call });
    if (typeof result !== "object" || result === null || typeof (result as VerifyKeyResult).valid !== "boolean") {
      throw Object.assign(new Error("verifyKey returned no verification result"), { code: "KEY_SERVICE_INVALID_RESPONSE" });
    }
    return deepFreeze(result as VerifyKeyResult);
  }

  return {
    async verify(key, shape) {
      const keyed = (cache !== undefined || stale !== undefined) && shape.cacheable;
      const cacheKey = keyed ? cacheKeyFor(hashKey(key), shape.shapeKey) : "";
      const run = async () => {
        const result = await callService(key, shape);
        if (stale !== undefined && keyed && result.valid && result.code === "VALID" && isReusable(result)) {
          stale.remember(cacheKey, result);
        }
        return result;
      };
      try {
        const result = cache !== undefined && keyed ? await cache.verify(cacheKey, run) : await run();
        return { kind: "result", result, requestId: requestIdOf(result), stale: false };
      } catch (e) {
        const failure = classifyServiceFailure(e);
        const kept = failure.kind === "unavailable" && stale !== undefined && keyed ? stale.recall(cacheKey) : undefined;
        report(failure, kept !== undefined);
        if (kept !== undefined) return { kind: "result", result: kept.result, requestId: requestIdOf(kept.result), stale: true };
        return { kind: "failure", failure };
      }
    },
    peek(key, shape) {
      if (cache === undefined || !shape.cacheable) return undefined;
      return cache.peek(cacheKeyFor(hashKey(key), shape.shapeKey));
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
