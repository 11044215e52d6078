// keyguard/fastify: API-key authentication as a Fastify plugin (`request.apiKey`, per-route
// `config.keyguard`, guards as preHandler hooks). Re-exports only.

export { keyguard, requirePermissions, requireAnyPermission, requireRoles, requireKey } from "./adapters/fastify";
export type { FastifyApiKeyAuthOptions, KeyguardInvalidation } from "./adapters/fastify";
export { memoryStore, STATUS_PRESETS, isKeyguardError, ERROR_CODES } from "./middleware";
export type { RequireKeyOptions, VerifiedKey, AuthDecision, DecisionHandler, DecisionSource } from "./middleware";
