// Operations keys.getKey, keys.whoami, keys.updateKey, keys.deleteKey and keys.updateCredits.
import type { KeyCredits } from "../../protocol/types";
import { canOnApi, requireSomeApiGrant, type RootContext } from "../auth";
import { applyRefill } from "../credits";
import { ServiceError } from "../envelope";
import { hashKey } from "../key-material";
import {
  ensurePermissions,
  findKey,
  keyNotFound,
  resolveRoles,
  toRatelimitRecords,
  upsertIdentity,
} from "../lookup";
import { defineOperation, type OpContext } from "../operation";
import { dropLimitCounters } from "../ratelimit";
import * as s from "../schemas";
import type { KeyRecord } from "../store";
import { arr, bool, int, nullable, obj, oneOf, record, str } from "../validate";
import { keyInfoView } from "../views";
import { cleanRefill } from "./create-key";

/** The key by id, if the root key may do `action` on its API; else 403 (no grant at all) or 404. */
export function keyForAction(ctx: OpContext, keyId: string, action: string): KeyRecord {
  requireSomeApiGrant(ctx.root, action);
  const key = findKey(ctx.store, ctx.root.workspaceId, keyId);
  if (!canOnApi(ctx.root, action, key.apiId)) throw keyNotFound(keyId);
  if (applyRefill(key.credits, ctx.now)) ctx.store.touch();
  return key;
}

function keyByPlaintext(ctx: OpContext, root: RootContext, plaintext: string): KeyRecord {
  requireSomeApiGrant(root, "read_key");
  const key = ctx.store.keyByHashValue(hashKey(plaintext));
  if (!key || key.workspaceId !== root.workspaceId || !canOnApi(root, "read_key", key.apiId)) {
    throw new ServiceError("data.key_not_found", "The provided key does not exist or has been deleted.");
  }
  if (applyRefill(key.credits, ctx.now)) ctx.store.touch();
  return key;
}

export const getKeyOperation = defineOperation("keys.getKey", {
  schema: obj({ keyId: s.id(), decrypt: bool() }, ["keyId"]),
  // The local service stores hashes only, so `decrypt` never returns a plaintext.
  run: (ctx, body) => ({ data: keyInfoView(ctx.store, keyForAction(ctx, body.keyId, "read_key")) }),
});

export const whoamiOperation = defineOperation("keys.whoami", {
  schema: obj({ key: str({ max: 512 }) }, ["key"]),
  run: (ctx, body) => ({ data: keyInfoView(ctx.store, keyByPlaintext(ctx, ctx.root, body.key)) }),
});

export const updateKeyOperation = defineOperation("keys.updateKey", {
  schema: obj(
    {
      keyId: s.id(),
      name: nullable(str({ max: 255 })),
      externalId: nullable(str({ max: 255 })),
      meta: nullable(record()),
      expires: nullable(int({ min: 0 })),
      credits: nullable(obj({ remaining: nullable(int({ min: 0 })), refill: nullable(s.refill()) })),
      ratelimits: s.ratelimitList(),
      enabled: bool(),
      roles: arr(str({ max: 255 }), { max: 100 }),
      permissions: arr(s.slug(), { max: 1000 }),
    },
    ["keyId"],
  ),
  refine: (body) => [
    ...s.checkCredits("body.credits", body.credits ?? undefined),
    ...s.checkUniqueNames("body.ratelimits", body.ratelimits),
  ],
  run(ctx, body) {
    const { store, root, now } = ctx;
    const key = keyForAction(ctx, body.keyId, "update_key");
    // Resolve everything that can fail before changing anything.
    const roleIds = body.roles && resolveRoles(store, root.workspaceId, body.roles);
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
    if (body.permissions) key.permissionIds = ensurePermissions(store, root.workspaceId, body.permissions, now);
    if (roleIds) key.roleIds = roleIds;
    if (body.name !== undefined) setOptional(key, "name", body.name);
    if (body.meta !== undefined) setOptional(key, "meta", body.meta);
    if (body.expires !== undefined) setOptional(key, "expires", body.expires);
    if (body.enabled !== undefined) key.enabled = body.enabled;
    if (body.externalId === null) delete key.identityId;
    else if (body.externalId !== undefined) key.identityId = upsertIdentity(store, root.workspaceId, body.externalId, now).id;
    if (body.ratelimits) {
      const next = toRatelimitRecords(body.ratelimits, key.ratelimits);
      const dropped = key.ratelimits.filter((old) => !next.some((r) => r.id === old.id));
      dropLimitCounters(store.state.windows, dropped.map((r) => r.id));
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
    store.touch();
    return { data: {} };
  },
});

function setOptional<K extends "name" | "meta" | "expires">(key: KeyRecord, field: K, value: KeyRecord[K] | null): void {
  if (value === null) delete key[field];
  else key[field] = value;
}

export const deleteKeyOperation = defineOperation("keys.deleteKey", {
  schema: obj({ keyId: s.id(), permanent: bool() }, ["keyId"]),
  run(ctx, body) {
    const key = keyForAction(ctx, body.keyId, "delete_key");
    ctx.store.deleteKey(key.id);
    return { data: {} };
  },
});

export const updateCreditsOperation = defineOperation("keys.updateCredits", {
  schema: obj(
    { keyId: s.id(), operation: oneOf(["set", "increment", "decrement"]), value: nullable(int({ min: 0 })) },
    ["keyId", "operation"],
  ),
  refine: (body) =>
    body.operation !== "set" && (body.value === undefined || body.value === null)
      ? [{ location: "body.value", message: `is required for ${body.operation}`, fix: "Add a non-negative integer value." }]
      : [],
  run(ctx, body) {
    const key = keyForAction(ctx, body.keyId, "update_key");
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
    ctx.store.touch();
    const data: KeyCredits = key.credits ? { remaining: key.credits.remaining } : { remaining: null };
    if (key.credits?.refill) data.refill = { ...key.credits.refill };
    return { data };
  },
});
