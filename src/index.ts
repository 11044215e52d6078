// keyguard: API-key authentication middleware for Express and Connect.
// Re-exports only: the Express adapter (src/adapters/express) and the middleware's core (src/middleware).

export type { Logger, LogFields } from "./logger";
export { silentLogger, defaultLogger } from "./logger";
export type * from "./protocol/types";
export { parsePermissionQuery, evaluatePermissionQuery, PermissionQuerySyntaxError } from "./protocol/permission-query";
export type { PermissionQuery } from "./protocol/permission-query";
export { INVALIDATION_CHANNEL_SUFFIX } from "./protocol/invalidation";
export type { InvalidationMessage, InvalidationPublisher } from "./protocol/invalidation";
export { keyHash } from "./protocol/key-hash";
export { CHECKSUMMED_KEY_PATTERN, claimsChecksum, failsChecksum } from "./protocol/key-checksum";
export type { TelemetryOptions } from "./client/telemetry";

// The Express/Connect adapter: apiKeyAuth(), req.apiKey, the guards.
export { apiKeyAuth } from "./adapters/express/api-key-auth";
export type { ApiKeyAuthHandler } from "./adapters/express/api-key-auth";
export { getApiKey } from "./adapters/express/request-key";
export { requirePermissions, requireAnyPermission, requireRoles, requireKey } from "./adapters/express/guards";
export type { Guard } from "./adapters/express/guards";

// The core: the options, the status policy, the errors and their problem+json body, the cache store,
// the key's extraction and the rate-limit headers.
export {
  memoryStore,
  DEFAULT_STATUS_POLICY,
  STATUS_PRESETS,
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
  problemBody,
  extractKey,
  MAX_KEY_LENGTH,
  rateLimitHeaders,
} from "./middleware";
export type {
  ApiKeyAuthOptions,
  CacheOptions,
  UnknownKeyLimitOptions,
  DeniedHandler,
  NextFunction,
  PerRequest,
  VerifyRatelimit,
  AuthDecision,
  DecisionHandler,
  DecisionSource,
  MigrateFromOptions,
  MigrationStep,
  ShadowOptions,
  ShadowDisagreement,
  ShadowAnswer,
  ShadowField,
  ShadowHandler,
  Store,
  MemoryStore,
  MemoryStoreOptions,
  AnswerRef,
  Ticket,
  Lookup,
  StoreSettings,
  CounterState,
  VerifiedKey,
  RequireKeyOptions,
  StatusPolicy,
  StatusPolicyOverrides,
  StatusRule,
  BearerError,
  PolicyOutcome,
  ProblemBody,
  Extraction,
  ExtractOptions,
  KeySource,
} from "./middleware";
