// keyguard/hono: API-key authentication as Hono middleware, on any runtime Hono runs on.
// Re-exports only; loads no node: module.

export { apiKeyAuth, requirePermissions, requireAnyPermission, requireRoles, requireKey } from "./adapters/hono";
export type { ApiKeyEnv, HonoApiKeyAuth, HonoApiKeyAuthOptions } from "./adapters/hono";
export { memoryStore, STATUS_PRESETS, isKeyguardError, ERROR_CODES } from "./middleware";
export type { RequireKeyOptions, VerifiedKey, AuthDecision, DecisionHandler, DecisionSource } from "./middleware";
export { problemResponse } from "./adapters/web";
