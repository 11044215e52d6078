// keyguard/server: the key server, an implementation of the v2 key-service API that runs in-process
// (createLocalKeyService) or listening (startLocalKeyService, `keyguard serve`). Re-exports only.

export type * from "./protocol/types";
export { createLocalKeyService } from "./server/factory";
export type { LocalKeyServiceInstance } from "./server/factory";
export type { LocalServiceApp } from "./server/http/app";
export { startLocalKeyService } from "./server/listen";
export type { RunningLocalKeyService } from "./server/listen";
export type { CreateApiInput, CreateKeyMigrationInput, LocalKeyService, UnavailableOptions } from "./server/service";
export { LocalServiceConfigError } from "./server/errors";
export { LocalServiceArgumentError } from "./server/errors";
export type { LocalKeyServiceOptions, MetricsOptions, SecretScanningOptions, TlsOptions } from "./server/options";
export { memoryStorage } from "./server/storage/memory/store";
export { sqliteStorage } from "./server/storage/sqlite/store";
export type { SqliteStorage, SqliteStorageOptions } from "./server/storage/sqlite/store";
export { postgresStorage } from "./server/storage/postgres/store";
export type { PostgresStorageOptions } from "./server/storage/postgres/store";
export { exportState, importState } from "./server/storage/state-file";
export { StoreUnavailableError } from "./server/errors";
export type { AuditQuery, MetaReadOptions, Storage, StorageTx, TransactionOptions } from "./server/storage/seam";
export type { LimitCheck, LimitState } from "./server/domain/sliding-window";
export type { CreditsCrossings, DueRefill, SpendOutcome } from "./server/domain/credits";
export type {
  ApiRecord,
  AuditEvent,
  CreditsRecord,
  ExpiringKey,
  IdentityRecord,
  IndexedFields,
  KeyMigrationAlgorithm,
  KeyMigrationRecord,
  KeyRecord,
  LeakReportRecord,
  LeakResponse,
  LocalState,
  PermissionRecord,
  RatelimitNamespaceRecord,
  RatelimitOverrideRecord,
  RatelimitRecord,
  RoleRecord,
  RootKeyRecord,
  TableName,
  Tables,
  VerificationEvent,
  WebhookEndpointRecord,
  WebhookMessage,
  WorkspaceRecord,
} from "./server/records";
export type {
  AnalyticsPlan,
  AnalyticsScope,
  Column as AnalyticsColumn,
  Condition as AnalyticsCondition,
  Scalar as AnalyticsScalar,
} from "./server/analytics/plan";
export { ALL_ROOT_PERMISSIONS } from "./protocol/contract/root-permissions";
