// Wire types of the key service's v2 protocol: request bodies, response `data` and envelopes.
// Shared by the client, the local key service and the middleware; no runtime code.

/** Free-form JSON metadata attached to a key or an identity. */
export type Meta = Record<string, unknown>;

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
export type EmptyData = Record<string, never>;

/** Paging parameters shared by every list operation. */
export interface ListRequest {
  cursor?: string;
  /** 1..100, default 100. */
  limit?: number;
}

// ---------------------------------------------------------------------------------------------
// Shared resources

/** Verification outcome codes. The list is open: treat an unknown code as invalid. */
export type KnownVerifyCode =
  | "VALID"
  | "NOT_FOUND"
  | "FORBIDDEN"
  | "INSUFFICIENT_PERMISSIONS"
  | "USAGE_EXCEEDED"
  | "RATE_LIMITED"
  | "DISABLED"
  | "EXPIRED";

// `string & {}` keeps editor completion for the known codes while accepting new ones.
export type VerifyCode = KnownVerifyCode | (string & {});

/** A rate limit as configured on a key or an identity (input). */
export interface RatelimitRequest {
  name: string;
  limit: number;
  /** Window length in milliseconds, at least 1000. */
  duration: number;
  autoApply?: boolean;
}

/** A rate limit as reported on a key or an identity (output). */
export interface RatelimitConfig {
  id: string;
  name: string;
  limit: number;
  duration: number;
  autoApply: boolean;
}

/** State of one rate limit after a verification. */
export interface VerifyRatelimitState extends RatelimitConfig {
  remaining: number;
  /** Unix ms at the end of the current window. */
  reset: number;
  exceeded: boolean;
}

export interface Identity {
  id: string;
  externalId: string;
  meta?: Meta;
  ratelimits?: RatelimitConfig[];
}

export interface Permission {
  id: string;
  name: string;
  slug: string;
  description?: string;
}

export interface Role {
  id: string;
  name: string;
  description?: string;
  permissions?: Permission[];
}

export type RefillInterval = "daily" | "monthly";

export interface CreditsRefill {
  interval: RefillInterval;
  amount: number;
  /** Day of the month (1..31) for monthly refills; clamped to the month's last day. */
  refillDay?: number;
}

export interface KeyCredits {
  /** Remaining uses; `null` means unlimited. */
  remaining: number | null;
  refill?: CreditsRefill;
}

/** A key as returned by getKey, whoami and listKeys. Never holds the full key. */
export interface KeyInfo {
  keyId: string;
  start: string;
  enabled: boolean;
  name?: string;
  meta?: Meta;
  createdAt: number;
  updatedAt?: number;
  /** Unix ms of the key's last verification. Production's is accurate to about 5 minutes; the local service's to about a second (events are written every second). */
  lastUsedAt?: number;
  expires?: number;
  permissions?: string[];
  roles?: string[];
  credits?: KeyCredits;
  identity?: Identity;
  ratelimits?: RatelimitConfig[];
  /** The key itself: only with `decrypt: true`, for a recoverable key of an API that stores keys. */
  plaintext?: string;
}

// ---------------------------------------------------------------------------------------------
// keys.*

export interface VerifyKeyRequest {
  key: string;
  /** Permission query, e.g. `"docs.read AND (docs.write OR admin)"`. */
  permissions?: string;
  credits?: { cost: number };
  ratelimits?: Array<{ name: string; cost?: number; limit?: number; duration?: number }>;
  tags?: string[];
  /** Id of a key migration: lets keys imported with `keys.migrateKeys` in another hash form verify. */
  migrationId?: string;
}

export interface VerifyKeyResult {
  valid: boolean;
  code: VerifyCode;
  keyId?: string;
  name?: string;
  meta?: Meta;
  expires?: number;
  /** Remaining credits after this verification; absent when unlimited. */
  credits?: number;
  enabled?: boolean;
  permissions?: string[];
  roles?: string[];
  identity?: Identity;
  ratelimits?: VerifyRatelimitState[];
}

export interface CreateKeyRequest {
  apiId: string;
  prefix?: string;
  name?: string;
  byteLength?: number;
  externalId?: string;
  meta?: Meta;
  roles?: string[];
  permissions?: string[];
  expires?: number;
  credits?: KeyCredits;
  ratelimits?: RatelimitRequest[];
  enabled?: boolean;
  recoverable?: boolean;
}

/**
 * The spec's flat credit fields. The client turns them into `credits` before sending;
 * the local service accepts either shape, not both at once.
 */
export interface CreateKeyFlatCredits {
  remaining?: number;
  refill?: CreditsRefill;
}

export interface CreateKeyResult {
  keyId: string;
  /** The full key. Returned once, here. */
  key: string;
}

export interface GetKeyRequest {
  keyId: string;
  decrypt?: boolean;
}

export interface WhoamiRequest {
  key: string;
}

export interface UpdateKeyRequest {
  keyId: string;
  name?: string | null;
  externalId?: string | null;
  meta?: Meta | null;
  expires?: number | null;
  credits?: { remaining?: number | null; refill?: CreditsRefill | null } | null;
  ratelimits?: RatelimitRequest[];
  enabled?: boolean;
  roles?: string[];
  permissions?: string[];
}

export interface DeleteKeyRequest {
  keyId: string;
  permanent?: boolean;
}

export interface UpdateCreditsRequest {
  keyId: string;
  operation: "set" | "increment" | "decrement";
  /** `null` with `set` makes the key unlimited. */
  value?: number | null;
}

export interface KeyPermissionsRequest {
  keyId: string;
  permissions: string[];
}

export interface KeyRolesRequest {
  keyId: string;
  roles: string[];
}

/** One key of `keys.migrateKeys`: its hash as the source system stored it, and its settings. */
export interface MigrateKeyData {
  /** For a `sha256` migration: base64 (padded) of SHA-256 of the key; for `github.com/seamapi/prefixed-api-key`: hex SHA-256 of its long token. */
  hash: string;
  name?: string;
  externalId?: string;
  meta?: Meta;
  roles?: string[];
  permissions?: string[];
  expires?: number;
  enabled?: boolean;
  credits?: KeyCredits;
  ratelimits?: RatelimitRequest[];
}

export interface MigrateKeysRequest {
  /** A migration registered for the workspace (production: by Unkey's support; locally: `createKeyMigration`). */
  migrationId: string;
  apiId: string;
  keys: MigrateKeyData[];
}

export interface MigrateKeysResult {
  migrated: Array<{ hash: string; keyId: string }>;
  /** Hashes not imported because a key with that hash already exists. */
  failed: string[];
}

export interface RerollKeyRequest {
  keyId: string;
  /** Milliseconds until the old key expires; 0 expires it at once (it then verifies as EXPIRED). */
  expiration: number;
}

// ---------------------------------------------------------------------------------------------
// apis.*

export interface CreateApiRequest {
  name: string;
}
export interface CreateApiResult {
  apiId: string;
}
export interface GetApiRequest {
  apiId: string;
}
export interface ApiInfo {
  id: string;
  name: string;
}
export interface ListKeysRequest extends ListRequest {
  apiId: string;
  externalId?: string;
  decrypt?: boolean;
  revalidateKeysCache?: boolean;
}
export interface DeleteApiRequest {
  apiId: string;
}

// ---------------------------------------------------------------------------------------------
// permissions.*

export interface CreatePermissionRequest {
  name: string;
  /** Required by the service (production and the local one); optional here only for compatibility. */
  slug?: string;
  description?: string;
}
export interface CreatePermissionResult {
  permissionId: string;
}
export interface GetPermissionRequest {
  /** Id or slug. */
  permission: string;
}
export interface ListPermissionsRequest extends ListRequest {
  search?: string;
}
export interface CreateRoleRequest {
  name: string;
  description?: string;
  /** Permission slugs; missing ones are created. */
  permissions?: string[];
}
export interface CreateRoleResult {
  roleId: string;
}
export interface GetRoleRequest {
  /** Id or name. */
  role: string;
}
export interface SetRolePermissionsRequest {
  /** The role's id. */
  roleId: string;
  /** Slugs: the role's complete new set of direct permissions; missing ones are created. `[]` clears. */
  permissions: string[];
}
export interface ListRolesRequest extends ListRequest {
  search?: string;
}

// ---------------------------------------------------------------------------------------------
// identities.*

export interface CreateIdentityRequest {
  externalId: string;
  meta?: Meta;
  ratelimits?: RatelimitRequest[];
}
export interface CreateIdentityResult {
  identityId: string;
}
export interface GetIdentityRequest {
  /** Id or externalId. */
  identity: string;
}
export interface ListIdentitiesRequest extends ListRequest {
  search?: string;
}
export interface UpdateIdentityRequest {
  identity: string;
  meta?: Meta;
  ratelimits?: RatelimitRequest[];
}

// ---------------------------------------------------------------------------------------------
// ratelimit.*

export interface RatelimitLimitRequest {
  namespace: string;
  identifier: string;
  limit: number;
  /** Window length in milliseconds. */
  duration: number;
  cost?: number;
}
export interface RatelimitLimitResult {
  limit: number;
  remaining: number;
  reset: number;
  success: boolean;
  /** The override that set `limit` (and the window), when one matched the identifier. */
  overrideId?: string;
}

/** `ratelimit.multiLimit`'s body: a JSON array (1..100) of `ratelimit.limit` bodies. */
export type RatelimitMultiLimitRequest = RatelimitLimitRequest[];
export interface RatelimitMultiLimitCheck {
  /** As sent (a name or an id). */
  namespace: string;
  identifier: string;
  limit: number;
  remaining: number;
  reset: number;
  /** Whether this limit alone passed. */
  passed: boolean;
  overrideId?: string;
}
export interface RatelimitMultiLimitResult {
  /** Whether every limit passed; when not, no limit was charged. */
  passed: boolean;
  /** In request order. */
  limits: RatelimitMultiLimitCheck[];
}

export interface RatelimitSetOverrideRequest {
  /** Name or id. */
  namespace: string;
  /** An identifier, or a pattern where `*` matches any sequence of characters. */
  identifier: string;
  /** 0 rejects every request. */
  limit: number;
  /** Window length in milliseconds, at least 1000. */
  duration: number;
}
export interface RatelimitSetOverrideResult {
  overrideId: string;
}
/** getOverride (an identifier, or a pattern's matches) and deleteOverride (exactly as set). */
export interface RatelimitOverrideRequest {
  namespace: string;
  identifier: string;
}
export interface RatelimitOverride {
  overrideId: string;
  duration: number;
  identifier: string;
  limit: number;
}
export interface RatelimitListOverridesRequest extends ListRequest {
  namespace: string;
}

// ---------------------------------------------------------------------------------------------
// analytics.*

export interface GetVerificationsRequest {
  /**
   * SQL over `key_verifications_v1`, e.g.
   * `SELECT outcome, count(*) AS total FROM key_verifications_v1 WHERE time >= now() - INTERVAL 1 DAY GROUP BY outcome`.
   */
  query: string;
}

/** One row of an analytics answer: the selected columns by name (numbers as numbers, `tags` as an array). */
export type AnalyticsRow = Record<string, unknown>;

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
}

export type OperationName = keyof Operations;

/** Operations whose response carries `pagination`. */
export const LIST_OPERATIONS = Object.freeze([
  "apis.listKeys",
  "permissions.listPermissions",
  "permissions.listRoles",
  "identities.listIdentities",
  "ratelimit.listOverrides",
] as const satisfies readonly OperationName[]);

/** Operations whose request body is a JSON array, not an object. */
export const ARRAY_BODY_OPERATIONS = Object.freeze(["ratelimit.multiLimit"] as const satisfies readonly OperationName[]);

export type ListOperationName = (typeof LIST_OPERATIONS)[number];
