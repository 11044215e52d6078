// The payload of each webhook event type as a JSON Schema: what webhooks.listEventTypes answers,
// and the types the service builds its payloads with (src/server/webhooks), so the catalogue and
// what is sent are one definition. Every payload has the Standard Webhooks shape
// `{ type, timestamp, data }`; `data` always names the workspace.
import * as Type from "typebox";
import type { Static, TSchema } from "typebox";
import { freeForm } from "./fields";
import { WEBHOOK_EVENT_DESCRIPTIONS, type WebhookEventType } from "./webhook-events";

const Id = Type.String({ minLength: 1 });

/** What an event made by an operation's change names its record by. */
export type ChangeSubject = "keyId" | "rootKeyId" | "apiId" | "permissionId" | "roleId" | "identityId" | "overrideId" | "portalId";

/** `data` of an event made by an operation's change: its audit record, less what a receiver has no use for. */
const changeData = <S extends ChangeSubject>(subject: S) =>
  Type.Object({
    workspaceId: Id,
    ...({ [subject]: Id } as Record<S, typeof Id>),
    /** Ids of the records changed (the subject first). */
    targets: Type.Array(Id),
    /** The root key that made the change (its id and name, never the key). */
    actor: Type.Object({ rootKeyId: Id, name: Type.Optional(Type.String()) }),
    requestId: Id,
    /** A compact description of the change (as in the audit log). */
    change: freeForm(),
  });

/** `data` of key.credits_low and key.credits_exhausted. */
export const CreditsEventData = Type.Object({
  workspaceId: Id,
  keyId: Id,
  apiId: Id,
  remaining: Type.Integer({ minimum: 0 }),
  /** The threshold that applied (the key's, else its API's); null when none. */
  threshold: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]),
});
export type CreditsEventData = Static<typeof CreditsEventData>;

/** `data` of key.expiring. */
export const ExpiringEventData = Type.Object({
  workspaceId: Id,
  keyId: Id,
  apiId: Id,
  /** When the key expires (Unix ms). */
  expires: Type.Integer({ minimum: 0 }),
});
export type ExpiringEventData = Static<typeof ExpiringEventData>;

/** `data` of webhook.test. */
export const TestEventData = Type.Object({
  workspaceId: Id,
  endpointId: Id,
  /** The text the caller of webhooks.sendTestEvent gave, or a default one. */
  message: Type.String(),
});
export type TestEventData = Static<typeof TestEventData>;

/** Each type's `data`, and for a change's event what its subject is. */
const DATA = {
  "key.created": changeData("keyId"),
  "key.updated": changeData("keyId"),
  "key.rerolled": changeData("keyId"),
  "key.deleted": changeData("keyId"),
  "key.leaked": changeData("keyId"),
  "root_key.created": changeData("rootKeyId"),
  "root_key.deleted": changeData("rootKeyId"),
  "key.credits_low": CreditsEventData,
  "key.credits_exhausted": CreditsEventData,
  "key.expiring": ExpiringEventData,
  "api.created": changeData("apiId"),
  "api.deleted": changeData("apiId"),
  "permission.created": changeData("permissionId"),
  "permission.deleted": changeData("permissionId"),
  "role.created": changeData("roleId"),
  "role.deleted": changeData("roleId"),
  "identity.created": changeData("identityId"),
  "identity.updated": changeData("identityId"),
  "identity.deleted": changeData("identityId"),
  "ratelimit_override.set": changeData("overrideId"),
  "ratelimit_override.deleted": changeData("overrideId"),
  "portal.created": changeData("portalId"),
  "portal.updated": changeData("portalId"),
  "portal.deleted": changeData("portalId"),
  "webhook.test": TestEventData,
} as const satisfies Record<WebhookEventType, TSchema>;

/** `data` of a change's event, by its subject. */
export type ChangeEventData<S extends ChangeSubject = ChangeSubject> = Static<ReturnType<typeof changeData<S>>>;

/** The JSON Schema of a whole payload of `type`. */
const payloadSchema = (type: WebhookEventType) =>
  Type.Object(
    {
      type: Type.Literal(type),
      /** When the change happened (ISO 8601, UTC). */
      timestamp: Type.String({ format: "date-time" }),
      data: DATA[type],
    },
    { $id: `keyguard:webhook:${type}` },
  );

/** One entry of the catalogue: a type, what it means, its payload's JSON Schema. */
export const WebhookEventTypeItem = Type.Object({
  type: Type.String(),
  description: Type.String(),
  /** The JSON Schema (draft 2020-12) of the POSTed body. */
  schema: freeForm(),
});

/** The catalogue, in the order of WEBHOOK_EVENT_TYPES. */
export const WEBHOOK_EVENT_CATALOGUE: ReadonlyArray<Static<typeof WebhookEventTypeItem>> = Object.freeze(
  (Object.keys(DATA) as WebhookEventType[]).map((type) => ({
    type,
    description: WEBHOOK_EVENT_DESCRIPTIONS[type],
    schema: JSON.parse(JSON.stringify(payloadSchema(type))) as Record<string, unknown>,
  })),
);
