// keyguard's own webhooks.* operations: a workspace's webhook endpoints (where its events go, signed
// per Standard Webhooks), changed, paused, their secret rotated; the catalogue of event types; the
// deliveries of their messages, one with its attempts, and messages sent again.
import * as Type from "typebox";
import { freeForm, id, listFields, nullable, strict, text } from "./fields";
import { EmptyData } from "./resources";
import { WebhookEventTypeItem } from "./webhook-payloads";

/** http(s) URL the events are POSTed to. */
const Url = text(2048, { pattern: "^https?://", "x-fix": "Use an http:// or https:// URL." });
/** Event types, each one of WEBHOOK_EVENT_TYPES (./webhook-events), or `"*"` for every type (later ones included). */
const Events = Type.Array(text(64), { minItems: 1, maxItems: 30 });
/** Unix ms. */
const Time = Type.Integer({ minimum: 0 });

export const CreateWebhookEndpointRequest = strict({
  url: Url,
  events: Events,
  description: Type.Optional(text(256)),
});
/** The secret is answered once, here: the service cannot show it again. */
export const CreatedWebhookEndpoint = Type.Object({ endpointId: Type.String(), secret: Type.String() });

export const WebhookEndpointItem = Type.Object({
  endpointId: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Type.Optional(Type.String()),
  createdAt: Type.Integer(),
  /** Set once a message to it failed for a whole retry window: it gets no message any more. */
  disabledAt: Type.Optional(Type.Integer()),
  /** Set while it is paused: its messages are kept and sent once it is resumed. */
  pausedAt: Type.Optional(Type.Integer()),
  /** After a rotation: until when the secret it replaced signs as well (Unix ms). */
  previousSecretExpiresAt: Type.Optional(Type.Integer()),
});

/** An omitted field is unchanged; `description: null` removes it. */
export const UpdateWebhookEndpointRequest = strict({
  endpointId: id(),
  url: Type.Optional(Url),
  events: Type.Optional(Events),
  description: Type.Optional(nullable(text(256))),
});

export const WebhookEndpointRequest = strict({ endpointId: id() });

export const RotateWebhookSecretRequest = strict({
  endpointId: id(),
  /** How long the replaced secret still signs, in hours (0..168, default 24): both signatures are sent meanwhile. */
  overlapHours: Type.Optional(Type.Integer({ minimum: 0, maximum: 168 })),
});
/** The new secret, answered once; the old one signs as well until `previousSecretExpiresAt`. */
export const RotatedWebhookSecret = Type.Object({ secret: Type.String(), previousSecretExpiresAt: Type.Integer() });

export const WebhookDeliveryStatus = Type.Enum(["pending", "delivered", "failed"], { type: "string" });

export const ListWebhookDeliveriesRequest = strict({
  endpointId: Type.Optional(id()),
  /** Only messages in this state. */
  status: Type.Optional(WebhookDeliveryStatus),
  /** `cursor` from an answer's `pagination`; `limit` 1..100, default 50: newest first. */
  ...listFields,
});
export const WebhookDeliveryItem = Type.Object({
  messageId: Type.String(),
  endpointId: Type.String(),
  type: Type.String(),
  status: Type.String(),
  attempts: Type.Integer(),
  createdAt: Type.Integer(),
  nextAttemptAt: Type.Optional(Type.Integer()),
  lastStatus: Type.Optional(Type.Integer()),
  lastError: Type.Optional(Type.String()),
  lastLatencyMs: Type.Optional(Type.Integer()),
  deliveredAt: Type.Optional(Type.Integer()),
});

/** One attempt to deliver a message. */
export const WebhookAttemptItem = Type.Object({
  /** When it started (Unix ms). */
  time: Type.Integer(),
  /** The HTTP status answered; 0 when there was no answer (`error` says why). */
  status: Type.Integer(),
  error: Type.Optional(Type.String()),
  durationMs: Type.Integer(),
});

export const GetWebhookDeliveryRequest = strict({ messageId: id() });
/** A message as listed, with the body it sends and its attempts, oldest first (the latest 50). */
export const WebhookDeliveryDetail = Type.Intersect([
  WebhookDeliveryItem,
  Type.Object({ payload: freeForm(), attemptHistory: Type.Array(WebhookAttemptItem) }),
]);

/** A message sent again: due at once, its retry window starting anew, same `webhook-id`. */
export const ResendWebhookDeliveryRequest = strict({ messageId: id() });

/** Every failed message of an endpoint since a time sent again, at most 1,000 a call. */
export const ResendFailedWebhooksRequest = strict({
  endpointId: id(),
  /** Messages created at or after this time (Unix ms). */
  since: Time,
});
/** `hasMore`: failed messages remain (call again); a message already sent again is pending, not failed, so a repeated call sends none twice. */
export const ResentFailedWebhooks = Type.Object({ resent: Type.Integer(), messageIds: Type.Array(Type.String()), hasMore: Type.Boolean() });

export const SendTestWebhookRequest = strict({
  endpointId: id(),
  /** Shown in the test message's `data.message`. */
  message: Type.Optional(text(256)),
});

export const webhooksOperations = {
  "webhooks.createEndpoint": { request: CreateWebhookEndpointRequest, response: CreatedWebhookEndpoint },
  "webhooks.listEndpoints": { request: strict({}), response: Type.Array(WebhookEndpointItem) },
  "webhooks.updateEndpoint": { request: UpdateWebhookEndpointRequest, response: WebhookEndpointItem },
  "webhooks.deleteEndpoint": { request: WebhookEndpointRequest, response: EmptyData },
  "webhooks.enableEndpoint": { request: WebhookEndpointRequest, response: EmptyData },
  "webhooks.pauseEndpoint": { request: WebhookEndpointRequest, response: WebhookEndpointItem },
  "webhooks.resumeEndpoint": { request: WebhookEndpointRequest, response: WebhookEndpointItem },
  "webhooks.rotateSecret": { request: RotateWebhookSecretRequest, response: RotatedWebhookSecret },
  "webhooks.listEventTypes": { request: strict({}), response: Type.Array(WebhookEventTypeItem) },
  "webhooks.sendTestEvent": { request: SendTestWebhookRequest, response: WebhookDeliveryItem },
  "webhooks.resendDelivery": { request: ResendWebhookDeliveryRequest, response: WebhookDeliveryItem },
  "webhooks.resendFailed": { request: ResendFailedWebhooksRequest, response: ResentFailedWebhooks },
  "webhooks.getDelivery": { request: GetWebhookDeliveryRequest, response: WebhookDeliveryDetail },
  "webhooks.listDeliveries": { request: ListWebhookDeliveriesRequest, response: Type.Array(WebhookDeliveryItem) },
} as const;
