// The client's shape and its assembly: `KeyServiceClient`, whose namespaces mirror the wire paths
// (`client.keys.verifyKey` → `POST {base}/v2/keys.verifyKey`), built over one request context (config,
// runtime, transport) with every method a call of the one chokepoint in request.ts. Imports no
// transport, so any runtime can assemble one.

import type {
  ContractOperations,
  CreateApiRequest,
  CreateApiResult,
  CreateIdentityRequest,
  CreateIdentityResult,
  CreateKeyResult,
  CreatePermissionRequest,
  CreatePermissionResult,
  CreateRoleRequest,
  CreateRoleResult,
  EmptyData,
  Identity,
  KeyInfo,
  ListIdentitiesRequest,
  ListKeysRequest,
  ListOperationName,
  ListPermissionsRequest,
  ListRolesRequest,
  OperationName,
  Operations,
  Permission,
  RatelimitListOverridesRequest,
  RatelimitOverride,
  Role,
  WebhookDeliveryItem,
} from "../protocol/types";
import { invalidationAfter } from "../protocol/invalidation-message";
import { toCreateKeyBody, type CreateKeyInput } from "./create-key";
import { ensurePermission, type EnsurePermissionInput } from "./ensure-permission";
import { KeyServiceConfigError } from "./errors";
import type { CallOptions } from "./options";
import { paginate, type ListAllOptions, type Page } from "./pagination";
import { sendRequest, type RequestContext } from "./request";
import { createTelemetry } from "./telemetry";

/** A response's `data` with the envelope's `requestId` as a non-enumerable property. */
export type WithMeta<T> = T & { readonly requestId: string };

type Req<Op extends OperationName> = Operations[Op]["req"];
type Res<Op extends OperationName> = Operations[Op]["res"];
// `Record<string, never> & { requestId }` would make requestId `never`; empty data is `{}` here.
type DataOf<Op extends OperationName> = Res<Op> extends EmptyData ? Record<never, never> : Res<Op>;
type ItemOf<Op extends OperationName> = Res<Op> extends ReadonlyArray<infer I> ? I : never;

type Ext = ContractOperations;
type ExtData<N extends keyof Ext> = Ext[N]["res"] extends EmptyData ? Record<never, never> : Ext[N]["res"];
/** One of keyguard's own operations as a method. */
type ExtensionMethod<N extends keyof Ext> = (body: Ext[N]["req"], options?: CallOptions) => Promise<WithMeta<ExtData<N>>>;

/** What `client.request(op, …)` and the namespace methods resolve to. */
export type ResultOf<Op extends OperationName> = Op extends ListOperationName ? Page<ItemOf<Op>> : WithMeta<DataOf<Op>>;

/** One operation as a method: `(body, callOptions?) => Promise<data>`. */
export type Method<Op extends OperationName> = (body: Req<Op>, options?: CallOptions) => Promise<ResultOf<Op>>;
/** A list operation whose body is optional. */
export type ListMethod<Op extends OperationName> = (body?: Req<Op>, options?: CallOptions) => Promise<ResultOf<Op>>;
/** Iterates every item of every page. */
export type ListAll<Body, Item> = (body?: Omit<Body, "cursor">, options?: ListAllOptions) => AsyncGenerator<Item, void, undefined>;

export interface KeyServiceClient {
  readonly keys: {
    readonly verifyKey: Method<"keys.verifyKey">;
    /** Also accepts the flat `remaining`/`refill` (sent as `credits`); both shapes at once → TypeError. */
    readonly createKey: (body: CreateKeyInput, options?: CallOptions) => Promise<WithMeta<CreateKeyResult>>;
    readonly getKey: Method<"keys.getKey">;
    readonly whoami: Method<"keys.whoami">;
    readonly updateKey: Method<"keys.updateKey">;
    readonly deleteKey: Method<"keys.deleteKey">;
    readonly updateCredits: Method<"keys.updateCredits">;
    readonly addPermissions: Method<"keys.addPermissions">;
    readonly removePermissions: Method<"keys.removePermissions">;
    readonly setPermissions: Method<"keys.setPermissions">;
    readonly addRoles: Method<"keys.addRoles">;
    readonly removeRoles: Method<"keys.removeRoles">;
    readonly setRoles: Method<"keys.setRoles">;
    readonly rerollKey: Method<"keys.rerollKey">;
    readonly migrateKeys: Method<"keys.migrateKeys">;
  };
  readonly apis: {
    readonly createApi: (body: CreateApiRequest, options?: CallOptions) => Promise<WithMeta<CreateApiResult>>;
    readonly getApi: Method<"apis.getApi">;
    readonly listKeys: Method<"apis.listKeys">;
    readonly deleteApi: Method<"apis.deleteApi">;
    /** Every key of an API (`apiId` required). */
    readonly listAllKeys: (body: Omit<ListKeysRequest, "cursor">, options?: ListAllOptions) => AsyncGenerator<KeyInfo, void, undefined>;
  };
  readonly permissions: {
    readonly createPermission: (body: CreatePermissionRequest, options?: CallOptions) => Promise<WithMeta<CreatePermissionResult>>;
    readonly getPermission: Method<"permissions.getPermission">;
    readonly listPermissions: ListMethod<"permissions.listPermissions">;
    readonly deletePermission: Method<"permissions.deletePermission">;
    readonly createRole: (body: CreateRoleRequest, options?: CallOptions) => Promise<WithMeta<CreateRoleResult>>;
    readonly getRole: Method<"permissions.getRole">;
    readonly listRoles: ListMethod<"permissions.listRoles">;
    readonly deleteRole: Method<"permissions.deleteRole">;
    readonly setRolePermissions: Method<"permissions.setRolePermissions">;
    readonly listAllPermissions: ListAll<ListPermissionsRequest, Permission>;
    readonly listAllRoles: ListAll<ListRolesRequest, Role>;
    /** Finds the permission named `name` or creates it (slug defaults to `name`); resolves to its id. */
    readonly ensure: (input: EnsurePermissionInput, options?: CallOptions) => Promise<string>;
  };
  readonly identities: {
    readonly createIdentity: (body: CreateIdentityRequest, options?: CallOptions) => Promise<WithMeta<CreateIdentityResult>>;
    readonly getIdentity: Method<"identities.getIdentity">;
    readonly listIdentities: ListMethod<"identities.listIdentities">;
    readonly updateIdentity: Method<"identities.updateIdentity">;
    readonly deleteIdentity: Method<"identities.deleteIdentity">;
    readonly listAllIdentities: ListAll<ListIdentitiesRequest, Identity>;
  };
  readonly ratelimit: {
    readonly limit: Method<"ratelimit.limit">;
    readonly multiLimit: Method<"ratelimit.multiLimit">;
    readonly setOverride: Method<"ratelimit.setOverride">;
    readonly getOverride: Method<"ratelimit.getOverride">;
    readonly listOverrides: Method<"ratelimit.listOverrides">;
    readonly deleteOverride: Method<"ratelimit.deleteOverride">;
    /** keyguard's own: the outcomes of ratelimit.limit in one namespace, per hour or day, zero-filled. */
    readonly getNamespaceUsage: ExtensionMethod<"ratelimit.getNamespaceUsage">;
    /** Every override of a namespace (`namespace` required). */
    readonly listAllOverrides: ListAll<RatelimitListOverridesRequest, RatelimitOverride>;
  };
  readonly analytics: {
    /** Runs a SQL query over `key_verifications_v1` (root-key permission `api.*.read_analytics`); resolves to its rows. */
    readonly getVerifications: Method<"analytics.getVerifications">;
  };
  /** keyguard's own webhooks.* operations (docs/events.md); each needs its `workspace.*.…_webhook` permission. */
  readonly webhooks: {
    readonly createEndpoint: ExtensionMethod<"webhooks.createEndpoint">;
    readonly listEndpoints: ExtensionMethod<"webhooks.listEndpoints">;
    readonly updateEndpoint: ExtensionMethod<"webhooks.updateEndpoint">;
    readonly deleteEndpoint: ExtensionMethod<"webhooks.deleteEndpoint">;
    readonly enableEndpoint: ExtensionMethod<"webhooks.enableEndpoint">;
    readonly pauseEndpoint: ExtensionMethod<"webhooks.pauseEndpoint">;
    readonly resumeEndpoint: ExtensionMethod<"webhooks.resumeEndpoint">;
    readonly rotateSecret: ExtensionMethod<"webhooks.rotateSecret">;
    readonly listEventTypes: ExtensionMethod<"webhooks.listEventTypes">;
    readonly sendTestEvent: ExtensionMethod<"webhooks.sendTestEvent">;
    /** A page of messages, newest first (`pagination.cursor` asks for the next). */
    readonly listDeliveries: (body?: Ext["webhooks.listDeliveries"]["req"], options?: CallOptions) => Promise<Page<WebhookDeliveryItem>>;
    readonly getDelivery: ExtensionMethod<"webhooks.getDelivery">;
    readonly resendDelivery: ExtensionMethod<"webhooks.resendDelivery">;
    readonly resendFailed: ExtensionMethod<"webhooks.resendFailed">;
  };
  /**
   * The customer portal (docs/portal.md): production's portal.createSession and exchangeCode,
   * keyguard's own portal configuration, and `session(accessToken)`, an end user's own operations.
   */
  readonly portal: {
    /** Mints a session for one end user (`portal.*.create_portal_session`); redirect them to `url`. */
    readonly createSession: Method<"portal.createSession">;
    /** The URL's single-use code for a 24-hour access token (unauthenticated). */
    readonly exchangeCode: Method<"portal.exchangeCode">;
    readonly createPortal: ExtensionMethod<"portal.createPortal">;
    readonly getPortal: ExtensionMethod<"portal.getPortal">;
    readonly listPortals: ExtensionMethod<"portal.listPortals">;
    readonly updatePortal: ExtensionMethod<"portal.updatePortal">;
    readonly deletePortal: ExtensionMethod<"portal.deletePortal">;
    /** One end user's session: its calls send the access token instead of the root key. */
    session(accessToken: string): PortalSessionClient;
  };
  /** The single chokepoint every method goes through, typed by the `Operations` table. */
  request<Op extends OperationName>(operation: Op, body: Req<Op>, options?: CallOptions): Promise<ResultOf<Op>>;
  /**
   * Closes the client's connections once the calls in flight have ended, and resolves then. Calls
   * made afterwards reject with a KeyServiceConfigError (option `close`). Calling it again returns
   * the same promise.
   */
  close(): Promise<void>;
}

/** A portal session's own operations, each sent with its access token (`Authorization: Bearer pat_…`). */
export interface PortalSessionClient {
  /** A page of the end user's keys (`keys:read`). */
  readonly listKeys: ListMethod<"portal.listKeys">;
  /** Rerolls one of the end user's keys (`keys:reroll`); the old one keeps working for `expiration` ms. */
  readonly rerollKey: Method<"portal.rerollKey">;
  /** The end user's verifications, zero-filled, by outcome (`analytics:read`). */
  readonly getVerifications: Method<"portal.getVerifications">;
  readonly getSession: ExtensionMethod<"portal.getSession">;
  readonly createKey: ExtensionMethod<"portal.createKey">;
  readonly setKeyEnabled: ExtensionMethod<"portal.setKeyEnabled">;
  readonly deleteKey: ExtensionMethod<"portal.deleteKey">;
}

/** The client over `context`: its transport is the caller's choice (undici's pool, or a `fetch`). */
export function assembleClient(context: RequestContext): KeyServiceClient {
  const { config } = context;
  const ctx: RequestContext = {
    ...context,
    telemetry: context.telemetry ?? createTelemetry(config.telemetry, config.baseUrl, config.logger),
  };
  const publisher = ctx.config.invalidate;
  let closing: Promise<void> | undefined;
  const request = <Op extends OperationName>(operation: Op, body: Req<Op>, options?: CallOptions, bearer?: string) => {
    if (closing !== undefined) {
      const message = `${String(operation).slice(0, 80)}: this client was closed (client.close()); create another with createClient().`;
      return Promise.reject(new KeyServiceConfigError("close", message));
    }
    const sent = sendRequest(ctx, operation, body, options, bearer) as Promise<ResultOf<Op>>;
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

  const extension =
    <N extends keyof Ext>(operation: N, bearer?: string): ExtensionMethod<N> =>
    async (body, options) => {
      const result = (await sendRequest(ctx, operation, body, options, bearer)) as WithMeta<ExtData<N>>;
      const invalidation = publisher === undefined ? undefined : invalidationAfter(operation, body);
      if (invalidation !== undefined) await publisher!.invalidate(invalidation);
      return result;
    };

  const session = (accessToken: string): PortalSessionClient => {
    if (typeof accessToken !== "string" || !accessToken.startsWith("pat_")) {
      throw new KeyServiceConfigError(
        "accessToken",
        "portal.session(accessToken): pass the accessToken portal.exchangeCode answered (pat_…).",
      );
    }
    return Object.freeze({
      listKeys: (body?: Req<"portal.listKeys">, options?: CallOptions) => request("portal.listKeys", body ?? {}, options, accessToken),
      rerollKey: (body: Req<"portal.rerollKey">, options?: CallOptions) => request("portal.rerollKey", body, options, accessToken),
      getVerifications: (body: Req<"portal.getVerifications">, options?: CallOptions) =>
        request("portal.getVerifications", body, options, accessToken),
      getSession: extension("portal.getSession", accessToken),
      createKey: extension("portal.createKey", accessToken),
      setKeyEnabled: extension("portal.setKeyEnabled", accessToken),
      deleteKey: extension("portal.deleteKey", accessToken),
    });
  };

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
      getNamespaceUsage: extension("ratelimit.getNamespaceUsage"),
      listAllOverrides: listAll("ratelimit.listOverrides"),
    }),
    analytics: Object.freeze({
      getVerifications: method("analytics.getVerifications"),
    }),
    webhooks: Object.freeze({
      createEndpoint: extension("webhooks.createEndpoint"),
      listEndpoints: extension("webhooks.listEndpoints"),
      updateEndpoint: extension("webhooks.updateEndpoint"),
      deleteEndpoint: extension("webhooks.deleteEndpoint"),
      enableEndpoint: extension("webhooks.enableEndpoint"),
      pauseEndpoint: extension("webhooks.pauseEndpoint"),
      resumeEndpoint: extension("webhooks.resumeEndpoint"),
      rotateSecret: extension("webhooks.rotateSecret"),
      listEventTypes: extension("webhooks.listEventTypes"),
      sendTestEvent: extension("webhooks.sendTestEvent"),
      listDeliveries: (body?: Ext["webhooks.listDeliveries"]["req"], options?: CallOptions) =>
        sendRequest(ctx, "webhooks.listDeliveries", body ?? {}, options) as Promise<Page<WebhookDeliveryItem>>,
      getDelivery: extension("webhooks.getDelivery"),
      resendDelivery: extension("webhooks.resendDelivery"),
      resendFailed: extension("webhooks.resendFailed"),
    }),
    portal: Object.freeze({
      createSession: method("portal.createSession"),
      exchangeCode: method("portal.exchangeCode"),
      createPortal: extension("portal.createPortal"),
      getPortal: extension("portal.getPortal"),
      listPortals: extension("portal.listPortals"),
      updatePortal: extension("portal.updatePortal"),
      deletePortal: extension("portal.deletePortal"),
      session,
    }),
    request,
    close: () => (closing ??= ctx.transport.close()),
  });
}

export type { Page, ListAllOptions, EnsurePermissionInput, CreateKeyInput };
