// keyguard/nest: API-key authentication for NestJS, as guards and an exception filter. Re-exports only.

export {
  ApiKeyGuard,
  ApiKey,
  KeyguardExceptionFilter,
  KeyguardDeniedException,
  requirePermissions,
  requireAnyPermission,
  requireRoles,
  requireKey,
} from "./adapters/nest";
export type { NestApiKeyAuthOptions } from "./adapters/nest";
export type { RequireKeyOptions } from "./middleware/guard-checks";
export type { VerifiedKey } from "./middleware/augment";
export type { AuthDecision, DecisionHandler, DecisionSource } from "./middleware/on-decision";
export { memoryStore } from "./middleware/cache-store";
export { STATUS_PRESETS } from "./middleware/policy";
export { isKeyguardError, ERROR_CODES } from "./middleware/errors";
