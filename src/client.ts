// keyguard/client: the typed client for the key service's v2 operations.
// Re-exports only.

export type * from "./protocol/types";
export { createClient } from "./client/client";
export type {
  KeyServiceClient,
  PortalSessionClient,
  WithMeta,
  ResultOf,
  Method,
  ListMethod,
  ListAll,
  Page,
  ListAllOptions,
  EnsurePermissionInput,
  CreateKeyInput,
} from "./client/assemble";
export type { ClientOptions, ClientTlsOptions, RetryOptions, CallOptions } from "./client/options";
export type { TelemetryOptions } from "./client/telemetry";
export {
  KeyServiceError,
  KeyServiceHttpError,
  KeyServiceNetworkError,
  KeyServiceTimeoutError,
  KeyServiceResponseError,
  KeyServiceConfigError,
  KEY_SERVICE_ERROR_CODES,
  isKeyServiceError,
} from "./client/errors";
export type { TimeoutScope, AnyKeyServiceError, KeyServiceErrorCode } from "./client/errors";
export { parseRetryAfter, retryDelay, DEFAULT_RETRY } from "./client/retry";
export type { RetryPolicy } from "./client/retry";
export type { Logger, LogFields } from "./logger";
export { silentLogger, defaultLogger } from "./logger";
