// Operations apis.createApi, apis.getApi, apis.listKeys (with keyguard's own search and sort) and
// apis.deleteApi, and keyguard's own apis.getApiSettings and apis.updateApi (an API's name and settings).
import { onApi, permission } from "./authorization";
import { checkAllowList } from "../domain/ip-allowlist";
import { newId } from "../domain/ids";
import { apiNotFound, readKeyInfo } from "./lookup";
import { defineExtension, defineOperation } from "./operation";
import { matchesSearch, pageOf, paginate } from "../domain/pagination";
import { decodeSortCursor, encodeSortCursor, positionOf, sortKeys, type KeyPosition } from "../domain/key-sort";
import { described } from "../domain/caller-value";
import { plaintextOf, requireStorage, requireVault } from "./recoverable";
import type { ApiRecord, KeyRecord } from "../records";
import { apiSettingsView, apiView } from "../domain/views";

export const createApiOperation = defineOperation("apis.createApi", {
  access: "write",
  // It reads nothing: the API and its audit record in one statement where the store can.
  optimistic: () => true,
  authorize: permission("api.*.create_api"),
  audit: (_body, data) => ({ targets: [data.apiId] }),
  async run(ctx, body) {
    const api: ApiRecord = { id: newId("api"), workspaceId: ctx.root.workspaceId, name: body.name, createdAt: ctx.now };
    // keyguard's own field; today's format stays the default.
    if (body.keyFormat === "checksummed") api.keyFormat = "checksummed";
    if (body.leakResponse !== undefined) api.leakResponse = body.leakResponse;
    if (body.creditsLowThreshold !== undefined) api.creditsLowThreshold = body.creditsLowThreshold;
    await ctx.tx.put("apis", api);
    return { data: { apiId: api.id } };
  },
});

export const getApiOperation = defineOperation("apis.getApi", {
  access: "read",
  // As production: 403 without the permission, then 404 when the API is missing.
  authorize: onApi("read_api", (body) => body.apiId),
  run: async (ctx) => ({ data: apiView(ctx.resource) }),
});

/** keyguard's own: an API with its settings, which production's getApi answer has no room for. */
export const getApiSettingsOperation = defineExtension<"apis.getApiSettings", ApiRecord>("apis.getApiSettings", {
  access: "read",
  authorize: onApi("read_api", (body) => body.apiId),
  run: async (ctx) => ({ data: apiSettingsView(ctx.resource) }),
});

/**
 * keyguard's own: changes an API's name and settings. An omitted field is unchanged;
 * `ipWhitelist: []` clears the list; `creditsLowThreshold: null` removes the threshold;
 * `storeKeys: true` needs a key-encryption key (412 without).
 */
export const updateApiOperation = defineExtension<"apis.updateApi", ApiRecord>("apis.updateApi", {
  access: "write",
  authorize: onApi("update_api", (body) => body.apiId),
  audit: (body) => ({ targets: [body.apiId] }),
  refine: (body) => checkAllowList("body.ipWhitelist", body.ipWhitelist),
  async run(ctx, body) {
    const api = ctx.resource;
    if (body.storeKeys === true) requireVault(ctx);
    if (body.name !== undefined) api.name = body.name;
    if (body.ipWhitelist !== undefined) {
      if (body.ipWhitelist.length === 0) delete api.ipWhitelist;
      else api.ipWhitelist = [...new Set(body.ipWhitelist)];
    }
    if (body.storeKeys !== undefined) {
      if (body.storeKeys) api.storeKeys = true;
      else delete api.storeKeys;
    }
    if (body.keyFormat !== undefined) api.keyFormat = body.keyFormat;
    if (body.leakResponse !== undefined) api.leakResponse = body.leakResponse;
    if (body.creditsLowThreshold === null) delete api.creditsLowThreshold;
    else if (body.creditsLowThreshold !== undefined) api.creditsLowThreshold = body.creditsLowThreshold;
    await ctx.tx.put("apis", api);
    return { data: apiSettingsView(api) };
  },
});

export const listKeysOperation = defineOperation("apis.listKeys", {
  access: "read",
  // Without read_key and read_api the API is "not found", as production answers; decrypt_key is a 403.
  authorize: onApi(["read_key", "read_api"], (body) => body.apiId, { masked: apiNotFound, also: (body) => body.decrypt && "decrypt_key" }),
  // keyguard's own `sort`: a cursor must be one a page of the same sort answered.
  refine: (body) =>
    body.sort && body.cursor !== undefined && decodeSortCursor(body.sort, body.cursor) === undefined
      ? [
          {
            location: "body.cursor",
            message: `${described("body.cursor", body.cursor)} is not a cursor of this sort.`,
            fix: "Pass the cursor the previous page of the same sort answered, or omit it for the first page.",
          },
        ]
      : [],
  async run(ctx, body) {
    const { tx, root, resource: api } = ctx;
    if (body.decrypt) requireStorage(api, "The requested API does not support key encryption.");
    // keyguard's own `search`: a scan of the API's keys in id order, a chunk at a time (see docs/server.md).
    const keep = body.search === undefined ? undefined : (k: KeyRecord) => matchesSearch(body.search, k.id, k.name, k.start);
    const sort = body.sort;
    const from = sort && body.cursor !== undefined ? decodeSortCursor(sort, body.cursor) : undefined;
    let page;
    if (body.externalId === undefined) {
      page = sort
        ? await pageOf(
            (at: KeyPosition | undefined, limit) => tx.sortedKeys(root.workspaceId, api.id, sort, { from: at, limit }),
            from,
            body.limit,
            keep,
            { of: (k) => positionOf(k, sort.by), cursor: (k) => encodeSortCursor(sort, positionOf(k, sort.by)) },
          )
        : await pageOf(
            (at, limit) => tx.list("keys", root.workspaceId, { from: at, limit, where: { field: "apiId", value: api.id } }),
            body.cursor,
            body.limit,
            keep,
          );
    } else {
      // Only an identity's own externalId matches (not its id).
      const identity = (await tx.find("identities", root.workspaceId, "externalId", body.externalId))[0];
      const keys = identity
        ? (await tx.find("keys", root.workspaceId, "identityId", identity.id)).filter((k) => k.apiId === api.id && (!keep || keep(k)))
        : [];
      page = sort
        ? await pageOf(
            async (at: KeyPosition | undefined, limit) => sortKeys(keys, sort, at).slice(0, limit),
            from,
            body.limit,
            undefined,
            {
              of: (k) => positionOf(k, sort.by),
              cursor: (k) => encodeSortCursor(sort, positionOf(k, sort.by)),
            },
          )
        : paginate(keys, body.cursor, body.limit);
    }
    const lastUsed = await tx.lastUsed(page.items.map((k) => k.id));
    const data = await Promise.all(
      page.items.map(async (k) => {
        const info = await readKeyInfo(tx, k, ctx.now, lastUsed);
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
  audit: (body) => ({ targets: [body.apiId] }),
  async run(ctx) {
    const api = ctx.resource;
    // Its keys (and their counters) go with it.
    await ctx.tx.delete("apis", api.id);
    return { data: {} };
  },
});
