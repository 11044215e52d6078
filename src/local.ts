// keyguard/server: the former name of keyguard/server, kept so that existing imports keep working,
// with the storage names of 0.2 as deprecated aliases. Re-exports only. New code imports keyguard/server.
export * from "./server";
import { memoryStorage, postgresStorage, sqliteStorage } from "./server";
import type { PostgresStorageOptions, SqliteStorage, SqliteStorageOptions, Storage, StorageTx } from "./server";

/** @deprecated The former name of `memoryStorage` (0.2): import `memoryStorage` from `keyguard/server`. */
export const memoryStore = memoryStorage;
/** @deprecated The former name of `sqliteStorage` (0.2): import `sqliteStorage` from `keyguard/server`. */
export const sqliteStore = sqliteStorage;
/** @deprecated The former name of `postgresStorage` (0.2): import `postgresStorage` from `keyguard/server`. */
export const postgresStore = postgresStorage;
/** @deprecated The former name of `Storage` (0.2). */
export type Store = Storage;
/** @deprecated The former name of `StorageTx` (0.2). */
export type StoreTx = StorageTx;
/** @deprecated The former name of `SqliteStorage` (0.2). */
export type SqliteStore = SqliteStorage;
/** @deprecated The former name of `SqliteStorageOptions` (0.2). */
export type SqliteStoreOptions = SqliteStorageOptions;
/** @deprecated The former name of `PostgresStorageOptions` (0.2). */
export type PostgresStoreOptions = PostgresStorageOptions;
