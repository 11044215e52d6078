// Operations keys.getKey, keys.whoami, keys.updateKey, keys.deleteKey and keys.updateCredits.
import type { KeyCredits } from "../../protocol/types";
import { canOnApi, requireOnApi } from "./auth";
import { creditsAt } from "../domain/credits";
import { ServiceError } from "../http/envelope";
import { keyHash } from "../../protocol/key-hash";
import {
  ensurePermissions,
  findKey,
  resolveRoles,
  toRatelimitRecords,
  upsertIdentity,
} from "../domain/lookup";
import { defineOperation, type OpContext } from "./operation";
import { plaintextOf, requireDecrypt } from "../domain/recoverable";
import * as s from "../../protocol/contract/cross-field";
import type { KeyRecord } from "../storage/seam";
import { keyInfoView } from "../domain/views";
import { cleanRefill } from "./create-key";

/**
 * The key by id (404 when missing), if the root key may do `action` on its API (else 403, as
 * production). Its credits are as they stand now: a refill that fell due is applied (written
 * when the caller writes the key).
 */
export async function keyForAction(ctx: OpContext, keyId: string, action: string): Promise<KeyRecord> {
  const key = await findKey(ctx.tx, ctx.root.workspaceId, keyId);
  requireOnApi(ctx.root, action, key.apiId);
  if (key.credits) key.credits = creditsAt(key.credits, ctx.now);
  return key;
}

/** The key by its plaintext; 404 also when the root key may not read it (production masks that). */
async function keyByPlaintext(ctx: OpContext, plaintext: string): Promise<KeyRecord> {
  const key = await ctx.tx.keyByHash(keyHash(plaintext));
  if (!key || key.workspaceId !== ctx.root.workspaceId || !canOnApi(ctx.root, "read_key", key.apiId)) {
    throw new ServiceError("data.key_not_found", "The specified key was not found.");
  }
  return key;
}

export const getKeyOperation = defineOperation("keys.getKey", {
  access: "read",
  async run(ctx, body) {
    const key = await keyForAction(ctx, body.keyId, "read_key");
    const data = await keyInfoView(ctx.tx, key, ctx.now);
    if (body.decrypt) {
      requireDecrypt(ctx.root, await ctx.tx.get("apis", key.apiId), key.apiId, "The API for this key does not support key encryption.");
      const plaintext = plaintextOf(ctx.vault, key);
      if (plaintext !== undefined) data.plaintext = plaintext;
    }
    return { data };
  },
});

export const whoamiOperation = defineOperation("keys.whoami", {
  access: "read",
  run: async (ctx, body) => ({ data: await keyInfoView(ctx.tx, await keyByPlaintext(ctx, body.key), ctx.now) }),
});

export const updateKeyOperation = defineOperation("keys.updateKey", {
  access: "write",
  refine: (body) => [
    ...s.checkCredits("body.credits", body.credits ?? undefined),
    ...s.checkUniqueNames("body.ratelimits", body.ratelimits),
  ],
  async run(ctx, body) {
    const { tx, root, now } = ctx;
    const key = await keyForAction(ctx, body.keyId, "update_key");
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
    if (body.enabled !== undefined) key.enabled = body.enabled;
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

function setOptional<K extends "name" | "meta" | "expires">(key: KeyRecord, field: K, value: KeyRecord[K] | null): void {
  if (value === null) delete key[field];
  else key[field] = value;
}

export const deleteKeyOperation = defineOperation("keys.deleteKey", {
  access: "write",
  async run(ctx, body) {
    const key = await keyForAction(ctx, body.keyId, "delete_key");
    // Its counters go with it.
    await ctx.tx.delete("keys", key.id);
    return { data: {} };
  },
});

export const updateCreditsOperation = defineOperation("keys.updateCredits", {
  access: "write",
  refine: (body) =>
    body.operation !== "set" && (body.value === undefined || body.value === null)
      ? [{ location: "body.value", message: `is required for ${body.operation}`, fix: "Add a non-negative integer value." }]
      : [],
  async run(ctx, body) {
    const key = await keyForAction(ctx, body.keyId, "update_key");
    const value = body.value ?? null;
    if (body.operation === "set") {
      if (value === null) delete key.credits;
      else if (key.credits) key.credits.remaining = value;
      else key.credits = { remaining: value, lastRefillAt: ctx.now };
    } else {
      if (!key.credits) {
        throw new ServiceError("application.invalid_input", `Cannot ${body.operation} the credits of a key with unlimited usage.`, {
          errors: [{ location: "body.operation", message: "the key has unlimited credits", fix: 'Use operation "set" to give it a balance first.' }],
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
