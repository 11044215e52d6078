// Operation keys.migrateKeys: imports keys another system hashed, under a migration registered
// for the workspace (`createKeyMigration` on the admin surface), so that callers keep their keys.
// A hash that some key already has is reported in `failed`; the others are imported.
import type { MigrateKeyData, ValidationErrorDetail } from "../../protocol/types";
import { onApi } from "./authorization";
import { newId } from "../domain/ids";
import { DEFAULT_BYTE_LENGTH } from "../domain/key-material";
import { findMigration, migrationNotFound } from "./key-migrations";
import { ensurePermissions, findRole, toRatelimitRecords, upsertIdentity } from "./lookup";
import { defineOperation, type OpContext } from "./operation";
import * as s from "../../protocol/contract/cross-field";
import type { CreditsRecord, KeyMigrationRecord, KeyRecord } from "../records";
import { cleanRefill } from "./create-key";

/** Role ids for names (or ids); missing ones are created. */
async function ensureRoles(ctx: OpContext, refs: readonly string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const ref of refs) {
    let role = await findRole(ctx.tx, ctx.root.workspaceId, ref);
    if (!role) {
      role = { id: newId("role"), workspaceId: ctx.root.workspaceId, name: ref, permissionIds: [], createdAt: ctx.now };
      await ctx.tx.put("roles", role);
    }
    if (!ids.includes(role.id)) ids.push(role.id);
  }
  return ids;
}

async function importKey(ctx: OpContext, apiId: string, migration: KeyMigrationRecord, k: MigrateKeyData): Promise<KeyRecord> {
  const { tx, root, now } = ctx;
  const key: KeyRecord = {
    id: newId("key"),
    workspaceId: root.workspaceId,
    apiId,
    hash: k.hash,
    start: "",
    byteLength: DEFAULT_BYTE_LENGTH,
    createdAt: now,
    enabled: k.enabled ?? true,
    permissionIds: await ensurePermissions(tx, root.workspaceId, k.permissions ?? [], now),
    roleIds: await ensureRoles(ctx, k.roles ?? []),
    ratelimits: toRatelimitRecords(k.ratelimits ?? []),
  };
  // Keys of a `sha256` migration carry the service's own hash already: nothing stays pending.
  if (migration.algorithm !== "sha256") key.pendingMigrationId = migration.id;
  if (k.name !== undefined) key.name = k.name;
  if (k.meta !== undefined) key.meta = k.meta;
  if (k.expires !== undefined) key.expires = k.expires;
  const remaining = k.credits?.remaining;
  if (remaining !== undefined && remaining !== null) {
    const credits: CreditsRecord = { remaining, lastRefillAt: now };
    if (k.credits?.refill) credits.refill = cleanRefill(k.credits.refill);
    key.credits = credits;
  }
  if (k.externalId !== undefined) key.identityId = (await upsertIdentity(tx, root.workspaceId, k.externalId, now)).id;
  await tx.put("keys", key);
  return key;
}

export const migrateKeysOperation = defineOperation("keys.migrateKeys", {
  access: "write",
  // As production: the permission first (403, not masked), then the API (404), then the migration.
  authorize: onApi("create_key", (body) => body.apiId),
  // Counts, not the hashes.
  audit: (body, data) => ({
    targets: [body.apiId, ...data.migrated.map((m) => m.keyId)],
    change: { migrationId: body.migrationId, apiId: body.apiId, migrated: data.migrated.length, failed: data.failed.length },
  }),
  refine(body) {
    const out: ValidationErrorDetail[] = [];
    body.keys.forEach((k, i) => {
      out.push(...s.checkCredits(`body.keys[${i}].credits`, k.credits), ...s.checkUniqueNames(`body.keys[${i}].ratelimits`, k.ratelimits));
    });
    return out;
  },
  async run(ctx, body) {
    const { tx, root, resource: api } = ctx;
    const migration = await findMigration(tx, root.workspaceId, body.migrationId);
    if (!migration) throw migrationNotFound();
    const migrated: Array<{ hash: string; keyId: string }> = [];
    const failed: string[] = [];
    for (const k of body.keys) {
      // A hash some key already has (in any workspace, or earlier in this request) is not imported.
      if (await tx.keyByHash(k.hash)) failed.push(k.hash);
      else migrated.push({ hash: k.hash, keyId: (await importKey(ctx, api.id, migration, k)).id });
    }
    return { data: { migrated, failed } };
  },
});
