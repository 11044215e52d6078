// keyguard's own webhooks.* operations: register a workspace's endpoints (the signing secret is
// answered once), list, enable again and delete them, list the latest deliveries with their
// outcome, and send a message again.
import { ServiceError } from "../errors";
import { newId } from "../domain/ids";
import { described } from "../domain/caller-value";
import { isPrivateAddress } from "../webhooks/address-guard";
import { newSecret } from "../webhooks/deliver";
import { readEndpoints, sealSecret, writeEndpoints, type WebhookEndpointRecord } from "../webhooks/endpoints";
import { WEBHOOK_EVENT_TYPES } from "../../protocol/contract/webhook-events";
import { permission } from "./authorization";
import { defineExtension } from "./operation";
import type { Static } from "typebox";
import type { WebhookDeliveryItem } from "../../protocol/contract/webhooks";
import type { WebhookMessage } from "../records";

const MAX_ENDPOINTS = 20;

export const createEndpointOperation = defineExtension("webhooks.createEndpoint", {
  access: "write",
  authorize: permission("workspace.*.create_webhook"),
  audit: (_body, data) => ({ targets: [data.endpointId] }),
  refine(body) {
    const problems = body.events.flatMap((type, i) =>
      WEBHOOK_EVENT_TYPES.includes(type)
        ? []
        : [
            {
              location: `body.events[${i}]`,
              message: "is not an event type",
              fix: `Use one of ${WEBHOOK_EVENT_TYPES.join(", ")}.`,
            },
          ],
    );
    let host: string | undefined;
    try {
      host = new URL(body.url).hostname.replace(/^\[|\]$/g, "");
    } catch {
      problems.push({ location: "body.url", message: "is not a URL", fix: "Use an http:// or https:// URL." });
    }
    if (host === "") problems.push({ location: "body.url", message: "has no host", fix: "Use an http:// or https:// URL." });
    return problems;
  },
  async run(ctx, body) {
    // A literal address is checked now too (names are checked at every delivery, as they resolve then).
    const host = new URL(body.url).hostname.replace(/^\[|\]$/g, "");
    if (!ctx.webhooks.allowPrivate && (host === "localhost" || (/^[\d.:a-f]+$/i.test(host) && isPrivateAddress(host)))) {
      throw new ServiceError("application.invalid_input", "The endpoint's address is not a public one.", {
        errors: [
          {
            location: "body.url",
            message: "is a loopback, private or link-local address",
            fix: "Use a public address, or start the service with --webhooks-allow-private.",
          },
        ],
      });
    }
    const endpoints = await readEndpoints(ctx.tx, ctx.root.workspaceId);
    if (endpoints.length >= MAX_ENDPOINTS) {
      throw new ServiceError("application.invalid_input", `A workspace has at most ${MAX_ENDPOINTS} webhook endpoints.`, {
        errors: [{ location: "body", message: "too many endpoints", fix: "Delete an endpoint first." }],
      });
    }
    const id = newId("whep");
    const secret = newSecret();
    const record: WebhookEndpointRecord = {
      id,
      workspaceId: ctx.root.workspaceId,
      url: body.url,
      events: [...new Set(body.events)],
      secret: sealSecret(secret, { workspaceId: ctx.root.workspaceId, id }, ctx.vault),
      createdAt: ctx.now,
      ...(body.description === undefined ? {} : { description: body.description }),
    };
    await writeEndpoints(ctx.tx, ctx.root.workspaceId, [...endpoints, record]);
    return { data: { endpointId: record.id, secret } };
  },
});

export const listEndpointsOperation = defineExtension("webhooks.listEndpoints", {
  access: "read",
  authorize: permission("workspace.*.read_webhook"),
  async run(ctx) {
    const endpoints = await readEndpoints(ctx.tx, ctx.root.workspaceId);
    return {
      data: endpoints.map((e) => ({
        endpointId: e.id,
        url: e.url,
        events: e.events,
        createdAt: e.createdAt,
        ...(e.description === undefined ? {} : { description: e.description }),
        ...(e.disabledAt === undefined ? {} : { disabledAt: e.disabledAt }),
      })),
    };
  },
});

export const deleteEndpointOperation = defineExtension("webhooks.deleteEndpoint", {
  access: "write",
  authorize: permission("workspace.*.delete_webhook"),
  audit: (body) => ({ targets: [body.endpointId] }),
  async run(ctx, body) {
    const endpoints = await readEndpoints(ctx.tx, ctx.root.workspaceId);
    if (!endpoints.some((e) => e.id === body.endpointId)) {
      throw endpointNotFound(body.endpointId);
    }
    await writeEndpoints(
      ctx.tx,
      ctx.root.workspaceId,
      endpoints.filter((e) => e.id !== body.endpointId),
    );
    return { data: {} };
  },
});

/** A message as `listDeliveries` and `resendDelivery` answer it. */
function deliveryItem(m: WebhookMessage): Static<typeof WebhookDeliveryItem> {
  return {
    messageId: m.id,
    endpointId: m.endpointId,
    type: m.type,
    status: m.status,
    attempts: m.attempts,
    createdAt: m.createdAt,
    ...(m.status === "pending" ? { nextAttemptAt: m.nextAttemptAt } : {}),
    ...(m.lastStatus === undefined ? {} : { lastStatus: m.lastStatus }),
    ...(m.lastError === undefined ? {} : { lastError: m.lastError }),
    ...(m.lastLatencyMs === undefined ? {} : { lastLatencyMs: m.lastLatencyMs }),
    ...(m.deliveredAt === undefined ? {} : { deliveredAt: m.deliveredAt }),
  };
}

export const listDeliveriesOperation = defineExtension("webhooks.listDeliveries", {
  access: "direct",
  authorize: permission("workspace.*.read_webhook"),
  async run(ctx, body) {
    const messages = await ctx.webhooks.messages(ctx.root.workspaceId, body.endpointId, body.limit ?? 50);
    return { data: messages.map(deliveryItem) };
  },
});

const endpointNotFound = (endpointId: string) =>
  new ServiceError(
    "data.key_not_found",
    `The webhook endpoint named by ${described("body.endpointId", endpointId)} does not exist in this workspace.`,
  );

export const enableEndpointOperation = defineExtension("webhooks.enableEndpoint", {
  access: "write",
  authorize: permission("workspace.*.update_webhook"),
  audit: (body) => ({ targets: [body.endpointId] }),
  async run(ctx, body) {
    const endpoints = await readEndpoints(ctx.tx, ctx.root.workspaceId);
    const endpoint = endpoints.find((e) => e.id === body.endpointId);
    if (!endpoint) throw endpointNotFound(body.endpointId);
    if (endpoint.disabledAt !== undefined) {
      delete endpoint.disabledAt;
      await writeEndpoints(ctx.tx, ctx.root.workspaceId, endpoints);
    }
    return { data: {} };
  },
});

/**
 * A message (delivered, failed or still pending) sent again: due at once, with the same
 * `webhook-id` (a receiver that keeps ids treats it as the message it may already have), retried
 * for a whole retry window from now. Its endpoint must still exist and be enabled.
 */
export const resendDeliveryOperation = defineExtension("webhooks.resendDelivery", {
  access: "direct",
  authorize: permission("workspace.*.update_webhook"),
  audit: (body, data) => ({ targets: [body.messageId, data.endpointId] }),
  async run(ctx, body) {
    const message = await ctx.webhooks.message(body.messageId);
    if (!message || message.workspaceId !== ctx.root.workspaceId) {
      throw new ServiceError(
        "data.key_not_found",
        `The webhook message named by ${described("body.messageId", body.messageId)} does not exist in this workspace.`,
      );
    }
    const endpoint = (await readEndpoints(ctx.tx, ctx.root.workspaceId)).find((e) => e.id === message.endpointId);
    if (!endpoint) throw new ServiceError("data.key_not_found", "The webhook endpoint of this message no longer exists.");
    if (endpoint.disabledAt !== undefined) {
      throw new ServiceError(
        "application.precondition_failed",
        `The webhook endpoint ${endpoint.id} is disabled: enable it (webhooks.enableEndpoint) before sending messages to it again.`,
      );
    }
    return { data: deliveryItem(await ctx.webhooks.resend(message)) };
  },
});
