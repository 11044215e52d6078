// Operations apis.createApi, apis.getApi, apis.listKeys and apis.deleteApi.
import { onApi, permission } from "./authorization";
import { newId } from "../domain/ids";
import { apiNotFound } from "../domain/lookup";
import { defineOperation } from "./operation";
import { pageOf, paginate } from "../domain/pagination";
import { plaintextOf, requireStorage } from "../domain/recoverable";
import type { ApiRecord } from "../storage/seam";
import { keyInfoView } from "../domain/views";

export const createApiOperation = defineOperation("apis.createApi", {
  access: "write",
  authorize: permission("api.*.create_api"),
  async run(ctx, body) {
    const api: ApiRecord = { id: newId("api"), workspaceId: ctx.root.workspaceId, name: body.name, createdAt: ctx.now };
    await ctx.tx.put("apis", api);
    return { data: { apiId: api.id } };
  },
});

export const getApiOperation = defineOperation("apis.getApi", {
  access: "read",
  // As production: 403 without the permission, then 404 when the API is missing.
  authorize: onApi("read_api", (body) => body.apiId),
  async run(ctx) {
    const api = ctx.resource;
    return { data: { id: api.id, name: api.name } };
  },
});

export const listKeysOperation = defineOperation("apis.listKeys", {
  access: "read",
  // Without read_key and read_api the API is "not found", as production answers; decrypt_key is a 403.
  authorize: onApi(["read_key", "read_api"], (body) => body.apiId, { masked: apiNotFound, also: (body) => body.decrypt && "decrypt_key" }),
  async run(ctx, body) {
    const { tx, root, resource: api } = ctx;
    if (body.decrypt) requireStorage(api, "The requested API does not support key encryption.");
    let page;
    if (body.externalId === undefined) {
      page = await pageOf(
        (from, limit) => tx.list("keys", root.workspaceId, { from, limit, where: { field: "apiId", value: api.id } }),
        body.cursor,
        body.limit,
      );
    } else {
      // Only an identity's own externalId matches (not its id).
      const identity = (await tx.find("identities", root.workspaceId, "externalId", body.externalId))[0];
      const keys = identity ? (await tx.find("keys", root.workspaceId, "identityId", identity.id)).filter((k) => k.apiId === api.id) : [];
      page = paginate(keys, body.cursor, body.limit);
    }
    const lastUsed = await tx.lastUsed(page.items.map((k) => k.id));
    const data = await Promise.all(
      page.items.map(async (k) => {
        const info = await keyInfoView(tx, k, ctx.now, lastUsed);
        const plaintext = body.decrypt ? plaintextOf(ctx.vault, k) : undefined;
        if (plaintext !== undefined) info.plaintext = plaintext;
        return info;
      }),
    );
    return { data, pagination: page.pagination };
  },
});

export const deleteApiOperation = defineOperation("apis.deleteApi", {
  access: "write",
  authorize: onApi("delete_api", (body) => body.apiId),
  async run(ctx) {
    const api = ctx.resource;
    // Its keys (and their counters) go with it.
    await ctx.tx.delete("apis", api.id);
    return { data: {} };
  },
});
