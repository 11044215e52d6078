// keyguard/local: the local key service, an in-process implementation of the v2 API.
// Re-exports only.

export type * from "./protocol/types";
export { createLocalKeyService } from "./local/factory";
export type { LocalKeyServiceInstance } from "./local/factory";
export type { LocalServiceApp } from "./local/app";
export { startLocalKeyService } from "./local/server";
export type { RunningLocalKeyService } from "./local/server";
export type { CreateApiInput, CreateKeyMigrationInput, LocalKeyService, UnavailableOptions } from "./local/service";
export { LocalServiceConfigError } from "./local/options";
export { LocalServiceArgumentError } from "./local/argument-error";
export type { LocalKeyServiceOptions, MetricsOptions } from "./local/options";
export { memoryStore } from "./local/stores/memory/store";
export { sqliteStore } from "./local/stores/sqlite/store";
export type { SqliteStore, SqliteStoreOptions } from "./local/stores/sqlite/store";
export { postgresStore } from "./local/stores/postgres/store";
export type { PostgresStoreOptions } from "./local/stores/postgres/store";
export { exportState, importState } from "./local/state-file";
export { StoreUnavailableError } from "./local/storage";
export type {
  ApiRecord,
  CreditsRecord,
  DueRefill,
  IdentityRecord,
  IndexedFields,
  KeyMigrationAlgorithm,
  KeyMigrationRecord,
  KeyRecord,
  LimitCheck,
  LimitState,
  LocalState,
  PermissionRecord,
  RatelimitNamespaceRecord,
  RatelimitOverrideRecord,
  RatelimitRecord,
  RoleRecord,
  RootKeyRecord,
  SpendOutcome,
  Store,
  StoreTx,
  TableName,
  Tables,
  VerificationEvent,
  WorkspaceRecord,
} from "./local/storage";
export type { AnalyticsPlan, AnalyticsScope, Column as AnalyticsColumn, Condition as AnalyticsCondition, Scalar as AnalyticsScalar } from "./local/analytics/plan";
export { ALL_ROOT_PERMISSIONS } from "./local/auth";
