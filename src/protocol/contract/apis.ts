// The apis.* operations, keyguard's own apis.listApis, apis.getApiSettings and apis.updateApi
// included, and the API settings (keyguard's extension fields) that those three answer with.
// Production's apis.getApi answers its own closed shape, `{ id, name }`.
import * as Type from "typebox";
import { CreditsLowThreshold, id, IpWhitelist, listFields, nullable, strict, text } from "./fields";
import { EmptyData, KeyInfo } from "./resources";

/** How an API's new keys look: `plain` (`prefix_` + base58, the default) or `checksummed` (`prefix_kg0…` with a CRC32). */
export const KeyFormat = Type.Enum(["plain", "checksummed"], { type: "string" });

/** keyguard's own: what a secret-scanning report of one of the API's keys does (docs/security.md). */
export const LeakResponse = Type.Enum(["disable", "flag"], { type: "string" });

export const CreateApiRequest = strict({
  name: text(256, { minLength: 3 }),
  leakResponse: Type.Optional(LeakResponse),
  keyFormat: Type.Optional(KeyFormat),
  creditsLowThreshold: Type.Optional(CreditsLowThreshold),
});
export const CreateApiResult = Type.Object({ apiId: Type.String() });

/** keyguard's own: an API's settings, as getApiSettings, listApis and updateApi answer them. */
const apiSettings = {
  /** Absent when any address may verify the API's keys. */
  ipWhitelist: Type.Optional(Type.Array(Type.String())),
  storeKeys: Type.Optional(Type.Boolean()),
  keyFormat: Type.Optional(Type.String()),
  leakResponse: Type.Optional(Type.String()),
  /** Absent when the API has none. */
  creditsLowThreshold: Type.Optional(Type.Integer()),
};

export const GetApiRequest = strict({ apiId: id(8) });
/** apis.getApi's answer: production's shape, nothing more (its schema closes the object). */
export const ApiInfo = Type.Object({ id: Type.String(), name: Type.String() });
/** keyguard's own: an API with its settings (apis.getApiSettings, apis.updateApi). */
export const ApiSettings = Type.Object({ id: Type.String(), name: Type.String(), ...apiSettings });

/** keyguard's own: the columns `apis.listKeys` sorts by (`credits`: the remaining credits). */
export const KEY_SORT_COLUMNS = ["name", "start", "createdAt", "expires", "credits"] as const;

/**
 * keyguard's own: the order of `apis.listKeys`' answer, by a column and then by id, in `order`
 * (default `asc`). A key without the value (no name, no expiry, unlimited credits) counts as
 * greater than every value: last in `asc`, first in `desc`. Strings compare by code point.
 */
export const KeySort = strict({
  by: Type.Enum(KEY_SORT_COLUMNS, { type: "string" }),
  order: Type.Optional(Type.Enum(["asc", "desc"], { type: "string" })),
});

export const ListKeysRequest = strict({
  apiId: text(),
  ...listFields,
  /** A sorted listing's cursor carries the next key's sort value, a name of up to 255 characters included. */
  cursor: Type.Optional(text(2048)),
  externalId: Type.Optional(text()),
  /** keyguard's own: only keys whose id, name or start contains this text (any case). */
  search: Type.Optional(text(255)),
  sort: Type.Optional(KeySort),
  decrypt: Type.Optional(Type.Boolean()),
  revalidateKeysCache: Type.Optional(Type.Boolean()),
});

export const DeleteApiRequest = strict({ apiId: id(8) });

/** keyguard's own: the APIs of the workspace the root key may read. */
export const ListApisRequest = strict({ ...listFields });
export const ApiListItem = Type.Object({ id: Type.String(), name: Type.String(), createdAt: Type.Integer(), ...apiSettings });

/**
 * keyguard's own: changes an API's name and settings; an omitted field is unchanged, `ipWhitelist: []`
 * clears the list, `creditsLowThreshold: null` removes the threshold.
 */
export const UpdateApiRequest = strict({
  apiId: id(8),
  name: Type.Optional(text(256, { minLength: 3 })),
  ipWhitelist: Type.Optional(IpWhitelist),
  storeKeys: Type.Optional(Type.Boolean()),
  keyFormat: Type.Optional(KeyFormat),
  leakResponse: Type.Optional(LeakResponse),
  creditsLowThreshold: Type.Optional(nullable(CreditsLowThreshold)),
});

export const apisOperations = {
  "apis.createApi": { request: CreateApiRequest, response: CreateApiResult },
  "apis.getApi": { request: GetApiRequest, response: ApiInfo },
  "apis.listKeys": { request: ListKeysRequest, response: Type.Array(KeyInfo) },
  "apis.deleteApi": { request: DeleteApiRequest, response: EmptyData },
} as const;

export const apisExtensions = {
  "apis.listApis": { request: ListApisRequest, response: Type.Array(ApiListItem) },
  "apis.getApiSettings": { request: GetApiRequest, response: ApiSettings },
  "apis.updateApi": { request: UpdateApiRequest, response: ApiSettings },
} as const;
