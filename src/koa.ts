// keyguard/koa: API-key authentication as Koa middleware (`ctx.state.apiKey`). Re-exports only.

export { apiKeyAuth, requirePermissions, requireAnyPermission, requireRoles, requireKey } from "./adapters/koa";
export type { ApiKeyState, KoaApiKeyAuth, KoaApiKeyAuthOptions } from "./adapters/koa";
export { memoryStore, STATUS_PRESETS, isKeyguardError, ERROR_CODES } from "./middleware";
export type { RequireKeyOptions, VerifiedKey, AuthDecision, DecisionHandler, DecisionSource } from "./middleware";
