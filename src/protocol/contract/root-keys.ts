// keyguard's own rootKeys.* operations (production manages root keys in its dashboard only).
import * as Type from "typebox";
import { id, listFields, strict, text } from "./fields";
import { CreatedKey, EmptyData } from "./resources";

export const CreateRootKeyRequest = strict({
  name: Type.Optional(text(256)),
  /** Permission tuples (`resource.<id|*>.action`), each held by the calling root key. */
  permissions: Type.Array(text(512), { minItems: 1, maxItems: 1000 }),
});

export const ListRootKeysRequest = strict({ ...listFields });
export const RootKeyItem = Type.Object({
  keyId: Type.String(),
  name: Type.Optional(Type.String()),
  permissions: Type.Array(Type.String()),
  createdAt: Type.Integer(),
});

export const DeleteRootKeyRequest = strict({ keyId: id() });

export const rootKeysOperations = {
  "rootKeys.createRootKey": { request: CreateRootKeyRequest, response: CreatedKey },
  "rootKeys.listRootKeys": { request: ListRootKeysRequest, response: Type.Array(RootKeyItem) },
  "rootKeys.deleteRootKey": { request: DeleteRootKeyRequest, response: EmptyData },
} as const;
