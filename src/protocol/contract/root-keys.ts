// keyguard's own rootKeys.* operations (production manages root keys in its dashboard only).
import * as Type from "typebox";
import { Expires, id, IpWhitelist, listFields, nullable, strict, text } from "./fields";
import { CreatedKey, EmptyData } from "./resources";

export const CreateRootKeyRequest = strict({
  name: Type.Optional(text(256)),
  /** Permission tuples (`resource.<id|*>.action`), each held by the calling root key. */
  permissions: Type.Array(text(512), { minItems: 1, maxItems: 1000 }),
  /** Unix ms after which the root key is refused (401, as an unknown root key). Absent: never. */
  expires: Type.Optional(Expires),
  /** Addresses or CIDR ranges the root key is accepted from (others: 401). Absent or empty: any. */
  ipWhitelist: Type.Optional(IpWhitelist),
});

export const ListRootKeysRequest = strict({ ...listFields });
export const RootKeyItem = Type.Object({
  keyId: Type.String(),
  name: Type.Optional(Type.String()),
  permissions: Type.Array(Type.String()),
  createdAt: Type.Integer(),
  expires: Type.Optional(Type.Integer()),
  ipWhitelist: Type.Optional(Type.Array(Type.String())),
  /** When the root key last authenticated a request (Unix ms; written at most once a minute per key and instance). */
  lastUsedAt: Type.Optional(Type.Integer()),
});

/** Fields left out stay as they are; `null` (or `[]` for the allow-list) removes one. */
export const UpdateRootKeyRequest = strict({
  keyId: id(),
  name: Type.Optional(nullable(text(256))),
  expires: Type.Optional(nullable(Expires)),
  ipWhitelist: Type.Optional(IpWhitelist),
});

export const DeleteRootKeyRequest = strict({ keyId: id() });

export const rootKeysOperations = {
  "rootKeys.createRootKey": { request: CreateRootKeyRequest, response: CreatedKey },
  "rootKeys.listRootKeys": { request: ListRootKeysRequest, response: Type.Array(RootKeyItem) },
  "rootKeys.updateRootKey": { request: UpdateRootKeyRequest, response: RootKeyItem },
  "rootKeys.deleteRootKey": { request: DeleteRootKeyRequest, response: EmptyData },
} as const;
