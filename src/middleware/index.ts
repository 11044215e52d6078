// The middleware's core, framework-free: the options, the decision from a request's method and
// headers to admit, pass or deny, the guards' checks, the denials and their problem+json answer,
// the cache store. This is its face: the adapters (src/adapters, Express included) and the entry
// points import the core from here only (keyguard/redis, a store backend, takes the store seam,
// cache-store.ts, alone). The core's own files never import it. Loads no node: module, so the Web
// adapters can use all of it.

export { parseAuthOptions } from "./auth-options";
export type {
  ApiKeyAuthConfig,
  ApiKeyAuthOptions,
  AuthOptions,
  CacheOptions,
  DeniedHandler,
  NextFunction,
  UnknownKeyLimitOptions,
} from "./auth-options";
export type { PerRequest, VerifyRatelimit } from "./request-shape";
export { createDecisionCore, frozenKey, isAdmitted, isThenable, PASS } from "./decide";
export type { Decision, DecisionRequest } from "./decide";
export type { VerifiedKey } from "./verified-key";
export { anyPermissionCheck, keyCheck, permissionsCheck, rolesCheck, runGuard } from "./guard-checks";
export type { GuardCheck, RequireKeyOptions } from "./guard-checks";
export { DEFAULT_DENIAL } from "./denials";
export type { DenialContext } from "./denials";
export {
  KeyguardError,
  MissingKeyError,
  InvalidRequestError,
  KeyRejectedError,
  InsufficientScopeError,
  ServiceUnavailableError,
  UnknownKeyLimitError,
  VerificationFailedError,
  ConfigError,
  ERROR_CODES,
  isKeyguardError,
} from "./errors";
export { problemAnswer, problemBody } from "./problem";
export type { ProblemBody } from "./problem";
export { DEFAULT_STATUS_POLICY, STATUS_PRESETS } from "./policy";
export type { StatusPolicy, StatusPolicyOverrides, StatusRule, BearerError, PolicyOutcome } from "./policy";
export type { AuthDecision, DecisionHandler, DecisionSource, MigrationStep } from "./on-decision";
export type { MigrateFromOptions } from "./lazy-migration";
export type { ShadowOptions, ShadowDisagreement, ShadowAnswer, ShadowField, ShadowHandler } from "./shadow";
export { memoryStore } from "./cache-store";
export type { Store, MemoryStore, MemoryStoreOptions, AnswerRef, Ticket, Lookup, StoreSettings, CounterState } from "./cache-store";
export { extractKey, removeHeaders, MAX_KEY_LENGTH } from "./extract-key";
export type { Extraction, ExtractOptions, KeySource } from "./extract-key";
export { rateLimitHeaders } from "./ratelimit-headers";
