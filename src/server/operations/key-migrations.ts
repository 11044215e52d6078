// Key migrations: importing keys hashed by another system (`keys.migrateKeys`) and verifying
// them with their original plaintext. A migration is a record of the workspace naming the hash
// algorithm; production's support staff create them, the local service's admin surface
// (`createKeyMigration`) does here. They live in one meta value of the store.
import { createHash } from "node:crypto";
import { ServiceError } from "../errors";
import { keyHash } from "../../protocol/key-hash";
import { KEY_MIGRATIONS_META } from "../storage/state-file";
import type { StorageTx } from "../storage/seam";
import type { KeyMigrationAlgorithm, KeyMigrationRecord, KeyRecord } from "../records";

export const KEY_MIGRATION_ALGORITHMS: readonly KeyMigrationAlgorithm[] = Object.freeze(["sha256", "github.com/seamapi/prefixed-api-key"]);

export async function readMigrations(tx: StorageTx): Promise<Record<string, KeyMigrationRecord>> {
  const raw = await tx.getMeta(KEY_MIGRATIONS_META);
  return raw === undefined ? {} : (JSON.parse(raw) as Record<string, KeyMigrationRecord>);
}

/** Registers a migration (inside a transaction: read, add, write). */
export async function addMigration(tx: StorageTx, record: KeyMigrationRecord): Promise<void> {
  const all = await readMigrations(tx);
  all[record.id] = record;
  await tx.setMeta(KEY_MIGRATIONS_META, JSON.stringify(all));
}

/** A migration of the workspace. */
export async function findMigration(tx: StorageTx, workspaceId: string, id: string): Promise<KeyMigrationRecord | undefined> {
  const all = await readMigrations(tx);
  const found = Object.hasOwn(all, id) ? all[id] : undefined;
  return found?.workspaceId === workspaceId ? found : undefined;
}

export function migrationNotFound(): ServiceError {
  return new ServiceError("data.migration_not_found", "The requested Migration does not exist or has been deleted.");
}

/** A `github.com/seamapi/prefixed-api-key` key: `<prefix>_<shortToken>_<longToken>` (the prefix may hold `_`). */
function splitPrefixedKey(key: string): { prefix: string; shortToken: string; longToken: string } | undefined {
  const parts = key.split("_");
  if (parts.length < 3) return undefined;
  const longToken = parts.pop()!;
  const shortToken = parts.pop()!;
  return { prefix: parts.join("_"), shortToken, longToken };
}

/**
 * A key imported under migration `migrationId` (of the workspace) that `key` opens, rehashed to the
 * service's own hash on this first verification (so it verifies directly from now on); undefined
 * when there is none. A `sha256` migration's keys already carry the service's hash: nothing to find.
 */
export async function verifyMigratedKey(
  tx: StorageTx,
  workspaceId: string,
  migrationId: string,
  key: string,
  /** Whether the caller may verify this key: only then is it rehashed. */
  allowed: (found: KeyRecord) => boolean,
): Promise<KeyRecord | undefined> {
  const migration = await findMigration(tx, workspaceId, migrationId);
  if (migration?.algorithm !== "github.com/seamapi/prefixed-api-key") return undefined;
  const parts = splitPrefixedKey(key);
  if (!parts) throw new ServiceError("authentication.malformed", "Invalid key format");
  const sourceHash = createHash("sha256").update(parts.longToken, "utf8").digest("hex");
  const found = await tx.keyByHash(sourceHash);
  if (found?.workspaceId !== workspaceId || found.pendingMigrationId !== migrationId || !allowed(found)) return undefined;
  const { pendingMigrationId: _, ...migrated } = found;
  const rehashed: KeyRecord = {
    ...migrated,
    hash: keyHash(key),
    start: `${parts.prefix}_${`${parts.shortToken}_${parts.longToken}`.slice(0, 4)}`,
  };
  await tx.put("keys", rehashed);
  return rehashed;
}
