// keyguard/koa: API-key authentication as Koa middleware (`ctx.state.apiKey`). Re-exports only.

export { apiKeyAuth, requirePermissions, requireAnyPermission, requireRoles, requireKey } from "./adapters/koa";
export type { ApiKeyState, KoaApiKeyAuth, KoaApiKeyAuthOptions } from "./adapters/koa";
export type { RequireKeyOptions } from "./middleware/guard-checks";
export type { VerifiedKey } from "./middleware/augment";
export type { AuthDecision, DecisionHandler, DecisionSource } from "./middleware/on-decision";
export { memoryStore } from "./middleware/cache-store";
export { STATUS_PRESETS } from "./middleware/policy";
export { isKeyguardError, ERROR_CODES } from "./middleware/errors";
