// Operations apis.createApi, apis.getApi, apis.listKeys and apis.deleteApi.
import { canOnApi, requirePermission, requireSomeApiGrant, type RootContext } from "../auth";
import { applyRefill } from "../credits";
import { newId } from "../ids";
import { apiNotFound, findApi } from "../lookup";
import { defineOperation, type OpContext } from "../operation";
import { paginate } from "../paginate";
import * as s from "../schemas";
import { getRecord, inWorkspace, type ApiRecord } from "../store";
import { bool, obj, str } from "../validate";
import { keyInfoView } from "../views";

function apiForAction(ctx: OpContext, root: RootContext, apiId: string, action: string): ApiRecord {
  requireSomeApiGrant(root, action, apiId);
  const api = findApi(ctx.store, root.workspaceId, apiId);
  if (!api || !canOnApi(root, action, api.id)) throw apiNotFound(apiId);
  return api;
}

export const createApiOperation = defineOperation("apis.createApi", {
  schema: obj({ name: str({ min: 3, max: 255 }) }, ["name"]),
  run(ctx, body) {
    requirePermission(ctx.root, ["api.*.create_api"]);
    const api: ApiRecord = { id: newId("api"), workspaceId: ctx.root.workspaceId, name: body.name, createdAt: ctx.now };
    ctx.store.state.apis[api.id] = api;
    ctx.store.touch();
    return { data: { apiId: api.id } };
  },
});

export const getApiOperation = defineOperation("apis.getApi", {
  schema: obj({ apiId: s.id() }, ["apiId"]),
  run(ctx, body) {
    const api = apiForAction(ctx, ctx.root, body.apiId, "read_api");
    return { data: { id: api.id, name: api.name } };
  },
});

export const listKeysOperation = defineOperation("apis.listKeys", {
  schema: obj(
    { apiId: s.id(), ...s.listFields(), externalId: str({ max: 255 }), decrypt: bool(), revalidateKeysCache: bool() },
    ["apiId"],
  ),
  run(ctx, body) {
    const api = apiForAction(ctx, ctx.root, body.apiId, "read_key");
    const { store } = ctx;
    const keys = inWorkspace(store.state.keys, ctx.root.workspaceId).filter((k) => {
      if (k.apiId !== api.id) return false;
      if (body.externalId === undefined) return true;
      return k.identityId !== undefined && getRecord(store.state.identities, k.identityId)?.externalId === body.externalId;
    });
    const page = paginate(keys, body.cursor, body.limit);
    for (const k of page.items) if (applyRefill(k.credits, ctx.now)) store.touch();
    return { data: page.items.map((k) => keyInfoView(store, k)), pagination: page.pagination };
  },
});

export const deleteApiOperation = defineOperation("apis.deleteApi", {
  schema: obj({ apiId: s.id() }, ["apiId"]),
  run(ctx, body) {
    const api = apiForAction(ctx, ctx.root, body.apiId, "delete_api");
    for (const key of Object.values(ctx.store.state.keys)) if (key.apiId === api.id) ctx.store.deleteKey(key.id);
    delete ctx.store.state.apis[api.id];
    ctx.store.touch();
    return { data: {} };
  },
});
