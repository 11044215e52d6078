// The apis.* operations, keyguard's own apis.listApis included.
import * as Type from "typebox";
import { id, listFields, strict, text } from "./fields";
import { EmptyData, KeyInfo } from "./resources";

export const CreateApiRequest = strict({ name: text(256, { minLength: 3 }) });
export const CreateApiResult = Type.Object({ apiId: Type.String() });

export const GetApiRequest = strict({ apiId: id(8) });
export const ApiInfo = Type.Object({ id: Type.String(), name: Type.String() });

export const ListKeysRequest = strict({
  apiId: text(),
  ...listFields,
  externalId: Type.Optional(text()),
  decrypt: Type.Optional(Type.Boolean()),
  revalidateKeysCache: Type.Optional(Type.Boolean()),
});

export const DeleteApiRequest = strict({ apiId: id(8) });

/** keyguard's own: the APIs of the workspace the root key may read. */
export const ListApisRequest = strict({ ...listFields });
export const ApiListItem = Type.Object({ id: Type.String(), name: Type.String(), createdAt: Type.Integer() });

export const apisOperations = {
  "apis.createApi": { request: CreateApiRequest, response: CreateApiResult },
  "apis.getApi": { request: GetApiRequest, response: ApiInfo },
  "apis.listKeys": { request: ListKeysRequest, response: Type.Array(KeyInfo) },
  "apis.deleteApi": { request: DeleteApiRequest, response: EmptyData },
} as const;

export const apisExtensions = {
  "apis.listApis": { request: ListApisRequest, response: Type.Array(ApiListItem) },
} as const;
