// The keys.* operations: request bodies (with the limits the service enforces) and answers.
import * as Type from "typebox";
import { MAX_PERMISSION_QUERY_LENGTH } from "../permission-query";
import {
  Credits,
  CreditsLowThreshold,
  CreditsRefill,
  IpWhitelist,
  Expires,
  ExternalId,
  id,
  MAX_COST,
  Meta,
  nullable,
  Permissions,
  RatelimitList,
  Roles,
  RoleName,
  Slug,
  strict,
  text,
} from "./fields";
import {
  CreatedKey,
  EmptyData,
  Identity,
  KeyCredits,
  KeyInfo,
  KeySettings,
  MetaData,
  Permission,
  Role,
  VerifyCode,
  VerifyRatelimitState,
} from "./resources";

export const VerifyKeyRequest = strict({
  key: text(512),
  /** Permission query, e.g. `"docs.read AND (docs.write OR admin)"`. */
  permissions: Type.Optional(text(MAX_PERMISSION_QUERY_LENGTH)),
  credits: Type.Optional(strict({ cost: Type.Integer({ minimum: 0, maximum: MAX_COST }) })),
  ratelimits: Type.Optional(
    Type.Array(
      strict({
        name: text(255, { minLength: 3 }),
        cost: Type.Optional(Type.Integer({ minimum: 0 })),
        limit: Type.Optional(Type.Integer({ minimum: 1 })),
        duration: Type.Optional(Type.Integer({ minimum: 1000 })),
      }),
      { maxItems: 50 },
    ),
  ),
  tags: Type.Optional(Type.Array(text(512), { maxItems: 20 })),
  /** Id of a key migration: lets keys imported with `keys.migrateKeys` in another hash form verify. */
  migrationId: Type.Optional(Type.String({ maxLength: 256 })),
});

export const VerifyKeyResult = Type.Object({
  valid: Type.Boolean(),
  code: VerifyCode,
  keyId: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  meta: Type.Optional(MetaData),
  expires: Type.Optional(Type.Integer()),
  /** Remaining credits after this verification; absent when unlimited. */
  credits: Type.Optional(Type.Integer()),
  enabled: Type.Optional(Type.Boolean()),
  permissions: Type.Optional(Type.Array(Type.String())),
  roles: Type.Optional(Type.Array(Type.String())),
  identity: Type.Optional(Identity),
  ratelimits: Type.Optional(Type.Array(VerifyRatelimitState)),
});

/**
 * createKey's body. Credits come nested (`credits`) or flat (`remaining`/`refill`, the spec's
 * form, which the client turns into `credits`), not both.
 */
export const CreateKeyRequest = strict({
  apiId: id(),
  prefix: Type.Optional(text(16, { pattern: "^[a-zA-Z0-9_]+$", "x-fix": "Use letters, digits and underscores." })),
  name: Type.Optional(text(255)),
  byteLength: Type.Optional(Type.Integer({ minimum: 16, maximum: 255 })),
  externalId: Type.Optional(ExternalId),
  meta: Type.Optional(Meta),
  roles: Type.Optional(Roles),
  permissions: Type.Optional(Permissions),
  expires: Type.Optional(Expires),
  credits: Type.Optional(Credits),
  remaining: Type.Optional(Type.Integer({ minimum: 0 })),
  refill: Type.Optional(CreditsRefill),
  ratelimits: Type.Optional(RatelimitList),
  enabled: Type.Optional(Type.Boolean()),
  recoverable: Type.Optional(Type.Boolean()),
  /** keyguard's own: addresses or CIDR ranges allowed to verify the key, beside its API's list. */
  ipWhitelist: Type.Optional(IpWhitelist),
  /** keyguard's own: the key's own key.credits_low threshold, instead of its API's. */
  creditsLowThreshold: Type.Optional(CreditsLowThreshold),
});

export const GetKeyRequest = strict({ keyId: id(), decrypt: Type.Optional(Type.Boolean()) });

export const WhoamiRequest = strict({ key: text(512) });

export const UpdateKeyRequest = strict({
  keyId: id(),
  name: Type.Optional(nullable(text(255))),
  externalId: Type.Optional(nullable(ExternalId)),
  meta: Type.Optional(nullable(Meta)),
  expires: Type.Optional(nullable(Expires)),
  credits: Type.Optional(
    nullable(strict({ remaining: Type.Optional(nullable(Type.Integer({ minimum: 0 }))), refill: Type.Optional(nullable(CreditsRefill)) })),
  ),
  ratelimits: Type.Optional(RatelimitList),
  enabled: Type.Optional(Type.Boolean()),
  roles: Type.Optional(Roles),
  permissions: Type.Optional(Permissions),
  /** keyguard's own: the key's allowed addresses or CIDR ranges; `[]` clears the list. */
  ipWhitelist: Type.Optional(IpWhitelist),
  /** keyguard's own: the key's own key.credits_low threshold; `null` removes it (its API's applies). */
  creditsLowThreshold: Type.Optional(nullable(CreditsLowThreshold)),
});

export const DeleteKeyRequest = strict({ keyId: id(), permanent: Type.Optional(Type.Boolean()) });

export const UpdateCreditsRequest = strict({
  keyId: text(undefined, { minLength: 3 }),
  operation: Type.Enum(["set", "increment", "decrement"], { type: "string" }),
  /** `null` with `set` makes the key unlimited. */
  value: Type.Optional(nullable(Type.Integer({ minimum: 0 }))),
});

/** add/remove: 1..1000 slugs; set: any number (`[]` clears). */
export const KeyPermissionsRequest = strict({ keyId: id(), permissions: Type.Array(Slug, { minItems: 1, maxItems: 1000 }) });
export const SetKeyPermissionsRequest = strict({ keyId: id(), permissions: Type.Array(Slug) });

/** add/remove: 1..100 role names; set: at most 100 (`[]` clears). */
export const KeyRolesRequest = strict({ keyId: id(), roles: Type.Array(RoleName, { minItems: 1, maxItems: 100 }) });
export const SetKeyRolesRequest = strict({ keyId: id(), roles: Roles });

/** One key of `keys.migrateKeys`: its hash as the source system stored it, and its settings. */
export const MigrateKeyData = strict({
  /** For a `sha256` migration: base64 (padded) of SHA-256 of the key; for `github.com/seamapi/prefixed-api-key`: hex SHA-256 of its long token. */
  hash: text(undefined, { minLength: 3 }),
  name: Type.Optional(text(255)),
  externalId: Type.Optional(text(255)),
  meta: Type.Optional(Meta),
  roles: Type.Optional(Roles),
  permissions: Type.Optional(Permissions),
  expires: Type.Optional(Expires),
  enabled: Type.Optional(Type.Boolean()),
  credits: Type.Optional(Credits),
  ratelimits: Type.Optional(RatelimitList),
});

export const MigrateKeysRequest = strict({
  /** A migration registered for the workspace (production: by Unkey's support; locally: `createKeyMigration`). */
  migrationId: text(255, { minLength: 3 }),
  apiId: text(255, { minLength: 3 }),
  keys: Type.Array(MigrateKeyData, { minItems: 1 }),
});

export const MigrateKeysResult = Type.Object({
  migrated: Type.Array(Type.Object({ hash: Type.String(), keyId: Type.String() })),
  /** Hashes not imported because a key with that hash already exists. */
  failed: Type.Array(Type.String()),
});

export const RerollKeyRequest = strict({
  keyId: id(),
  /** Milliseconds until the old key expires; 0 expires it at once (it then verifies as EXPIRED). */
  expiration: Expires,
});

export const keysOperations = {
  "keys.verifyKey": { request: VerifyKeyRequest, response: VerifyKeyResult },
  "keys.createKey": { request: CreateKeyRequest, response: CreatedKey },
  "keys.getKey": { request: GetKeyRequest, response: KeyInfo },
  "keys.whoami": { request: WhoamiRequest, response: KeyInfo },
  "keys.updateKey": { request: UpdateKeyRequest, response: EmptyData },
  "keys.deleteKey": { request: DeleteKeyRequest, response: EmptyData },
  "keys.updateCredits": { request: UpdateCreditsRequest, response: KeyCredits },
  "keys.addPermissions": { request: KeyPermissionsRequest, response: Type.Array(Permission) },
  "keys.removePermissions": { request: KeyPermissionsRequest, response: Type.Array(Permission) },
  "keys.setPermissions": { request: SetKeyPermissionsRequest, response: Type.Array(Permission) },
  "keys.addRoles": { request: KeyRolesRequest, response: Type.Array(Role) },
  "keys.removeRoles": { request: KeyRolesRequest, response: Type.Array(Role) },
  "keys.setRoles": { request: SetKeyRolesRequest, response: Type.Array(Role) },
  "keys.rerollKey": { request: RerollKeyRequest, response: CreatedKey },
  "keys.migrateKeys": { request: MigrateKeysRequest, response: MigrateKeysResult },
} as const;

/** keyguard's own: the settings of up to 100 keys by id (each must exist and be readable). */
export const GetKeySettingsRequest = strict({ keyIds: Type.Array(id(), { minItems: 1, maxItems: 100 }) });

export const keysExtensions = {
  "keys.getKeySettings": { request: GetKeySettingsRequest, response: Type.Array(KeySettings) },
} as const;
