// keyguard's own operations, outside production's v2 API: listing the workspace's APIs and managing
// its root keys. Production does both in its dashboard only; keyguard serves them over the same
// public HTTP API (root key, permission tuples, envelopes) so that its console, or any client,
// needs no private way in.
import { PERMISSION_TUPLE, requirePermission, type RootContext } from "./auth";
import { fromRoot, fromStore, grantOnApis, permission, type ApiGrant } from "./authorization";
import { ServiceError } from "../errors";
import { newId } from "../domain/ids";
import { generateKey } from "../domain/key-material";
import { defineExtension, type OpContext } from "./operation";
import { pageOf } from "../domain/pagination";
import type { RootKeyItem } from "../../protocol/types";
import type { RootKeyRecord } from "../records";
import { described } from "../domain/caller-value";
import { apiSettingsView } from "../domain/views";
import { checkAllowList, entryWithin } from "../domain/ip-allowlist";

function rootKeyView(r: RootKeyRecord, lastUsedAt: number | undefined): RootKeyItem {
  const item: RootKeyItem = { keyId: r.id, permissions: [...r.permissions], createdAt: r.createdAt };
  if (r.name !== undefined) item.name = r.name;
  if (r.expires !== undefined) item.expires = r.expires;
  if (r.ipWhitelist !== undefined) item.ipWhitelist = [...r.ipWhitelist];
  if (lastUsedAt !== undefined) item.lastUsedAt = lastUsedAt;
  return item;
}

/** The APIs of the root key's workspace it may read (`api.*.read_api` or `api.<id>.read_api`). */
export const listApisOperation = defineExtension<"apis.listApis", ApiGrant>("apis.listApis", {
  access: "read",
  // Never a 403: the others are left out.
  authorize: grantOnApis("read_api"),
  async run(ctx, body) {
    const ws = ctx.root.workspaceId;
    const readable = ctx.resource;
    const page = await pageOf(
      (from, limit) => ctx.tx.list("apis", ws, { from, limit }),
      body.cursor,
      body.limit,
      (api) => readable(api.id),
    );
    return { data: page.items.map((a) => ({ ...apiSettingsView(a), createdAt: a.createdAt })), pagination: page.pagination };
  },
});

/** The permissions of `wanted` that `root` holds neither itself nor through their wildcard form (`api.*.read_api` covers `api.<id>.read_api`). */
function notHeld(root: RootContext, wanted: readonly string[]): string[] {
  const held = (p: string) => root.permissions.has(p) || root.permissions.has(p.replace(/^([a-z_]+)\.[^.]+\./, "$1.*."));
  return [...new Set(wanted.filter((p) => !held(p)))];
}

/** A root key's reach besides its permissions: when it stops, and where from it is accepted. */
interface Reach {
  expires?: number | undefined;
  ipWhitelist?: readonly string[] | undefined;
}

/**
 * 403 unless the root key made or changed (`result`) reaches no further than the caller: it
 * expires no later than a caller that expires, and its allow-list lies inside a fenced caller's,
 * entry by entry. `sent`: the allow-list is the one of the request body (its entries are named by
 * index), not one kept from the stored record. The caller's values are never repeated.
 */
function requireWithinReach(root: RootContext, result: Reach, sent: boolean): void {
  const problems: string[] = [];
  if (root.expires !== undefined && (result.expires === undefined || result.expires > root.expires)) {
    problems.push("body.expires must be set, and no later than the calling root key's own expiry");
  }
  const fence = root.ipWhitelist;
  if (fence !== undefined && fence.length > 0) {
    const list = result.ipWhitelist ?? [];
    const outside = list.flatMap((entry, i) => (entryWithin(entry, fence) ? [] : [sent ? `body.ipWhitelist[${i}]` : "body.ipWhitelist"]));
    if (list.length === 0) {
      problems.push("body.ipWhitelist must hold addresses or ranges within the calling root key's own IP allow-list");
    } else if (outside.length > 0) {
      const at = [...new Set(outside)].join(", ");
      const verb = sent ? (outside.length === 1 ? "lies" : "lie") : "(the root key's current list) lies";
      problems.push(`${at} ${verb} outside the calling root key's own IP allow-list`);
    }
  }
  if (problems.length > 0) {
    throw new ServiceError(
      "authorization.insufficient_permissions",
      `A root key can only make or change root keys that reach no further than itself: ${problems.join("; ")}`,
    );
  }
}

/**
 * workspace.*.create_root_key, and every permission granted held by the caller itself or through
 * its wildcard form (`api.*.read_api` covers `api.<id>.read_api`), within the caller's own expiry
 * and IP allow-list: no root key makes a stronger one.
 */
function mayCreateRootKey(root: RootContext, body: { permissions: string[] } & Reach): undefined {
  requirePermission(root, ["workspace.*.create_root_key"]);
  const missing = notHeld(root, body.permissions);
  if (missing.length > 0) {
    // The tuples are the caller's values: named by where they were sent.
    const at = missing.map((p) => `body.permissions[${body.permissions.indexOf(p)}]`);
    throw new ServiceError(
      "authorization.insufficient_permissions",
      `A root key can only grant permissions it holds itself; this one lacks those of ${at.join(", ")}`,
    );
  }
  requireWithinReach(root, body, true);
  return undefined;
}

/** A new root key of the caller's workspace holding `permissions`. The key is answered once and stored hashed. */
export const createRootKeyOperation = defineExtension("rootKeys.createRootKey", {
  access: "write",
  authorize: fromRoot(
    "workspace.*.create_root_key (and every permission it grants, within its own expiry and IP allow-list)",
    mayCreateRootKey,
  ),
  audit: (_body, data) => ({ targets: [data.keyId] }),
  refine(body) {
    const tuples = body.permissions.flatMap((p, i) =>
      PERMISSION_TUPLE.test(p)
        ? []
        : [
            {
              location: `body.permissions[${i}]`,
              message: "is not a permission tuple",
              fix: 'Use tuples like "api.*.verify_key".',
            },
          ],
    );
    return [...tuples, ...checkAllowList("body.ipWhitelist", body.ipWhitelist)];
  },
  async run(ctx, body) {
    const { key, hash } = generateKey("root", 24);
    const record: RootKeyRecord = {
      id: newId("rk"),
      workspaceId: ctx.root.workspaceId,
      hash,
      permissions: [...new Set(body.permissions)],
      createdAt: ctx.now,
      ...(body.name === undefined ? {} : { name: body.name }),
      ...(body.expires === undefined ? {} : { expires: body.expires }),
      ...(body.ipWhitelist === undefined || body.ipWhitelist.length === 0 ? {} : { ipWhitelist: [...new Set(body.ipWhitelist)] }),
    };
    await ctx.tx.put("rootKeys", record);
    return { data: { keyId: record.id, key } };
  },
});

export const listRootKeysOperation = defineExtension("rootKeys.listRootKeys", {
  access: "read",
  authorize: permission("workspace.*.read_root_key"),
  async run(ctx, body) {
    const ws = ctx.root.workspaceId;
    const page = await pageOf((from, limit) => ctx.tx.list("rootKeys", ws, { from, limit }), body.cursor, body.limit);
    const used = await ctx.tx.lastUsed(page.items.map((r) => r.id));
    return { data: page.items.map((r) => rootKeyView(r, used.get(r.id))), pagination: page.pagination };
  },
});

/**
 * `workspace.*.<action>_root_key`, then the root key acted on (404 when it is not of the caller's
 * workspace), which must hold no permission the caller lacks: a weaker root key never removes or
 * loosens a stronger one (the bootstrap key included), as it never creates one. `then`: a further
 * check of the root key found.
 */
function mayActOnRootKey<Body extends { keyId: string }>(
  action: "update" | "delete",
  label: string,
  then: (root: RootContext, record: RootKeyRecord, body: Body) => void = () => undefined,
) {
  return fromStore(
    `workspace.*.${action}_root_key (and every permission of the root key ${action}d${label})`,
    async (ctx: OpContext, body: Body) => {
      requirePermission(ctx.root, [`workspace.*.${action}_root_key`]);
      const record = await ctx.tx.get("rootKeys", body.keyId);
      if (!record || record.workspaceId !== ctx.root.workspaceId) {
        throw new ServiceError(
          "data.key_not_found",
          `The root key named by ${described("body.keyId", body.keyId)} does not exist in this workspace.`,
        );
      }
      const missing = notHeld(ctx.root, record.permissions);
      if (missing.length > 0) {
        throw new ServiceError(
          "authorization.insufficient_permissions",
          `A root key can only ${action} root keys whose permissions it holds itself; this one lacks: ${missing.join(", ")}`,
        );
      }
      then(ctx.root, record, body);
      return record;
    },
  );
}

/**
 * Changes a root key's name, expiry or IP allow-list; not the one making the request (a root key
 * held from a disallowed address, or about to expire, cannot free itself).
 */
export const updateRootKeyOperation = defineExtension<"rootKeys.updateRootKey", RootKeyRecord>("rootKeys.updateRootKey", {
  access: "write",
  // The root key as it would be after the update reaches no further than the caller.
  authorize: mayActOnRootKey(
    "update",
    ", which it leaves within its own expiry and IP allow-list",
    (root, record, body: { keyId: string; expires?: number | null; ipWhitelist?: string[] }) => {
      const expires = body.expires === undefined ? record.expires : (body.expires ?? undefined);
      const ipWhitelist = body.ipWhitelist ?? record.ipWhitelist;
      requireWithinReach(root, { expires, ipWhitelist }, body.ipWhitelist !== undefined);
    },
  ),
  audit: (body) => ({ targets: [body.keyId] }),
  refine: (body) => checkAllowList("body.ipWhitelist", body.ipWhitelist),
  async run(ctx, body) {
    const record = ctx.resource;
    if (record.id === ctx.root.rootKeyId) {
      throw new ServiceError(
        "application.invalid_input",
        "A root key cannot change itself: sign in with another root key to change this one.",
      );
    }
    if (body.name === null) delete record.name;
    else if (body.name !== undefined) record.name = body.name;
    if (body.expires === null) delete record.expires;
    else if (body.expires !== undefined) record.expires = body.expires;
    if (body.ipWhitelist?.length === 0) delete record.ipWhitelist;
    else if (body.ipWhitelist !== undefined) record.ipWhitelist = [...new Set(body.ipWhitelist)];
    await ctx.tx.put("rootKeys", record);
    const used = await ctx.tx.lastUsed([record.id]);
    return { data: rootKeyView(record, used.get(record.id)) };
  },
});

/** Deletes a root key of the caller's workspace; not the one making the request. */
export const deleteRootKeyOperation = defineExtension<"rootKeys.deleteRootKey", RootKeyRecord>("rootKeys.deleteRootKey", {
  access: "write",
  authorize: mayActOnRootKey("delete", ""),
  audit: (body) => ({ targets: [body.keyId] }),
  async run(ctx) {
    const record = ctx.resource;
    if (record.id === ctx.root.rootKeyId) {
      throw new ServiceError(
        "application.invalid_input",
        "A root key cannot delete itself: sign in with another root key to delete this one.",
      );
    }
    await ctx.tx.delete("rootKeys", record.id);
    return { data: {} };
  },
});
