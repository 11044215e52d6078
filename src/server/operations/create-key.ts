// Operations keys.createKey and keys.rerollKey. The key is shown once, in the response; only its
// hash is stored. Credits come nested (`credits`) or flat (`remaining`/`refill`), not both.
import type { CreateKeyRequest, CreateKeyFlatCredits, ValidationErrorDetail } from "../../protocol/types";
import { canOnApi, maskedRefusal } from "./auth";
import { fromStore, onKey } from "./authorization";
import { newId } from "../domain/ids";
import { DEFAULT_BYTE_LENGTH, generateKeyIn } from "../domain/key-material";
import { checkAllowList } from "../domain/ip-allowlist";
import { ensurePermissions, findApi, resolveRoles, toRatelimitRecords, upsertIdentity } from "./lookup";
import type { KeyVault } from "../domain/key-vault";
import { defineOperation, type OpContext } from "./operation";
import { NOT_FOUND_API, requireStorage, requireVault } from "./recoverable";
import * as s from "../../protocol/contract/cross-field";
import type { ApiRecord, CreditsRecord, KeyRecord } from "../records";

export type CreateKeyBody = CreateKeyRequest & CreateKeyFlatCredits;

/**
 * As production: the vault first (412 when a recoverable key cannot be sealed), then create_key
 * (and encrypt_key for a recoverable key) on the API, masked as "not found" like a missing API.
 */
const mayCreateOnApi = fromStore(
  "api.<apiId>.create_key (and encrypt_key when recoverable; else 404)",
  async (ctx, body: CreateKeyRequest) => {
    const { tx, root } = ctx;
    if (body.recoverable) requireVault(ctx);
    const allowed = canOnApi(root, "create_key", body.apiId) && (!body.recoverable || canOnApi(root, "encrypt_key", body.apiId));
    if (!allowed) throw maskedRefusal(NOT_FOUND_API());
    const api = await findApi(tx, root.workspaceId, body.apiId);
    if (!api) throw NOT_FOUND_API();
    return api;
  },
);

export const createKeyOperation = defineOperation("keys.createKey", {
  access: "write",
  // It reads the API alone, unless it must look up permissions, roles or an identity by name.
  optimistic: (body) => !body.permissions?.length && !body.roles?.length && body.externalId === undefined,
  authorize: mayCreateOnApi,
  audit: (body, data) => ({ targets: [data.keyId, body.apiId] }),
  refine(body) {
    const b = body as CreateKeyBody;
    const out: ValidationErrorDetail[] = [];
    if (b.credits !== undefined && (b.remaining !== undefined || b.refill !== undefined)) {
      out.push({
        location: "body.credits",
        message: "credits cannot be combined with the top-level remaining/refill fields",
        fix: "Send either credits: {remaining, refill} or the flat remaining and refill, not both.",
      });
    }
    if (b.refill !== undefined && b.remaining === undefined && b.credits === undefined) {
      out.push({ location: "body.remaining", message: "is required when refill is set", fix: "Add remaining." });
    }
    out.push(...s.checkCredits("body.credits", b.credits), ...s.checkCredits("body", { refill: b.refill }));
    out.push(...s.checkUniqueNames("body.ratelimits", b.ratelimits));
    out.push(...checkAllowList("body.ipWhitelist", b.ipWhitelist));
    return out;
  },
  run: (ctx, body) => createKeyIn(ctx, ctx.resource, body as CreateKeyBody),
});

/**
 * Makes a key in `api` as `keys.createKey`'s body says (its caller checked the body and the
 * permission): also what `portal.createKey` makes from its portal's template.
 */
export async function createKeyIn(ctx: OpContext, api: ApiRecord, b: CreateKeyBody): Promise<{ data: { keyId: string; key: string } }> {
  const { tx, root, now } = ctx;
  // The authorisation made sure a recoverable key has a vault; then the API's setting.
  const vault = b.recoverable ? ctx.vault : undefined;
  if (vault) requireStorage(api, "This API does not support key encryption.");
  const roleIds = await resolveRoles(tx, root.workspaceId, b.roles ?? []);
  const permissionIds = await ensurePermissions(tx, root.workspaceId, b.permissions ?? [], now);
  const remaining = b.credits ? b.credits.remaining : b.remaining;
  const refill = b.credits ? b.credits.refill : b.refill;
  let credits: CreditsRecord | undefined;
  if (remaining !== undefined && remaining !== null) {
    credits = { remaining, lastRefillAt: now };
    if (refill) credits.refill = cleanRefill(refill);
  }
  const byteLength = b.byteLength ?? DEFAULT_BYTE_LENGTH;
  // In the API's format: plain, or checksummed (`prefix_kg0…`).
  const material = generateKeyIn(api.keyFormat, b.prefix, byteLength);
  const key: KeyRecord = {
    id: newId("key"),
    workspaceId: root.workspaceId,
    apiId: api.id,
    hash: material.hash,
    start: material.start,
    byteLength,
    createdAt: now,
    enabled: b.enabled ?? true,
    permissionIds,
    roleIds,
    ratelimits: toRatelimitRecords(b.ratelimits ?? []),
  };
  if (b.prefix !== undefined) key.prefix = b.prefix;
  if (b.name !== undefined) key.name = b.name;
  if (b.meta !== undefined) key.meta = b.meta;
  if (b.expires !== undefined) key.expires = b.expires;
  if (credits) key.credits = credits;
  if (b.ipWhitelist !== undefined && b.ipWhitelist.length > 0) key.ipWhitelist = [...new Set(b.ipWhitelist)];
  if (b.creditsLowThreshold !== undefined) key.creditsLowThreshold = b.creditsLowThreshold;
  if (b.externalId !== undefined) key.identityId = (await upsertIdentity(tx, root.workspaceId, b.externalId, now)).id;
  if (vault) key.encrypted = vault.seal(material.key, key);
  await tx.put("keys", key);
  return { data: { keyId: key.id, key: material.key } };
}

/** Rounds up to the next full minute (a time already on a minute stays). */
function ceilToMinute(ms: number): number {
  return Math.ceil(ms / 60_000) * 60_000;
}

/** Keeps `refillDay` only for monthly refills. */
export function cleanRefill<T extends { interval: "daily" | "monthly"; amount: number; refillDay?: number }>(r: T) {
  return r.interval === "monthly"
    ? { interval: r.interval, amount: r.amount, refillDay: r.refillDay }
    : { interval: r.interval, amount: r.amount };
}

export const rerollKeyOperation = defineOperation("keys.rerollKey", {
  access: "write",
  // A recoverable key stays recoverable: its successor is sealed too, which needs encrypt_key.
  // The new key and the one it replaces.
  audit: (body, data) => ({ targets: [data.keyId, body.keyId] }),
  authorize: onKey(
    "create_key",
    (body) => body.keyId,
    (_body, key) => key.encrypted !== undefined && "encrypt_key",
  ),
  run: (ctx, body) => rerollKeyRecord(ctx, ctx.resource, body.expiration),
});

/**
 * Rerolls `old` (its caller checked the permission): a new key with its settings, and the old one
 * expiring after `expiration` ms; also what `portal.rerollKey` does for a session's own key.
 */
export async function rerollKeyRecord(
  ctx: OpContext,
  old: KeyRecord,
  expiration: number,
): Promise<{ data: { keyId: string; key: string } }> {
  // Its credits are as they stand now (a due refill applied): the new key starts from that balance.
  const { tx, now } = ctx;
  let vault: KeyVault | undefined;
  const api = await tx.get("apis", old.apiId);
  if (old.encrypted !== undefined) {
    vault = requireVault(ctx);
    requireStorage(api, "This API does not support key encryption.");
  }
  // In the API's format as it is now: rerolling moves a key to a format the API changed to.
  const material = generateKeyIn(api?.keyFormat, old.prefix, old.byteLength);
  const key: KeyRecord = structuredClone({
    ...old,
    id: newId("key"),
    hash: material.hash,
    start: material.start,
    createdAt: now,
    ratelimits: toRatelimitRecords(old.ratelimits),
  });
  delete key.updatedAt;
  // The new key has not leaked, nor been noticed of its expiry (key.expiring is per key).
  delete key.leakReports;
  delete key.expiryNoticeFor;
  if (vault) key.encrypted = vault.seal(material.key, key);
  else delete key.encrypted;
  await tx.put("keys", key);
  // The old key stays (getKey finds it) and expires: now, or at the next full minute after the
  // grace period, as production; never later than it already would.
  const until = expiration === 0 ? now : ceilToMinute(now + expiration);
  old.expires = old.expires === undefined ? until : Math.min(old.expires, until);
  old.updatedAt = now;
  await tx.put("keys", old);
  return { data: { keyId: key.id, key: material.key } };
}
