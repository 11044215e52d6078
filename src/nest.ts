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
export { memoryStore, STATUS_PRESETS, isKeyguardError, ERROR_CODES } from "./middleware";
export type { RequireKeyOptions, VerifiedKey, AuthDecision, DecisionHandler, DecisionSource } from "./middleware";
