// keyguard/web: API-key authentication for a standard `Request` (Next.js, Bun.serve, Deno.serve,
// Cloudflare Workers), on Web Crypto and fetch. Re-exports only; loads no node: module.

export {
  webApiKeyAuth,
  problemResponse,
  getApiKey,
  requirePermissions,
  requireAnyPermission,
  requireRoles,
  requireKey,
} from "./adapters/web";
export type { WebApiKeyAuth, WebApiKeyAuthOptions, WebAuthResult, WebGuard } from "./adapters/web";
export type { AuthOptions, CacheOptions, PerRequest, VerifyRatelimit } from "./middleware/auth-options";
export type { RequireKeyOptions } from "./middleware/guard-checks";
export type { VerifiedKey } from "./middleware/augment";
export type { AuthDecision, DecisionHandler, DecisionSource } from "./middleware/on-decision";
export { memoryStore } from "./middleware/cache-store";
export type { Store, MemoryStore, MemoryStoreOptions } from "./middleware/cache-store";
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
export { webKeyHash } from "./protocol/key-hash-web";
export type { Logger, LogFields } from "./logger";
export { silentLogger, defaultLogger } from "./logger";
