// Operations apis.createApi, apis.getApi, apis.listKeys and apis.deleteApi.
import { canOnApi, requireOnApi, requirePermission } from "./auth";
import { newId } from "../domain/ids";
import { apiNotFound, findApi } from "../domain/lookup";
import { defineOperation, type OpContext } from "./operation";
import { pageOf, paginate } from "../domain/pagination";
import { plaintextOf, requireDecrypt } from "../domain/recoverable";
import type { ApiRecord } from "../storage/seam";
import { keyInfoView } from "../domain/views";

/** As production: 403 without `api.*.action` / `api.<apiId>.action`, then 404 when missing. */
async function apiForAction(ctx: OpContext, apiId: string, action: string): Promise<ApiRecord> {
  requireOnApi(ctx.root, action, apiId);
  const api = await findApi(ctx.tx, ctx.root.workspaceId, apiId);
  if (!api) throw apiNotFound(apiId);
  return api;
}

export const createApiOperation = defineOperation("apis.createApi", {
  access: "write",
  async run(ctx, body) {
    requirePermission(ctx.root, ["api.*.create_api"]);
    const api: ApiRecord = { id: newId("api"), workspaceId: ctx.root.workspaceId, name: body.name, createdAt: ctx.now };
    await ctx.tx.put("apis", api);
    return { data: { apiId: api.id } };
  },
});

export const getApiOperation = defineOperation("apis.getApi", {
  access: "read",
  async run(ctx, body) {
    const api = await apiForAction(ctx, body.apiId, "read_api");
    return { data: { id: api.id, name: api.name } };
  },
});

export const listKeysOperation = defineOperation("apis.listKeys", {
  access: "read",
  async run(ctx, body) {
    const { tx, root } = ctx;
    // Without read_key and read_api the API is "not found", as production answers.
    const readable = canOnApi(root, "read_key", body.apiId) && canOnApi(root, "read_api", body.apiId);
    const api = readable ? await findApi(tx, root.workspaceId, body.apiId) : undefined;
    if (!api) throw apiNotFound(body.apiId);
    if (body.decrypt) requireDecrypt(root, api, api.id, "The requested API does not support key encryption.");
    let page;
    if (body.externalId === undefined) {
      page = await pageOf((from, limit) => tx.list("keys", root.workspaceId, { from, limit, where: { field: "apiId", value: api.id } }), body.cursor, body.limit);
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
  async run(ctx, body) {
    const api = await apiForAction(ctx, body.apiId, "delete_api");
    // Its keys (and their counters) go with it.
    await ctx.tx.delete("apis", api.id);
    return { data: {} };
  },
});
