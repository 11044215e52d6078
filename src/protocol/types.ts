// Wire types of the key service's v2 protocol: request bodies and response `data` (derived from the
// contract's schemas in ./contract), envelopes, and the operation table.

import type { Static } from "typebox";
import type { CONTRACT, EXTENSION_CONTRACT } from "./contract";
import type * as analytics from "./contract/analytics";
import type * as apis from "./contract/apis";
import type * as fields from "./contract/fields";
import type * as identities from "./contract/identities";
import type * as keys from "./contract/keys";
import type * as permissions from "./contract/permissions";
import type * as ratelimit from "./contract/ratelimit";
import type * as resources from "./contract/resources";
import type * as rootKeys from "./contract/root-keys";
import type * as audit from "./contract/audit";
import type * as webhooks from "./contract/webhooks";
import type * as portal from "./contract/portal";
import type * as webhookPayloads from "./contract/webhook-payloads";

/** Free-form JSON metadata attached to a key or an identity. */
export type Meta = Static<typeof resources.MetaData>;

// ---------------------------------------------------------------------------------------------
// Envelopes

export interface ResponseMeta {
  requestId: string;
}

export interface Pagination {
  /** Id of the next page's first item; absent on the last page. */
  cursor?: string;
  hasMore: boolean;
}

export interface SuccessEnvelope<T> {
  meta: ResponseMeta;
  data: T;
  pagination?: Pagination;
}

export interface ValidationErrorDetail {
  location: string;
  message: string;
  fix?: string;
}

export interface ErrorBody {
  title: string;
  detail: string;
  status: number;
  type: string;
  /** Present on every 400. */
  errors?: ValidationErrorDetail[];
}

export interface ErrorEnvelope {
  meta: ResponseMeta;
  error: ErrorBody;
}

/** Body of operations that answer with nothing (`data: {}`). */
export type EmptyData = Static<typeof resources.EmptyData>;

/** Paging parameters shared by every list operation. */
export interface ListRequest {
  cursor?: string;
  /** 1..100, default 100. */
  limit?: number;
}

// ---------------------------------------------------------------------------------------------
// Shared resources (the schemas, with their limits, are in ./contract)

/** Verification outcome codes. The list is open: treat an unknown code as invalid. */
export type KnownVerifyCode = Static<typeof resources.KnownVerifyCode>;
export type VerifyCode = Static<typeof resources.VerifyCode>;
/** A rate limit as configured on a key or an identity (input). */
export type RatelimitRequest = Static<typeof fields.RatelimitRequest>;
/** A rate limit as reported on a key or an identity (output). */
export type RatelimitConfig = Static<typeof resources.RatelimitConfig>;
/** State of one rate limit after a verification. */
export type VerifyRatelimitState = Static<typeof resources.VerifyRatelimitState>;
export type Identity = Static<typeof resources.Identity>;
export type Permission = Static<typeof resources.Permission>;
export type Role = Static<typeof resources.Role>;
export type RefillInterval = Static<typeof fields.RefillInterval>;
export type CreditsRefill = Static<typeof fields.CreditsRefill>;
export type KeyCredits = Static<typeof resources.KeyCredits>;
/** keyguard's own: one secret-scanning report of a key (`KeyInfo.leakReports`). */
export type LeakReport = Static<typeof resources.LeakReport>;
/** A key as returned by getKey, whoami and listKeys. Never holds the full key. */
export type KeyInfo = Static<typeof resources.KeyInfo>;
/** keyguard's own keys.getKeySettings: a key's settings production's key has not. */
export type KeySettings = Static<typeof resources.KeySettings>;
/** A key with its settings, as the console shows it (keys.getKey's answer and keys.getKeySettings'). */
export type KeyWithSettings = KeyInfo & Omit<KeySettings, "keyId">;

// ---------------------------------------------------------------------------------------------
// keys.*

export type VerifyKeyRequest = Static<typeof keys.VerifyKeyRequest>;
export type VerifyKeyResult = Static<typeof keys.VerifyKeyResult>;
type CreateKeyBody = Static<typeof keys.CreateKeyRequest>;
export type CreateKeyRequest = Omit<CreateKeyBody, "remaining" | "refill">;
/**
 * The spec's flat credit fields. The client turns them into `credits` before sending;
 * the local service accepts either shape, not both at once.
 */
export type CreateKeyFlatCredits = Pick<CreateKeyBody, "remaining" | "refill">;
export type CreateKeyResult = Static<typeof resources.CreatedKey>;
export type GetKeyRequest = Static<typeof keys.GetKeyRequest>;
export type WhoamiRequest = Static<typeof keys.WhoamiRequest>;
export type UpdateKeyRequest = Static<typeof keys.UpdateKeyRequest>;
export type DeleteKeyRequest = Static<typeof keys.DeleteKeyRequest>;
export type UpdateCreditsRequest = Static<typeof keys.UpdateCreditsRequest>;
export type KeyPermissionsRequest = Static<typeof keys.KeyPermissionsRequest>;
export type KeyRolesRequest = Static<typeof keys.KeyRolesRequest>;
/** One key of `keys.migrateKeys`: its hash as the source system stored it, and its settings. */
export type MigrateKeyData = Static<typeof keys.MigrateKeyData>;
export type MigrateKeysRequest = Static<typeof keys.MigrateKeysRequest>;
export type MigrateKeysResult = Static<typeof keys.MigrateKeysResult>;
export type RerollKeyRequest = Static<typeof keys.RerollKeyRequest>;

// ---------------------------------------------------------------------------------------------
// apis.*

export type CreateApiRequest = Static<typeof apis.CreateApiRequest>;
export type CreateApiResult = Static<typeof apis.CreateApiResult>;
export type GetApiRequest = Static<typeof apis.GetApiRequest>;
export type ApiInfo = Static<typeof apis.ApiInfo>;
/** keyguard's own apis.getApiSettings and apis.updateApi: an API with its settings. */
export type ApiSettings = Static<typeof apis.ApiSettings>;
export type ListKeysRequest = Static<typeof apis.ListKeysRequest>;
/** keyguard's own: the order of an apis.listKeys answer (a column, then id). */
export type KeySort = Static<typeof apis.KeySort>;
export type DeleteApiRequest = Static<typeof apis.DeleteApiRequest>;
/** keyguard's own apis.listApis: one API of the workspace. */
export type ApiListItem = Static<typeof apis.ApiListItem>;
/** keyguard's own apis.updateApi: an omitted field is unchanged. */
export type UpdateApiRequest = Static<typeof apis.UpdateApiRequest>;

// ---------------------------------------------------------------------------------------------
// rootKeys.* (keyguard's own)

/** One root key of the workspace as rootKeys.listRootKeys answers it (never the key itself). */
export type RootKeyItem = Static<typeof rootKeys.RootKeyItem>;

// ---------------------------------------------------------------------------------------------
// audit.* (keyguard's own)

export type ListAuditEventsRequest = Static<typeof audit.ListAuditEventsRequest>;
/** One audit record as audit.listEvents answers it. */
export type AuditEventItem = Static<typeof audit.AuditEventItem>;

// ---------------------------------------------------------------------------------------------
// webhooks.* (keyguard's own)

/** One webhook endpoint as webhooks.listEndpoints answers it (never its secret). */
export type WebhookEndpointItem = Static<typeof webhooks.WebhookEndpointItem>;
/** One message to an endpoint as webhooks.listDeliveries answers it. */
export type WebhookDeliveryItem = Static<typeof webhooks.WebhookDeliveryItem>;
/** One message with its payload and attempts, as webhooks.getDelivery answers it. */
export type WebhookDeliveryDetail = Static<typeof webhooks.WebhookDeliveryDetail>;
/** One attempt to deliver a message: when, the status answered (0: none) or the error, how long. */
export type WebhookAttemptItem = Static<typeof webhooks.WebhookAttemptItem>;
/** One event type of webhooks.listEventTypes: its name, what it means, its payload's JSON Schema. */
export type WebhookEventTypeItem = Static<typeof webhookPayloads.WebhookEventTypeItem>;

// ---------------------------------------------------------------------------------------------
// permissions.*

type CreatePermissionBody = Static<typeof permissions.CreatePermissionRequest>;
/** `slug` is required by the service (production and the local one); optional here only for compatibility. */
export type CreatePermissionRequest = Omit<CreatePermissionBody, "slug"> & Partial<Pick<CreatePermissionBody, "slug">>;
export type CreatePermissionResult = Static<typeof permissions.CreatePermissionResult>;
export type GetPermissionRequest = Static<typeof permissions.GetPermissionRequest>;
export type ListPermissionsRequest = Static<typeof permissions.ListPermissionsRequest>;
export type CreateRoleRequest = Static<typeof permissions.CreateRoleRequest>;
export type CreateRoleResult = Static<typeof permissions.CreateRoleResult>;
export type GetRoleRequest = Static<typeof permissions.GetRoleRequest>;
export type SetRolePermissionsRequest = Static<typeof permissions.SetRolePermissionsRequest>;
export type ListRolesRequest = Static<typeof permissions.ListRolesRequest>;

// ---------------------------------------------------------------------------------------------
// identities.*

export type CreateIdentityRequest = Static<typeof identities.CreateIdentityRequest>;
export type CreateIdentityResult = Static<typeof identities.CreateIdentityResult>;
export type GetIdentityRequest = Static<typeof identities.GetIdentityRequest>;
export type ListIdentitiesRequest = Static<typeof identities.ListIdentitiesRequest>;
export type UpdateIdentityRequest = Static<typeof identities.UpdateIdentityRequest>;

// ---------------------------------------------------------------------------------------------
// ratelimit.*

export type RatelimitLimitRequest = Static<typeof ratelimit.RatelimitLimitRequest>;
export type RatelimitLimitResult = Static<typeof ratelimit.RatelimitLimitResult>;
/** `ratelimit.multiLimit`'s body: a JSON array (1..100) of `ratelimit.limit` bodies. */
export type RatelimitMultiLimitRequest = Static<typeof ratelimit.RatelimitMultiLimitRequest>;
export type RatelimitMultiLimitCheck = Static<typeof ratelimit.RatelimitMultiLimitCheck>;
export type RatelimitMultiLimitResult = Static<typeof ratelimit.RatelimitMultiLimitResult>;
export type RatelimitSetOverrideRequest = Static<typeof ratelimit.RatelimitSetOverrideRequest>;
export type RatelimitSetOverrideResult = Static<typeof ratelimit.RatelimitSetOverrideResult>;
/** getOverride (an identifier, or a pattern's matches) and deleteOverride (exactly as set). */
export type RatelimitOverrideRequest = Static<typeof ratelimit.RatelimitOverrideRequest>;
export type RatelimitOverride = Static<typeof ratelimit.RatelimitOverride>;
export type RatelimitListOverridesRequest = Static<typeof ratelimit.RatelimitListOverridesRequest>;
/** keyguard's own ratelimit.listNamespaces: one namespace of the workspace. */
export type RatelimitNamespace = Static<typeof ratelimit.RatelimitNamespace>;
/** keyguard's own ratelimit.getNamespaceUsage: its body, and one point of its series. */
export type RatelimitGetNamespaceUsageRequest = Static<typeof ratelimit.RatelimitGetNamespaceUsageRequest>;
export type RatelimitUsagePoint = Static<typeof ratelimit.RatelimitUsagePoint>;

// ---------------------------------------------------------------------------------------------
// analytics.*

export type GetVerificationsRequest = Static<typeof analytics.GetVerificationsRequest>;
/** One row of an analytics answer: the selected columns by name (numbers as numbers, `tags` as an array). */
export type AnalyticsRow = Static<typeof analytics.AnalyticsRow>;

// ---------------------------------------------------------------------------------------------
// portal.*

export type CreatePortalSessionRequest = Static<typeof portal.CreatePortalSessionRequest>;
/** `url` carries the single-use exchange code: a credential. */
export type CreatedPortalSession = Static<typeof portal.CreatedPortalSession>;
export type ExchangePortalCodeRequest = Static<typeof portal.ExchangePortalCodeRequest>;
export type PortalAccessToken = Static<typeof portal.PortalAccessToken>;
export type ListPortalKeysRequest = Static<typeof portal.ListPortalKeysRequest>;
export type PortalVerificationsRequest = Static<typeof portal.PortalVerificationsRequest>;
/** One bucket of portal.getVerifications: the count of each outcome. */
export type PortalVerificationsPoint = Static<typeof portal.PortalVerificationsPoint>;
/** keyguard's own portal.* operations. */
export type CreatePortalRequest = Static<typeof portal.CreatePortalRequest>;
export type UpdatePortalRequest = Static<typeof portal.UpdatePortalRequest>;
export type PortalItem = Static<typeof portal.PortalItem>;
export type PortalSessionInfo = Static<typeof portal.PortalSessionInfo>;

// ---------------------------------------------------------------------------------------------
// The operation table: wire path → request and `data` types. The client and the local service
// are both typed from it.

export interface Operations {
  "keys.verifyKey": { req: VerifyKeyRequest; res: VerifyKeyResult };
  "keys.createKey": { req: CreateKeyRequest; res: CreateKeyResult };
  "keys.getKey": { req: GetKeyRequest; res: KeyInfo };
  "keys.whoami": { req: WhoamiRequest; res: KeyInfo };
  "keys.updateKey": { req: UpdateKeyRequest; res: EmptyData };
  "keys.deleteKey": { req: DeleteKeyRequest; res: EmptyData };
  "keys.updateCredits": { req: UpdateCreditsRequest; res: KeyCredits };
  "keys.addPermissions": { req: KeyPermissionsRequest; res: Permission[] };
  "keys.removePermissions": { req: KeyPermissionsRequest; res: Permission[] };
  "keys.setPermissions": { req: KeyPermissionsRequest; res: Permission[] };
  "keys.addRoles": { req: KeyRolesRequest; res: Role[] };
  "keys.removeRoles": { req: KeyRolesRequest; res: Role[] };
  "keys.setRoles": { req: KeyRolesRequest; res: Role[] };
  "keys.rerollKey": { req: RerollKeyRequest; res: CreateKeyResult };
  "apis.createApi": { req: CreateApiRequest; res: CreateApiResult };
  "apis.getApi": { req: GetApiRequest; res: ApiInfo };
  "apis.listKeys": { req: ListKeysRequest; res: KeyInfo[] };
  "apis.deleteApi": { req: DeleteApiRequest; res: EmptyData };
  "permissions.createPermission": { req: CreatePermissionRequest; res: CreatePermissionResult };
  "permissions.getPermission": { req: GetPermissionRequest; res: Permission };
  "permissions.listPermissions": { req: ListPermissionsRequest; res: Permission[] };
  "permissions.deletePermission": { req: GetPermissionRequest; res: EmptyData };
  "permissions.createRole": { req: CreateRoleRequest; res: CreateRoleResult };
  "permissions.getRole": { req: GetRoleRequest; res: Role };
  "permissions.listRoles": { req: ListRolesRequest; res: Role[] };
  "permissions.deleteRole": { req: GetRoleRequest; res: EmptyData };
  "identities.createIdentity": { req: CreateIdentityRequest; res: CreateIdentityResult };
  "identities.getIdentity": { req: GetIdentityRequest; res: Identity };
  "identities.listIdentities": { req: ListIdentitiesRequest; res: Identity[] };
  "identities.updateIdentity": { req: UpdateIdentityRequest; res: Identity };
  "identities.deleteIdentity": { req: GetIdentityRequest; res: EmptyData };
  "ratelimit.limit": { req: RatelimitLimitRequest; res: RatelimitLimitResult };
  "ratelimit.multiLimit": { req: RatelimitMultiLimitRequest; res: RatelimitMultiLimitResult };
  "ratelimit.setOverride": { req: RatelimitSetOverrideRequest; res: RatelimitSetOverrideResult };
  "ratelimit.getOverride": { req: RatelimitOverrideRequest; res: RatelimitOverride };
  "ratelimit.listOverrides": { req: RatelimitListOverridesRequest; res: RatelimitOverride[] };
  "ratelimit.deleteOverride": { req: RatelimitOverrideRequest; res: EmptyData };
  "permissions.setRolePermissions": { req: SetRolePermissionsRequest; res: Permission[] };
  "keys.migrateKeys": { req: MigrateKeysRequest; res: MigrateKeysResult };
  "analytics.getVerifications": { req: GetVerificationsRequest; res: AnalyticsRow[] };
  "portal.createSession": { req: CreatePortalSessionRequest; res: CreatedPortalSession };
  "portal.exchangeCode": { req: ExchangePortalCodeRequest; res: PortalAccessToken };
  "portal.listKeys": { req: ListPortalKeysRequest; res: KeyInfo[] };
  "portal.rerollKey": { req: RerollKeyRequest; res: CreateKeyResult };
  "portal.getVerifications": { req: PortalVerificationsRequest; res: PortalVerificationsPoint[] };
}

export type OperationName = keyof Operations;

type Contracts = typeof CONTRACT & typeof EXTENSION_CONTRACT;

/**
 * Every operation the service serves, production's and keyguard's own, by wire name: its request body
 * and answer `data` as the contract's schemas give them. The console's calls are typed from it.
 */
export type ContractOperations = {
  [N in keyof Contracts]: { req: Static<Contracts[N]["request"]>; res: Static<Contracts[N]["response"]> };
};

/** Operations whose response carries `pagination`. */
export const LIST_OPERATIONS = Object.freeze([
  "apis.listKeys",
  "permissions.listPermissions",
  "permissions.listRoles",
  "identities.listIdentities",
  "ratelimit.listOverrides",
  "portal.listKeys",
] as const satisfies readonly OperationName[]);

/** keyguard's own operations whose response carries `pagination`. */
export const PAGED_EXTENSION_OPERATIONS = Object.freeze(["webhooks.listDeliveries"] as const satisfies ReadonlyArray<
  keyof ContractOperations
>);

/** Operations whose request body is a JSON array, not an object. */
export const ARRAY_BODY_OPERATIONS = Object.freeze(["ratelimit.multiLimit"] as const satisfies readonly OperationName[]);

export type ListOperationName = (typeof LIST_OPERATIONS)[number];
