// keyguard/fastify: API-key authentication as a Fastify plugin (`request.apiKey`, per-route
// `config.keyguard`, guards as preHandler hooks). Re-exports only.

export { keyguard, requirePermissions, requireAnyPermission, requireRoles, requireKey } from "./adapters/fastify";
export type { FastifyApiKeyAuthOptions, KeyguardInvalidation } from "./adapters/fastify";
export type { RequireKeyOptions } from "./middleware/guard-checks";
export type { VerifiedKey } from "./middleware/augment";
export type { AuthDecision, DecisionHandler, DecisionSource } from "./middleware/on-decision";
export { memoryStore } from "./middleware/cache-store";
export { STATUS_PRESETS } from "./middleware/policy";
export { isKeyguardError, ERROR_CODES } from "./middleware/errors";
