// keyguard's own operations, outside production's v2 API: listing the workspace's APIs and managing
// its root keys. Production does both in its dashboard only; keyguard serves them over the same
// public HTTP API (root key, permission tuples, envelopes) so that its console, or any client,
// needs no private way in.
import { canOnApi, PERMISSION_TUPLE, requirePermission } from "./auth";
import { ServiceError } from "../http/envelope";
import { newId } from "../domain/ids";
import { generateKey } from "../domain/key-material";
import { defineExtension } from "./operation";
import { pageOf } from "../domain/pagination";
import type { RootKeyItem } from "../../protocol/types";
import type { RootKeyRecord } from "../storage/seam";

function rootKeyView(r: RootKeyRecord): RootKeyItem {
  return { keyId: r.id, ...(r.name === undefined ? {} : { name: r.name }), permissions: [...r.permissions], createdAt: r.createdAt };
}

/** The APIs of the root key's workspace it may read (`api.*.read_api` or `api.<id>.read_api`). */
export const listApisOperation = defineExtension("apis.listApis", {
  access: "read",
  async run(ctx, body) {
    const ws = ctx.root.workspaceId;
    const page = await pageOf(
      (from, limit) => ctx.tx.list("apis", ws, { from, limit }),
      body.cursor,
      body.limit,
      (api) => canOnApi(ctx.root, "read_api", api.id),
    );
    return { data: page.items.map((a) => ({ id: a.id, name: a.name, createdAt: a.createdAt })), pagination: page.pagination };
  },
});

/**
 * A new root key of the caller's workspace holding `permissions`, each of which the caller must
 * hold itself or through its wildcard form (no root key makes a stronger one). The key is answered once and stored hashed.
 */
export const createRootKeyOperation = defineExtension("rootKeys.createRootKey", {
  access: "write",
  refine(body) {
    return body.permissions.flatMap((p, i) =>
      PERMISSION_TUPLE.test(p)
        ? []
        : [{ location: `body.permissions[${i}]`, message: `is not a permission tuple: ${JSON.stringify(p)}`, fix: 'Use tuples like "api.*.verify_key".' }],
    );
  },
  async run(ctx, body) {
    requirePermission(ctx.root, ["workspace.*.create_root_key"]);
    // Held: the tuple itself, or its wildcard form (`api.*.read_api` covers `api.<id>.read_api`).
    const held = (p: string) => ctx.root.permissions.has(p) || ctx.root.permissions.has(p.replace(/^([a-z_]+)\.[^.]+\./, "$1.*."));
    const missing = body.permissions.filter((p) => !held(p));
    if (missing.length > 0) {
      throw new ServiceError(
        "authorization.insufficient_permissions",
        `A root key can only grant permissions it holds itself; this one lacks: ${[...new Set(missing)].join(", ")}`,
      );
    }
    const { key, hash } = generateKey("root", 24);
    const record: RootKeyRecord = {
      id: newId("rk"),
      workspaceId: ctx.root.workspaceId,
      hash,
      permissions: [...new Set(body.permissions)],
      createdAt: ctx.now,
      ...(body.name === undefined ? {} : { name: body.name }),
    };
    await ctx.tx.put("rootKeys", record);
    return { data: { keyId: record.id, key } };
  },
});

export const listRootKeysOperation = defineExtension("rootKeys.listRootKeys", {
  access: "read",
  async run(ctx, body) {
    requirePermission(ctx.root, ["workspace.*.read_root_key"]);
    const ws = ctx.root.workspaceId;
    const page = await pageOf((from, limit) => ctx.tx.list("rootKeys", ws, { from, limit }), body.cursor, body.limit);
    return { data: page.items.map(rootKeyView), pagination: page.pagination };
  },
});

/** Deletes a root key of the caller's workspace; not the one making the request. */
export const deleteRootKeyOperation = defineExtension("rootKeys.deleteRootKey", {
  access: "write",
  async run(ctx, body) {
    requirePermission(ctx.root, ["workspace.*.delete_root_key"]);
    const record = await ctx.tx.get("rootKeys", body.keyId);
    if (!record || record.workspaceId !== ctx.root.workspaceId) {
      throw new ServiceError("data.key_not_found", `The root key ${JSON.stringify(body.keyId)} does not exist in this workspace.`);
    }
    if (record.id === ctx.root.rootKeyId) {
      throw new ServiceError("application.invalid_input", "A root key cannot delete itself: sign in with another root key to delete this one.");
    }
    await ctx.tx.delete("rootKeys", record.id);
    return { data: {} };
  },
});
