// keyguard: API-key authentication middleware for Express and Connect.
// Re-exports only; each concept lives in its own file.

export type { Logger, LogFields } from "./logger";
export { silentLogger, defaultLogger } from "./logger";
export type * from "./protocol/types";
export {
  parsePermissionQuery,
  evaluatePermissionQuery,
  PermissionQuerySyntaxError,
} from "./protocol/permission-query";
export type { PermissionQuery } from "./protocol/permission-query";
