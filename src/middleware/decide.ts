// The decision core every adapter shares: from a request's method and headers (and its connection,
// where there is one) to admit (the verified key), pass (optional auth, a CORS preflight, failing
// open) or deny (a KeyguardError: status, headers, problem body). Per request the key is extracted
// once and hashed once; a kept answer decides synchronously (the hot path, no promise, no
// allocation), otherwise a promise does. Adapters only translate the decision for their framework.

import type { VerifyKeyResult } from "../protocol/types";
import type { InvalidationMessage } from "../protocol/invalidation-message";
import { withLists, type VerifiedKey } from "./verified-key";
import type { ApiKeyAuthConfig } from "./auth-options";
import { failsChecksum } from "../protocol/key-checksum";
import { ConfigError } from "../config-error";
import { optionChecks } from "../option-checks";
import {
  invalidChecksumDenial,
  invalidRequestDenial,
  missingKeyDenial,
  rejectedKeyDenial,
  serviceUnavailableDenial,
  unknownKeyLimitDenial,
  verificationFailedDenial,
  type DenialContext,
} from "./denials";
import { ERROR_CODES, type KeyguardError } from "./errors";
import {
  bearerMemo,
  checkCustomKey,
  extractKeyRemembering,
  isPreflight,
  type Extraction,
  type KeySource,
  type RequestHeaders,
} from "./extract-key";
import { createDecisionReporter, type DecisionSource, type MigrationStep } from "./on-decision";
import { rateLimitHeaders } from "./ratelimit-headers";
import { rotationHeaders } from "./rotation-headers";
import { ShapeError, type ResolvedShape } from "./request-shape";
import { createUnknownKeyLimit } from "./unknown-key-limit";
import { classifyServiceFailure, createVerifier, passes, type VerifyOutcome } from "./verify";
import { createLazyMigration } from "./lazy-migration";
import { createShadow } from "./shadow";

/** What the core reads of a request: its method, its headers and, where there is one, its connection. */
export interface DecisionRequest extends RequestHeaders {
  readonly method?: string | undefined;
  /** The connection (Node's socket): a keep-alive client's key is hashed once per connection. */
  readonly socket?: unknown;
}

/** Let the request go on without a verified key: optional auth, a CORS preflight, or failing open. */
export const PASS = "pass";

/** The verified key (admit), {@link PASS}, or the denial to answer with. */
export type Decision = VerifiedKey | typeof PASS | KeyguardError;

/** Whether a decision (or a guard's verdict) came as a promise rather than now. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}

/** Whether a decision admits a verified key. */
export const isAdmitted = (decision: Decision): decision is VerifiedKey => decision !== PASS && "valid" in decision;

/** The verified key as adapters without a responder hand it to the app: every own property of the result (`requestId` included), frozen. */
export const frozenKey = (result: Readonly<VerifyKeyResult>): VerifiedKey =>
  Object.freeze(Object.defineProperties({}, Object.getOwnPropertyDescriptors(result))) as VerifiedKey;

/** What an adapter supplies: how its runtime hashes, presents the key and removes headers. */
export interface CoreSettings<Req> {
  /**
   * The key's SHA-256 (base64) that names its kept answers: synchronous on Node (reused per
   * connection), a promise with Web Crypto.
   */
  hash(view: DecisionRequest, key: string): string | Promise<string>;
  /** The verified key as the app sees it, made once per kept answer (frozen). */
  present(result: Readonly<VerifyKeyResult>): VerifiedKey;
  /** Removes the headers that carried the key (`hideCredentials`), named in lower case. */
  hide(req: Req, view: DecisionRequest, names: readonly string[]): void;
  /**
   * The request's client address as the framework sees it (after its own proxy setting), for
   * `unknownKeyLimit`; absent where the adapter sees none (the Web adapters).
   */
  address?(req: Req, view: DecisionRequest): unknown;
}

/** The longest client address counted: longer ones (from an app's own `address`) are left uncounted. */
const MAX_ADDRESS_LENGTH = 256;

export interface DecisionCore<Req> {
  /** The decision for a request: now (a kept answer, no key, bad credentials), or a promise of one. */
  decide(req: Req, view: DecisionRequest): Decision | Promise<Decision>;
  /** The RateLimit (and, with rotationHeaders, Deprecation and Sunset) headers of an admitted request's response; undefined when there are none. */
  admitHeaders(key: VerifiedKey): Record<string, string> | undefined;
  /** Forgets answers (kept, stale, in flight) here and, through the store, on every instance. */
  invalidate(message: InvalidationMessage): Promise<void>;
  /** Policy, realm and key hint: what guards after this adapter answer with. */
  readonly denial: DenialContext;
}

const NOT_FOUND: Readonly<VerifyKeyResult> = Object.freeze({ valid: false, code: "NOT_FOUND" });

export function createDecisionCore<Req, Res = unknown>(config: ApiKeyAuthConfig<Req, Res>, settings: CoreSettings<Req>): DecisionCore<Req> {
  const verifier = createVerifier(config);
  const ctx = config.denial;
  const rotation = config.rotationHeaders;
  const { fixedShape, getKey, rejectBadChecksums } = config;
  const { hash, present, hide } = settings;
  // migrateFrom: undefined when off. It imports by the key's hash, so the hash is then always made.
  const migration =
    config.migrateFrom === undefined
      ? undefined
      : createLazyMigration({ ...config.migrateFrom, forget: (keyHash) => verifier.invalidate({ v: 1, kind: "key", keyHash }) });
  const shadow = config.shadow === undefined ? undefined : createShadow(config.shadow);
  const keepsAnswers = config.store !== undefined || config.staleIfError > 0 || migration !== undefined;
  // One presented key per kept answer.
  const views = new WeakMap<object, VerifiedKey>();
  const viewOf = (result: Readonly<VerifyKeyResult>): VerifiedKey => {
    let view = views.get(result);
    if (view === undefined) views.set(result, (view = present(withLists(result))));
    return view;
  };
  // onDecision: undefined when not configured, so each report below is one skipped branch.
  const observer = config.onDecision === undefined ? undefined : createDecisionReporter(config.onDecision, config.logger);
  const denied = <E extends KeyguardError>(err: E, req: Req, source: DecisionSource, serviceMs?: number, step?: MigrationStep): E => {
    observer?.denied(err, req, source, serviceMs, step);
    return err;
  };
  // unknownKeyLimit: undefined when off.
  const limit = config.unknownKeyLimit;
  const limiter = limit === undefined ? undefined : createUnknownKeyLimit(limit, limit.store);
  const ownAddress = limit?.address;
  const frameworkAddress = settings.address;
  if (limit !== undefined && ownAddress === undefined && frameworkAddress === undefined) {
    optionChecks("apiKeyAuth", ConfigError).fail(
      "unknownKeyLimit.address",
      "this adapter sees no client address: pass unknownKeyLimit.address, (req) => the client's address (e.g. from your platform's connection info).",
    );
  }
  /** The request's client address for unknownKeyLimit; undefined leaves the request uncounted. */
  const addressOf = (req: Req, view: DecisionRequest): string | undefined => {
    const a = ownAddress !== undefined ? ownAddress(req) : frameworkAddress!(req, view);
    return typeof a === "string" && a !== "" && a.length <= MAX_ADDRESS_LENGTH ? a : undefined;
  };
  /** A malformed key's denial, counted against its address: 429 instead once the address is over the limit. */
  const counted = (err: KeyguardError, req: Req, view: DecisionRequest): Decision | Promise<Decision> => {
    const address = limiter === undefined ? undefined : addressOf(req, view);
    if (address === undefined) return denied(err, req, "none");
    const here = limiter!.blockedHere(address);
    if (here !== undefined) return denied(unknownKeyLimitDenial(here), req, "none");
    return limiter!.count(address).then((over) => denied(over === undefined ? err : unknownKeyLimitDenial(over), req, "none"));
  };
  // The last Authorization value that gave a key, and the last key the checksum passed (see
  // BearerMemo): the same key string again is then told by identity, without parsing or checking it.
  const bearer = bearerMemo();
  let checksumPassed = "";
  const headerNames = (from: readonly KeySource[]) =>
    from.map((source) => (source === "authorization" ? "authorization" : config.extract.header!));

  function decide(req: Req, view: DecisionRequest): Decision | Promise<Decision> {
    // A preflight carries no credentials; one that does is authenticated like any request.
    if (getKey === undefined) {
      const found = extractKeyRemembering(view, config.extract, bearer);
      // Only a request without a key can be a preflight (isPreflight also wants neither header).
      if (found.kind === "none" && config.allowPreflight && isPreflight(view, config.extract.header)) return PASS;
      return decideFor(req, view, found, false);
    }
    const preflight = config.allowPreflight && isPreflight(view, config.extract.header);
    return Promise.resolve(getKey(req)).then((value) => decideFor(req, view, checkCustomKey(value), preflight));
  }

  function decideFor(req: Req, view: DecisionRequest, found: Extraction, preflight: boolean): Decision | Promise<Decision> {
    if (found.kind === "none") {
      if (preflight) return PASS;
      if (!config.optional) return denied(missingKeyDenial(ctx), req, "none");
      observer?.passed(ERROR_CODES.missingKey, req, "none");
      return PASS;
    }
    if (found.kind === "malformed") return counted(invalidRequestDenial(ctx, found.reason), req, view);
    if (config.hideCredentials) hide(req, view, headerNames(found.from));
    if (found.kind === "oversize") return counted(rejectedKeyDenial(ctx, NOT_FOUND, { now: Date.now() }), req, view);
    // A key of the checksummed format that fails its checksum: no cache lookup, no call.
    if (rejectBadChecksums && found.key !== checksumPassed) {
      if (failsChecksum(found.key)) return counted(invalidChecksumDenial(ctx), req, view);
      checksumPassed = found.key;
    }
    const keyHash = keepsAnswers ? hash(view, found.key) : "";
    if (typeof keyHash !== "string") return keyHash.then((h) => fromKept(req, view, found.key, h));
    return fromKept(req, view, found.key, keyHash);
  }

  function fromKept(req: Req, view: DecisionRequest, key: string, keyHash: string): Decision | Promise<Decision> {
    if (fixedShape !== undefined) {
      const kept = verifier.peek(keyHash, fixedShape);
      if (kept !== undefined && passes(kept)) {
        if (observer !== undefined) observer.cached(kept, req);
        return viewOf(kept);
      }
    }
    return verify(req, view, key, keyHash);
  }

  async function verify(req: Req, view: DecisionRequest, key: string, keyHash: string): Promise<Decision> {
    let shape: ResolvedShape;
    try {
      shape = fixedShape ?? (await config.resolveShape(req));
    } catch (e) {
      if (!(e instanceof ShapeError)) throw e;
      verifier.reportMisconfiguration(e.message);
      return denied(verificationFailedDenial(e.message, e), req, "none");
    }
    // Asked only when no kept answer decides: a key the cache holds as valid passes a blocked address.
    const address = limiter === undefined ? undefined : addressOf(req, view);
    const gate = address === undefined ? undefined : () => limiter!.blocked(address);
    let outcome = await verifier.verify(key, keyHash, shape, gate);
    let step: MigrationStep | undefined;
    if (
      migration !== undefined &&
      outcome.kind === "result" &&
      outcome.result.code === "NOT_FOUND" &&
      outcome.source !== "stale" &&
      migration.applies(keyHash, Date.now())
    ) {
      [outcome, step] = await migrated(key, keyHash, shape, gate);
    }
    if (outcome.kind === "blocked") return denied(unknownKeyLimitDenial(outcome.retryAfter), req, "none");
    const { serviceMs } = outcome;
    if (outcome.kind === "result") {
      const { result, source } = outcome;
      if (shadow !== undefined && source === "service") shadow.observe({ key, ...shape.body }, result, req);
      // Only `valid: true` with the code VALID passes; `valid: true` with another code is that denial.
      if (passes(result)) {
        if (source === "cache") observer?.cached(result, req);
        else observer?.admitted(result, req, source, serviceMs, step);
        return viewOf(result);
      }
      if (address !== undefined && result.code === "NOT_FOUND") await limiter!.count(address);
      const rejection = rejectedKeyDenial(ctx, result, {
        now: Date.now(),
        ...(shape.body.permissions === undefined ? {} : { query: shape.body.permissions, scope: shape.scope }),
        ...(outcome.requestId === undefined ? {} : { requestId: outcome.requestId }),
      });
      return denied(rejection, req, source, serviceMs, step);
    }
    const { failure } = outcome;
    if (failure.kind === "misconfigured")
      return denied(verificationFailedDenial(failure.reason, failure.cause, failure.requestId), req, "service", serviceMs, step);
    if (config.onServiceError === "open" && failure.mayFailOpen) {
      observer?.passed(ERROR_CODES.serviceUnavailable, req, "service", serviceMs, step);
      return PASS;
    }
    return denied(serviceUnavailableDenial(failure.retryAfter, failure.cause, failure.requestId), req, "service", serviceMs, step);
  }

  /**
   * A key keyguard's service does not know, met while `migrateFrom` is on: imported from the old
   * service (once per key in this process) and verified here; or answered as the old service
   * answered (a refusal, or, when the import failed, its own verification of this request); or, the
   * old service unreachable, a service failure.
   */
  async function migrated(
    key: string,
    keyHash: string,
    shape: ResolvedShape,
    gate: Parameters<typeof verifier.verify>[3],
  ): Promise<[VerifyOutcome, MigrationStep]> {
    const started = performance.now();
    const imported = await migration!.importKey(key, keyHash);
    const fromOld = (result: Readonly<VerifyKeyResult>): VerifyOutcome => {
      const id = (result as { requestId?: unknown }).requestId;
      return {
        kind: "result",
        result,
        requestId: typeof id === "string" ? id : undefined,
        source: "service",
        serviceMs: performance.now() - started,
      };
    };
    const failed = (error: unknown): VerifyOutcome => ({
      kind: "failure",
      failure: classifyServiceFailure(error),
      serviceMs: performance.now() - started,
    });
    switch (imported.kind) {
      case "imported":
      case "held":
        return [await verifier.verify(key, keyHash, shape, gate), imported.kind];
      case "refused":
        return [fromOld(imported.result), "refused"];
      case "old-failed":
        return [failed(imported.error), "unreachable"];
      case "import-failed":
        // Not imported: this request is verified (and charged) at the old service, as before the move.
        try {
          return [fromOld(await migration!.verifyAtOld({ key, ...shape.body })), "import-failed"];
        } catch (e) {
          return [failed(e), "import-failed"];
        }
    }
  }

  return {
    decide,
    admitHeaders(key) {
      const limits = ctx.rateLimitHeaders && key.ratelimits !== undefined && key.ratelimits.length > 0;
      if (!limits && (rotation === undefined || key.expires === undefined)) return undefined;
      const now = Date.now();
      const ending = rotation === undefined ? undefined : rotationHeaders(key.expires, rotation, now);
      if (!limits) return ending;
      const headers = rateLimitHeaders(key.ratelimits, now);
      return ending === undefined ? headers : { ...headers, ...ending };
    },
    invalidate: (message) => verifier.invalidate(message),
    denial: ctx,
  };
}
