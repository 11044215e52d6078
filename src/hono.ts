// keyguard/hono: API-key authentication as Hono middleware, on any runtime Hono runs on.
// Re-exports only; loads no node: module.

export { apiKeyAuth, requirePermissions, requireAnyPermission, requireRoles, requireKey } from "./adapters/hono";
export type { ApiKeyEnv, HonoApiKeyAuth, HonoApiKeyAuthOptions } from "./adapters/hono";
export type { RequireKeyOptions } from "./middleware/guard-checks";
export type { VerifiedKey } from "./middleware/augment";
export type { AuthDecision, DecisionHandler, DecisionSource } from "./middleware/on-decision";
export { memoryStore } from "./middleware/cache-store";
export { STATUS_PRESETS } from "./middleware/policy";
export { problemResponse } from "./adapters/web";
export { isKeyguardError, ERROR_CODES } from "./middleware/errors";
