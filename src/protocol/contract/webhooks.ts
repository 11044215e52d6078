// keyguard's own webhooks.* operations: a workspace's webhook endpoints (where its events go, signed
// per Standard Webhooks), the deliveries of their messages, and a message sent again.
import * as Type from "typebox";
import { id, strict, text } from "./fields";
import { EmptyData } from "./resources";

export const CreateWebhookEndpointRequest = strict({
  /** http(s) URL the events are POSTed to. */
  url: text(2048, { pattern: "^https?://", "x-fix": "Use an http:// or https:// URL." }),
  /** Event types, each one of WEBHOOK_EVENT_TYPES (./webhook-events). */
  events: Type.Array(text(64), { minItems: 1, maxItems: 20 }),
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
});

export const DeleteWebhookEndpointRequest = strict({ endpointId: id() });

export const ListWebhookDeliveriesRequest = strict({
  endpointId: Type.Optional(id()),
  /** 1..100, default 50: the latest messages. */
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
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

/** An endpoint disabled after a message failed for its whole retry window gets messages again. */
export const EnableWebhookEndpointRequest = strict({ endpointId: id() });

/** A message sent again: due at once, its retry window starting anew, same `webhook-id`. */
export const ResendWebhookDeliveryRequest = strict({ messageId: id() });

export const webhooksOperations = {
  "webhooks.createEndpoint": { request: CreateWebhookEndpointRequest, response: CreatedWebhookEndpoint },
  "webhooks.listEndpoints": { request: strict({}), response: Type.Array(WebhookEndpointItem) },
  "webhooks.deleteEndpoint": { request: DeleteWebhookEndpointRequest, response: EmptyData },
  "webhooks.enableEndpoint": { request: EnableWebhookEndpointRequest, response: EmptyData },
  "webhooks.resendDelivery": { request: ResendWebhookDeliveryRequest, response: WebhookDeliveryItem },
  "webhooks.listDeliveries": { request: ListWebhookDeliveriesRequest, response: Type.Array(WebhookDeliveryItem) },
} as const;
