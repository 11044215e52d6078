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
} from "./middleware";
export type {
  AuthOptions,
  CacheOptions,
  UnknownKeyLimitOptions,
  PerRequest,
  VerifyRatelimit,
  RequireKeyOptions,
  VerifiedKey,
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
  StatusPolicy,
  StatusPolicyOverrides,
  StatusRule,
  BearerError,
  PolicyOutcome,
  ProblemBody,
} from "./middleware";
export { webKeyHash } from "./protocol/key-hash-web";
export type { Logger, LogFields } from "./logger";
export { silentLogger, defaultLogger } from "./logger";
