// The identities.* operations: an identity groups keys under the caller's `externalId`.
import * as Type from "typebox";
import { ExternalId, listFields, Meta, RatelimitList, strict, text } from "./fields";
import { EmptyData, Identity } from "./resources";

export const CreateIdentityRequest = strict({
  externalId: ExternalId,
  meta: Type.Optional(Meta),
  ratelimits: Type.Optional(RatelimitList),
});
export const CreateIdentityResult = Type.Object({ identityId: Type.String() });

/** getIdentity and deleteIdentity: by id or externalId. */
export const GetIdentityRequest = strict({ identity: text() });

export const ListIdentitiesRequest = strict({ ...listFields, search: Type.Optional(text(255)) });

export const UpdateIdentityRequest = strict({ identity: text(), meta: Type.Optional(Meta), ratelimits: Type.Optional(RatelimitList) });

export const identitiesOperations = {
  "identities.createIdentity": { request: CreateIdentityRequest, response: CreateIdentityResult },
  "identities.getIdentity": { request: GetIdentityRequest, response: Identity },
  "identities.listIdentities": { request: ListIdentitiesRequest, response: Type.Array(Identity) },
  "identities.updateIdentity": { request: UpdateIdentityRequest, response: Identity },
  "identities.deleteIdentity": { request: GetIdentityRequest, response: EmptyData },
} as const;
