// Operations keys.getKey, keys.whoami, keys.updateKey, keys.deleteKey and keys.updateCredits, and
// keyguard's own keys.getKeySettings.
import type { KeyCredits } from "../../protocol/types";
import { fromStore, onKey, onKeyByPlaintext } from "./authorization";
import { requireOnApi } from "./auth";
import { ServiceError } from "../errors";
import { ensurePermissions, findKey, resolveRoles, toRatelimitRecords, upsertIdentity, readKeyInfo } from "./lookup";
import { defineExtension, defineOperation } from "./operation";
import { keySettingsView } from "../domain/views";
import { plaintextOf, requireStorage } from "./recoverable";
import * as s from "../../protocol/contract/cross-field";
import type { KeyRecord } from "../records";
import { cleanRefill } from "./create-key";
import { checkAllowList } from "../domain/ip-allowlist";

export const getKeyOperation = defineOperation("keys.getKey", {
  access: "read",
  // As production: 404 when the key is missing, then 403 without read_key (and decrypt_key for decrypt: true).
  authorize: onKey(
    "read_key",
    (body) => body.keyId,
    (body) => body.decrypt && "decrypt_key",
  ),
  async run(ctx, body) {
    const key = ctx.resource;
    const data = await readKeyInfo(ctx.tx, key, ctx.now);
    if (body.decrypt) {
      requireStorage(await ctx.tx.get("apis", key.apiId), "The API for this key does not support key encryption.");
      const plaintext = plaintextOf(ctx.vault, key);
      if (plaintext !== undefined) data.plaintext = plaintext;
    }
    return { data };
  },
});

export const whoamiOperation = defineOperation("keys.whoami", {
  access: "read",
  // A key the root key may not read is "not found", as production masks it.
  authorize: onKeyByPlaintext("read_key", (body) => body.key),
  run: async (ctx) => ({ data: await readKeyInfo(ctx.tx, ctx.resource, ctx.now) }),
});

export const updateKeyOperation = defineOperation("keys.updateKey", {
  access: "write",
  authorize: onKey("update_key", (body) => body.keyId),
  audit: (body) => ({ targets: [body.keyId] }),
  refine: (body) => [
    ...s.checkCredits("body.credits", body.credits ?? undefined),
    ...s.checkUniqueNames("body.ratelimits", body.ratelimits),
    ...checkAllowList("body.ipWhitelist", body.ipWhitelist),
  ],
  async run(ctx, body) {
    const { tx, root, now, resource: key } = ctx;
    // Resolve everything that can fail before changing anything.
    const roleIds = body.roles && (await resolveRoles(tx, root.workspaceId, body.roles));
    const credits = body.credits;
    if (credits && credits.remaining === undefined && !key.credits) {
      throw new ServiceError("application.invalid_input", "credits.remaining is required: this key has unlimited usage.", {
        errors: [
          {
            location: "body.credits.remaining",
            message: "is required: the key is unlimited",
            fix: "Set credits.remaining to the starting balance (or null to keep the key unlimited).",
          },
        ],
      });
    }
    if (body.permissions) key.permissionIds = await ensurePermissions(tx, root.workspaceId, body.permissions, now);
    if (roleIds) key.roleIds = roleIds;
    if (body.name !== undefined) setOptional(key, "name", body.name);
    if (body.meta !== undefined) setOptional(key, "meta", body.meta);
    if (body.expires !== undefined) setOptional(key, "expires", body.expires);
    if (body.creditsLowThreshold !== undefined) setOptional(key, "creditsLowThreshold", body.creditsLowThreshold);
    if (body.enabled !== undefined) key.enabled = body.enabled;
    if (body.ipWhitelist?.length === 0) delete key.ipWhitelist;
    else if (body.ipWhitelist !== undefined) key.ipWhitelist = [...new Set(body.ipWhitelist)];
    if (body.externalId === null) delete key.identityId;
    else if (body.externalId !== undefined) key.identityId = (await upsertIdentity(tx, root.workspaceId, body.externalId, now)).id;
    if (body.ratelimits) {
      const next = toRatelimitRecords(body.ratelimits, key.ratelimits);
      const dropped = key.ratelimits.filter((old) => !next.some((r) => r.id === old.id));
      if (dropped.length > 0) await tx.dropCounters({ limitIds: dropped.map((r) => r.id) });
      key.ratelimits = next;
    }
    if (credits === null || credits?.remaining === null) {
      delete key.credits;
    } else if (credits) {
      const current = key.credits ?? { remaining: 0, lastRefillAt: now };
      if (credits.remaining !== undefined) current.remaining = credits.remaining;
      if (credits.refill === null) delete current.refill;
      else if (credits.refill) current.refill = cleanRefill(credits.refill);
      // A balance or refill set now counts from now: the next refill is the next boundary.
      if (credits.remaining !== undefined || credits.refill) current.lastRefillAt = now;
      key.credits = current;
    }
    key.updatedAt = now;
    await tx.put("keys", key);
    return { data: {} };
  },
});

function setOptional<K extends "name" | "meta" | "expires" | "creditsLowThreshold">(
  key: KeyRecord,
  field: K,
  value: KeyRecord[K] | null,
): void {
  if (value === null) delete key[field];
  else key[field] = value;
}

export const deleteKeyOperation = defineOperation("keys.deleteKey", {
  access: "write",
  authorize: onKey("delete_key", (body) => body.keyId),
  audit: (body) => ({ targets: [body.keyId] }),
  async run(ctx) {
    // Its counters go with it.
    await ctx.tx.delete("keys", ctx.resource.id);
    return { data: {} };
  },
});

export const updateCreditsOperation = defineOperation("keys.updateCredits", {
  access: "write",
  authorize: onKey("update_key", (body) => body.keyId),
  audit: (body) => ({ targets: [body.keyId] }),
  refine: (body) =>
    body.operation !== "set" && (body.value === undefined || body.value === null)
      ? [{ location: "body.value", message: `is required for ${body.operation}`, fix: "Add a non-negative integer value." }]
      : [],
  async run(ctx, body) {
    const key = ctx.resource;
    const value = body.value ?? null;
    if (body.operation === "set") {
      if (value === null) delete key.credits;
      else if (key.credits) key.credits.remaining = value;
      else key.credits = { remaining: value, lastRefillAt: ctx.now };
    } else {
      if (!key.credits) {
        throw new ServiceError("application.invalid_input", `Cannot ${body.operation} the credits of a key with unlimited usage.`, {
          errors: [
            {
              location: "body.operation",
              message: "the key has unlimited credits",
              fix: 'Use operation "set" to give it a balance first.',
            },
          ],
        });
      }
      const delta = body.operation === "increment" ? value! : -value!;
      // Floored at 0 and capped at the largest integer JSON numbers carry exactly.
      key.credits.remaining = Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, key.credits.remaining + delta));
    }
    key.updatedAt = ctx.now;
    await ctx.tx.put("keys", key);
    const data: KeyCredits = key.credits ? { remaining: key.credits.remaining } : { remaining: null };
    if (key.credits?.refill) data.refill = { ...key.credits.refill };
    return { data };
  },
});

/**
 * keyguard's own: the settings of keys production's key has not (its IP allow-list, its credits-low
 * threshold, its secret-scanning reports), which getKey, whoami and listKeys leave out because
 * production's schema closes their object. As getKey, key by key: 404 for a missing key, then 403
 * without read_key on its API.
 */
export const getKeySettingsOperation = defineExtension<"keys.getKeySettings", KeyRecord[]>("keys.getKeySettings", {
  access: "read",
  authorize: fromStore("api.<the key's apiId>.read_key, for each key", async ({ tx, root }, body: { keyIds: string[] }) => {
    const keys: KeyRecord[] = [];
    for (const keyId of new Set(body.keyIds)) {
      const key = await findKey(tx, root.workspaceId, keyId);
      requireOnApi(root, "read_key", key.apiId);
      keys.push(key);
    }
    return keys;
  }),
  run: async (ctx) => ({ data: ctx.resource.map(keySettingsView) }),
});
