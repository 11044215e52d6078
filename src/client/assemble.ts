// The client's namespaces over one request context (config, runtime, transport): every method a
// call of the one chokepoint in request.ts. Imports no transport, so any runtime can assemble one.

import type { ListIdentitiesRequest, ListOperationName, ListPermissionsRequest, ListRolesRequest, OperationName } from "../protocol/types";
import { invalidationAfter } from "../protocol/invalidation-message";
import type { ItemOf, KeyServiceClient, Req, ResultOf } from "./client";
import { toCreateKeyBody, type CreateKeyInput } from "./create-key";
import { ensurePermission, type EnsurePermissionInput } from "./ensure-permission";
import type { CallOptions } from "./options";
import { paginate, type ListAllOptions, type Page } from "./pagination";
import { sendRequest, type RequestContext } from "./request";
import { createTelemetry } from "./telemetry";
/** The client over `context`: its transport is the caller's choice (undici's pool, or a `fetch`). */
export function assembleClient(context: RequestContext): KeyServiceClient {
  const { config } = context;
  const ctx: RequestContext = {
    ...context,
    telemetry: context.telemetry ?? createTelemetry(config.telemetry, config.baseUrl, config.logger),
  };
  const publisher = ctx.config.invalidate;
  const request = <Op extends OperationName>(operation: Op, body: Req<Op>, options?: CallOptions) => {
    const sent = sendRequest(ctx, operation, body, options) as Promise<ResultOf<Op>>;
    const invalidation = publisher === undefined ? undefined : invalidationAfter(operation, body);
    if (invalidation === undefined) return sent;
    return sent.then(async (result) => {
      await publisher!.invalidate(invalidation);
      return result;
    });
  };
  const method =
    <Op extends OperationName>(operation: Op) =>
    (body: Req<Op>, options?: CallOptions) =>
      request(operation, body, options);
  const listAll =
    <Op extends ListOperationName>(operation: Op) =>
    (body?: Omit<Req<Op>, "cursor">, options?: ListAllOptions): AsyncGenerator<ItemOf<Op>, void, undefined> => {
      const { maxPages, ...call } = options ?? {};
      const fetchPage = (cursor: string | undefined) =>
        request(operation, { ...body, ...(cursor !== undefined && { cursor }) } as Req<Op>, call) as Promise<Page<ItemOf<Op>>>;
      return paginate(operation, fetchPage, maxPages);
    };

  const permissions: KeyServiceClient["permissions"] = Object.freeze({
    createPermission: method("permissions.createPermission"),
    getPermission: method("permissions.getPermission"),
    listPermissions: (body?: ListPermissionsRequest, options?: CallOptions) => request("permissions.listPermissions", body ?? {}, options),
    deletePermission: method("permissions.deletePermission"),
    createRole: method("permissions.createRole"),
    getRole: method("permissions.getRole"),
    listRoles: (body?: ListRolesRequest, options?: CallOptions) => request("permissions.listRoles", body ?? {}, options),
    deleteRole: method("permissions.deleteRole"),
    setRolePermissions: method("permissions.setRolePermissions"),
    listAllPermissions: listAll("permissions.listPermissions"),
    listAllRoles: listAll("permissions.listRoles"),
    ensure: (input: EnsurePermissionInput, options?: CallOptions) => ensurePermission(permissions, input, options),
  });

  return Object.freeze({
    keys: Object.freeze({
      verifyKey: method("keys.verifyKey"),
      createKey: async (body: CreateKeyInput, options?: CallOptions) => request("keys.createKey", toCreateKeyBody(body), options),
      getKey: method("keys.getKey"),
      whoami: method("keys.whoami"),
      updateKey: method("keys.updateKey"),
      deleteKey: method("keys.deleteKey"),
      updateCredits: method("keys.updateCredits"),
      addPermissions: method("keys.addPermissions"),
      removePermissions: method("keys.removePermissions"),
      setPermissions: method("keys.setPermissions"),
      addRoles: method("keys.addRoles"),
      removeRoles: method("keys.removeRoles"),
      setRoles: method("keys.setRoles"),
      rerollKey: method("keys.rerollKey"),
      migrateKeys: method("keys.migrateKeys"),
    }),
    apis: Object.freeze({
      createApi: method("apis.createApi"),
      getApi: method("apis.getApi"),
      listKeys: method("apis.listKeys"),
      deleteApi: method("apis.deleteApi"),
      listAllKeys: listAll("apis.listKeys"),
    }),
    permissions,
    identities: Object.freeze({
      createIdentity: method("identities.createIdentity"),
      getIdentity: method("identities.getIdentity"),
      listIdentities: (body?: ListIdentitiesRequest, options?: CallOptions) => request("identities.listIdentities", body ?? {}, options),
      updateIdentity: method("identities.updateIdentity"),
      deleteIdentity: method("identities.deleteIdentity"),
      listAllIdentities: listAll("identities.listIdentities"),
    }),
    ratelimit: Object.freeze({
      limit: method("ratelimit.limit"),
      multiLimit: method("ratelimit.multiLimit"),
      setOverride: method("ratelimit.setOverride"),
      getOverride: method("ratelimit.getOverride"),
      listOverrides: method("ratelimit.listOverrides"),
      deleteOverride: method("ratelimit.deleteOverride"),
      listAllOverrides: listAll("ratelimit.listOverrides"),
    }),
    analytics: Object.freeze({
      getVerifications: method("analytics.getVerifications"),
    }),
    request,
  });
}
