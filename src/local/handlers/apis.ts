// Operations apis.createApi, apis.getApi, apis.listKeys and apis.deleteApi.
import { canOnApi, requirePermission, requireSomeApiGrant } from "../auth";
import { newId } from "../ids";
import { apiNotFound, findApi } from "../lookup";
import { defineOperation, type OpContext } from "../operation";
import { pageOf, paginate } from "../paginate";
import * as s from "../schemas";
import type { ApiRecord } from "../storage";
import { bool, obj, str } from "../validate";
import { keyInfoView } from "../views";

async function apiForAction(ctx: OpContext, apiId: string, action: string): Promise<ApiRecord> {
  requireSomeApiGrant(ctx.root, action, apiId);
  const api = await findApi(ctx.tx, ctx.root.workspaceId, apiId);
  if (!api || !canOnApi(ctx.root, action, api.id)) throw apiNotFound(apiId);
  return api;
}

export const createApiOperation = defineOperation("apis.createApi", {
  access: "write",
  schema: obj({ name: str({ min: 3, max: 255 }) }, ["name"]),
  async run(ctx, body) {
    requirePermission(ctx.root, ["api.*.create_api"]);
    const api: ApiRecord = { id: newId("api"), workspaceId: ctx.root.workspaceId, name: body.name, createdAt: ctx.now };
    await ctx.tx.put("apis", api);
    return { data: { apiId: api.id } };
  },
});

export const getApiOperation = defineOperation("apis.getApi", {
  access: "read",
  schema: obj({ apiId: s.id() }, ["apiId"]),
  async run(ctx, body) {
    const api = await apiForAction(ctx, body.apiId, "read_api");
    return { data: { id: api.id, name: api.name } };
  },
});

export const listKeysOperation = defineOperation("apis.listKeys", {
  access: "read",
  schema: obj(
    { apiId: s.id(), ...s.listFields(), externalId: str({ max: 255 }), decrypt: bool(), revalidateKeysCache: bool() },
    ["apiId"],
  ),
  async run(ctx, body) {
    const api = await apiForAction(ctx, body.apiId, "read_key");
    const { tx, root } = ctx;
    let page;
    if (body.externalId === undefined) {
      page = await pageOf((from, limit) => tx.list("keys", root.workspaceId, { from, limit, where: { field: "apiId", value: api.id } }), body.cursor, body.limit);
    } else {
      // Only an identity's own externalId matches (not its id).
      const identity = (await tx.find("identities", root.workspaceId, "externalId", body.externalId))[0];
      const keys = identity ? (await tx.find("keys", root.workspaceId, "identityId", identity.id)).filter((k) => k.apiId === api.id) : [];
      page = paginate(keys, body.cursor, body.limit);
    }
    const data = await Promise.all(page.items.map((k) => keyInfoView(tx, k, ctx.now)));
    return { data, pagination: page.pagination };
  },
});

export const deleteApiOperation = defineOperation("apis.deleteApi", {
  access: "write",
  schema: obj({ apiId: s.id() }, ["apiId"]),
  async run(ctx, body) {
    const api = await apiForAction(ctx, body.apiId, "delete_api");
    // Its keys (and their counters) go with it.
    await ctx.tx.delete("apis", api.id);
    return { data: {} };
  },
});
