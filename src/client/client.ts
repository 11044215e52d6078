// createClient and the client's namespaces, mirroring the wire paths (`client.keys.verifyKey` →
// `POST {base}/v2/keys.verifyKey`). Every method goes through the one chokepoint in request.ts.

import type {
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
} from "../protocol/types";
import { assembleClient } from "./assemble";
import type { CreateKeyInput } from "./create-key";
import type { EnsurePermissionInput } from "./ensure-permission";
import { parseClientOptions, type CallOptions, type ClientOptions } from "./options";
import type { ListAllOptions, Page } from "./pagination";
import type { RequestContext } from "./request";
import { defaultRuntime } from "./runtime";
import { createTransport, type Transport } from "./transport";

/** A response's `data` with the envelope's `requestId` as a non-enumerable property. */
export type WithMeta<T> = T & { readonly requestId: string };

export type Req<Op extends OperationName> = Operations[Op]["req"];
type Res<Op extends OperationName> = Operations[Op]["res"];
// `Record<string, never> & { requestId }` would make requestId `never`; empty data is `{}` here.
type DataOf<Op extends OperationName> = Res<Op> extends EmptyData ? Record<never, never> : Res<Op>;
export type ItemOf<Op extends OperationName> = Res<Op> extends ReadonlyArray<infer I> ? I : never;

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
    /** Every override of a namespace (`namespace` required). */
    readonly listAllOverrides: ListAll<RatelimitListOverridesRequest, RatelimitOverride>;
  };
  readonly analytics: {
    /** Runs a SQL query over `key_verifications_v1` (root-key permission `api.*.read_analytics`); resolves to its rows. */
    readonly getVerifications: Method<"analytics.getVerifications">;
  };
  /** The single chokepoint every method goes through, typed by the `Operations` table. */
  request<Op extends OperationName>(operation: Op, body: Req<Op>, options?: CallOptions): Promise<ResultOf<Op>>;
}

/**
 * Creates a client for the key service. Reads `UNKEY_ROOT_KEY` / `UNKEY_BASE_URL` when the options
 * do not give them; throws KeyServiceConfigError on misconfiguration.
 */
export function createClient(options?: ClientOptions): KeyServiceClient {
  return buildClient({ config: parseClientOptions(options), runtime: defaultRuntime });
}

/**
 * Builds the client over a parsed config and a runtime (tests pass a deterministic runtime), with
 * the transport the config asks for unless one is given.
 */
export function buildClient(context: Omit<RequestContext, "transport"> & { transport?: Transport }): KeyServiceClient {
  return assembleClient({ ...context, transport: context.transport ?? createTransport(context.config) });
}

export type { Page, ListAllOptions, EnsurePermissionInput, CreateKeyInput };
