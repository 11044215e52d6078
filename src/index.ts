// keyguard: API-key authentication middleware for Express and Connect.
// Re-exports only; each concept lives in its own file.

export type { Logger, LogFields } from "./logger";
export { silentLogger, defaultLogger } from "./logger";
export type * from "./protocol/types";
export { parsePermissionQuery, evaluatePermissionQuery, PermissionQuerySyntaxError } from "./protocol/permission-query";
export type { PermissionQuery } from "./protocol/permission-query";

// The middleware: apiKeyAuth(), guards, the status policy, errors.
export { apiKeyAuth } from "./middleware/api-key-auth";
export type { ApiKeyAuthHandler } from "./middleware/api-key-auth";
export type { ApiKeyAuthOptions, CacheOptions, DeniedHandler, NextFunction, PerRequest, VerifyRatelimit } from "./middleware/options";
export type { AuthDecision, DecisionHandler, DecisionSource } from "./middleware/on-decision";
export type { TelemetryOptions } from "./client/telemetry";
export { memoryStore } from "./middleware/cache-store";
export type { Store, MemoryStore, MemoryStoreOptions, AnswerRef, Ticket, Lookup, StoreSettings } from "./middleware/cache-store";
export { INVALIDATION_CHANNEL_SUFFIX } from "./protocol/invalidation";
export { keyHash } from "./protocol/key-hash";
export { CHECKSUMMED_KEY_PATTERN, claimsChecksum, failsChecksum } from "./protocol/key-checksum";
export type { InvalidationMessage, InvalidationPublisher } from "./protocol/invalidation";
export { getApiKey } from "./middleware/augment";
export type { VerifiedKey } from "./middleware/augment";
export { requirePermissions, requireAnyPermission, requireRoles, requireKey } from "./middleware/guards";
export type { Guard, RequireKeyOptions } from "./middleware/guards";
export { DEFAULT_STATUS_POLICY, STATUS_PRESETS } from "./middleware/policy";
export type { StatusPolicy, StatusPolicyOverrides, StatusRule, BearerError, PolicyOutcome } from "./middleware/policy";
export {
  KeyguardError,
  MissingKeyError,
  InvalidRequestError,
  KeyRejectedError,
  InsufficientScopeError,
  ServiceUnavailableError,
  VerificationFailedError,
  ConfigError,
  ERROR_CODES,
  isKeyguardError,
} from "./middleware/errors";
export { problemBody } from "./middleware/respond";
export type { ProblemBody } from "./middleware/respond";
export { extractKey, MAX_KEY_LENGTH } from "./middleware/extract-key";
export type { Extraction, ExtractOptions, KeySource } from "./middleware/extract-key";
export { rateLimitHeaders } from "./middleware/ratelimit-headers";
