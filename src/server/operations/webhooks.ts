// keyguard's own webhooks.* operations: register a workspace's endpoints (the signing secret is
// answered once), list, change, pause and resume, enable again and delete them, rotate their
// secret; the catalogue of event types; list the deliveries (filtered, a page at a time), one with
// its attempts; send a message again, every failed one since a time, or a test message.
import { ServiceError } from "../errors";
import { newId } from "../domain/ids";
import { described } from "../domain/caller-value";
import { isPrivateAddress } from "../webhooks/address-guard";
import { newSecret } from "../webhooks/deliver";
import { readEndpoints, sealSecret, writeEndpoints, type WebhookEndpointRecord } from "../webhooks/endpoints";
import { eventMessages, WEBHOOK_TEST } from "../webhooks/events";
import { ALL_EVENTS, WEBHOOK_EVENT_TYPES } from "../../protocol/contract/webhook-events";
import { WEBHOOK_EVENT_CATALOGUE, type TestEventData } from "../../protocol/contract/webhook-payloads";
import { permission } from "./authorization";
import { defineExtension, type OpContext } from "./operation";
import type { Static } from "typebox";
import type { WebhookDeliveryItem, WebhookEndpointItem } from "../../protocol/contract/webhooks";
import type { ValidationErrorDetail } from "../../protocol/types";
import type { StorageTx } from "../storage/seam";
import type { WebhookMessage } from "../records";

const MAX_ENDPOINTS = 20;
/** Default overlap of a rotation: the replaced secret signs as well for this long. */
const DEFAULT_OVERLAP_HOURS = 24;
/** Failed messages webhooks.resendFailed sends again per call. */
const RESEND_FAILED_MAX = 1000;
const DELIVERIES_PAGE = 50;

/** The problems of an endpoint's `url` and `events`, as the 400 lists them. */
function endpointProblems(body: { url?: string; events?: readonly string[] }): ValidationErrorDetail[] {
  const problems = (body.events ?? []).flatMap((type, i) =>
    type === ALL_EVENTS || WEBHOOK_EVENT_TYPES.includes(type)
      ? []
      : [
          {
            location: `body.events[${i}]`,
            message: "is not an event type",
            fix: `Use "${ALL_EVENTS}" for every type, or one of ${WEBHOOK_EVENT_TYPES.join(", ")}.`,
          },
        ],
  );
  if (body.url === undefined) return problems;
  let host: string | undefined;
  try {
    host = new URL(body.url).hostname.replace(/^\[|\]$/g, "");
  } catch {
    problems.push({ location: "body.url", message: "is not a URL", fix: "Use an http:// or https:// URL." });
  }
  if (host === "") problems.push({ location: "body.url", message: "has no host", fix: "Use an http:// or https:// URL." });
  return problems;
}

/** A literal address is checked when it is given (names are checked at every delivery, as they resolve then). */
function checkAddress(ctx: OpContext, url: string): void {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
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
}

const endpointNotFound = (endpointId: string) =>
  new ServiceError(
    "data.key_not_found",
    `The webhook endpoint named by ${described("body.endpointId", endpointId)} does not exist in this workspace.`,
  );

/** An endpoint as the operations answer it (never its secret). */
function endpointItem(e: WebhookEndpointRecord, now: number): Static<typeof WebhookEndpointItem> {
  return {
    endpointId: e.id,
    url: e.url,
    events: e.events,
    createdAt: e.createdAt,
    ...(e.description === undefined ? {} : { description: e.description }),
    ...(e.disabledAt === undefined ? {} : { disabledAt: e.disabledAt }),
    ...(e.pausedAt === undefined ? {} : { pausedAt: e.pausedAt }),
    ...(e.previousSecretUntil !== undefined && e.previousSecretUntil > now ? { previousSecretExpiresAt: e.previousSecretUntil } : {}),
  };
}

/** Changes one endpoint of the caller's workspace in the operation's transaction; returns it as changed. */
async function changeEndpoint(
  ctx: OpContext & { tx: StorageTx },
  endpointId: string,
  change: (endpoint: WebhookEndpointRecord) => void,
): Promise<WebhookEndpointRecord> {
  const endpoints = await readEndpoints(ctx.tx, ctx.root.workspaceId);
  const endpoint = endpoints.find((e) => e.id === endpointId);
  if (!endpoint) throw endpointNotFound(endpointId);
  change(endpoint);
  await writeEndpoints(ctx.tx, ctx.root.workspaceId, endpoints);
  return endpoint;
}

export const createEndpointOperation = defineExtension("webhooks.createEndpoint", {
  access: "write",
  authorize: permission("workspace.*.create_webhook"),
  audit: (_body, data) => ({ targets: [data.endpointId] }),
  refine: endpointProblems,
  async run(ctx, body) {
    checkAddress(ctx, body.url);
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
    return { data: endpoints.map((e) => endpointItem(e, ctx.now)) };
  },
});

/** Its URL, event types or description changed; what it was sent meanwhile keeps going to the new URL. */
export const updateEndpointOperation = defineExtension("webhooks.updateEndpoint", {
  access: "write",
  authorize: permission("workspace.*.update_webhook"),
  audit: (body) => ({ targets: [body.endpointId] }),
  refine: endpointProblems,
  async run(ctx, body) {
    if (body.url !== undefined) checkAddress(ctx, body.url);
    const endpoint = await changeEndpoint(ctx, body.endpointId, (e) => {
      if (body.url !== undefined) e.url = body.url;
      if (body.events !== undefined) e.events = [...new Set(body.events)];
      if (body.description === null) delete e.description;
      else if (body.description !== undefined) e.description = body.description;
    });
    return { data: endpointItem(endpoint, ctx.now) };
  },
});

export const deleteEndpointOperation = defineExtension("webhooks.deleteEndpoint", {
  access: "write",
  authorize: permission("workspace.*.delete_webhook"),
  audit: (body) => ({ targets: [body.endpointId] }),
  async run(ctx, body) {
    const endpoints = await readEndpoints(ctx.tx, ctx.root.workspaceId);
    if (!endpoints.some((e) => e.id === body.endpointId)) throw endpointNotFound(body.endpointId);
    await writeEndpoints(
      ctx.tx,
      ctx.root.workspaceId,
      endpoints.filter((e) => e.id !== body.endpointId),
    );
    return { data: {} };
  },
});

export const enableEndpointOperation = defineExtension("webhooks.enableEndpoint", {
  access: "write",
  authorize: permission("workspace.*.update_webhook"),
  audit: (body) => ({ targets: [body.endpointId] }),
  async run(ctx, body) {
    await changeEndpoint(ctx, body.endpointId, (e) => delete e.disabledAt);
    return { data: {} };
  },
});

/** Paused: its events are still put in the outbox, and kept there (not tried) until it is resumed. */
export const pauseEndpointOperation = defineExtension("webhooks.pauseEndpoint", {
  access: "write",
  authorize: permission("workspace.*.update_webhook"),
  audit: (body) => ({ targets: [body.endpointId] }),
  async run(ctx, body) {
    const endpoint = await changeEndpoint(ctx, body.endpointId, (e) => void (e.pausedAt ??= ctx.now));
    return { data: endpointItem(endpoint, ctx.now) };
  },
});

/** The messages kept while it was paused are due at once, each with a whole retry window from now. */
export const resumeEndpointOperation = defineExtension("webhooks.resumeEndpoint", {
  access: "write",
  authorize: permission("workspace.*.update_webhook"),
  audit: (body) => ({ targets: [body.endpointId] }),
  async run(ctx, body) {
    let wasPaused = false;
    const endpoint = await changeEndpoint(ctx, body.endpointId, (e) => {
      wasPaused = e.pausedAt !== undefined;
      if (!wasPaused) return;
      delete e.pausedAt;
      e.resumedAt = ctx.now;
    });
    // In the same transaction: a pass that held a message before this commits looks at the endpoint again.
    if (wasPaused) await ctx.tx.rescheduleWebhooks(ctx.root.workspaceId, endpoint.id, ctx.now);
    return { data: endpointItem(endpoint, ctx.now) };
  },
});

/** A new secret, answered once; the one it replaces signs as well (a second signature) for the overlap. */
export const rotateSecretOperation = defineExtension("webhooks.rotateSecret", {
  access: "write",
  authorize: permission("workspace.*.update_webhook"),
  audit: (body) => ({ targets: [body.endpointId] }),
  async run(ctx, body) {
    const overlapMs = (body.overlapHours ?? DEFAULT_OVERLAP_HOURS) * 3_600_000;
    const secret = newSecret();
    await changeEndpoint(ctx, body.endpointId, (e) => {
      if (overlapMs > 0) {
        e.previousSecret = e.secret;
        e.previousSecretUntil = ctx.now + overlapMs;
      } else {
        delete e.previousSecret;
        delete e.previousSecretUntil;
      }
      e.secret = sealSecret(secret, e, ctx.vault);
    });
    return { data: { secret, previousSecretExpiresAt: ctx.now + overlapMs } };
  },
});

export const listEventTypesOperation = defineExtension("webhooks.listEventTypes", {
  access: "direct",
  authorize: permission("workspace.*.read_webhook"),
  run: () => Promise.resolve({ data: [...WEBHOOK_EVENT_CATALOGUE] }),
});

/** A message as `listDeliveries` and the resends answer it. */
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
    const limit = body.limit ?? DELIVERIES_PAGE;
    const { endpointId, status, cursor } = body;
    const found = await ctx.webhooks.messages({ workspaceId: ctx.root.workspaceId, endpointId, status, from: cursor, limit: limit + 1 });
    const next = found[limit];
    return {
      data: found.slice(0, limit).map(deliveryItem),
      pagination: next ? { cursor: next.id, hasMore: true } : { hasMore: false },
    };
  },
});

async function messageOf(ctx: OpContext, messageId: string): Promise<WebhookMessage> {
  const message = await ctx.webhooks.message(messageId);
  if (!message || message.workspaceId !== ctx.root.workspaceId) {
    throw new ServiceError(
      "data.key_not_found",
      `The webhook message named by ${described("body.messageId", messageId)} does not exist in this workspace.`,
    );
  }
  return message;
}

export const getDeliveryOperation = defineExtension("webhooks.getDelivery", {
  access: "direct",
  authorize: permission("workspace.*.read_webhook"),
  async run(ctx, body) {
    const m = await messageOf(ctx, body.messageId);
    const attemptHistory = (m.history ?? []).map((a) => ({
      time: a.time,
      status: a.status,
      ...(a.error === undefined ? {} : { error: a.error }),
      durationMs: a.durationMs,
    }));
    return { data: { ...deliveryItem(m), payload: JSON.parse(m.payload) as Record<string, unknown>, attemptHistory } };
  },
});

/** The endpoint messages may be sent to again: it exists and is enabled (a paused one keeps them until resumed). */
async function sendableEndpoint(ctx: OpContext, endpointId: string): Promise<WebhookEndpointRecord> {
  const endpoint = (await readEndpoints(ctx.tx, ctx.root.workspaceId)).find((e) => e.id === endpointId);
  if (!endpoint) throw endpointNotFound(endpointId);
  if (endpoint.disabledAt !== undefined) {
    throw new ServiceError(
      "application.precondition_failed",
      `The webhook endpoint ${endpoint.id} is disabled: enable it (webhooks.enableEndpoint) before sending messages to it again.`,
    );
  }
  return endpoint;
}

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
    const message = await messageOf(ctx, body.messageId);
    await sendableEndpoint(ctx, message.endpointId);
    return { data: deliveryItem(await ctx.webhooks.resend(message)) };
  },
});

/**
 * Every message of an endpoint that failed and was created at or after `since`, sent again as
 * resendDelivery sends one (at most RESEND_FAILED_MAX a call, newest first). A message sent again is
 * pending, no longer failed: a call repeated sends none twice (two calls at the same instant may both
 * send one again: the same message, same `webhook-id`, which receivers deduplicate anyway).
 */
export const resendFailedOperation = defineExtension("webhooks.resendFailed", {
  access: "direct",
  authorize: permission("workspace.*.update_webhook"),
  audit: (body, data) => ({ targets: [body.endpointId], change: { since: body.since, resent: data.resent } }),
  async run(ctx, body) {
    await sendableEndpoint(ctx, body.endpointId);
    const messageIds: string[] = [];
    let from: string | undefined;
    let hasMore = false;
    scan: for (;;) {
      const page = await ctx.webhooks.messages({
        workspaceId: ctx.root.workspaceId,
        endpointId: body.endpointId,
        status: "failed",
        from,
        limit: 101,
      });
      for (const m of page.slice(0, 100)) {
        if (m.createdAt < body.since) break scan;
        if (messageIds.length === RESEND_FAILED_MAX) {
          hasMore = true;
          break scan;
        }
        // Read again: another call may have sent it again since the page was read.
        const current = await ctx.webhooks.message(m.id);
        if (current?.status !== "failed") continue;
        await ctx.webhooks.resend(current);
        messageIds.push(m.id);
      }
      if (page.length <= 100) break;
      from = page[100]!.id;
    }
    return { data: { resent: messageIds.length, messageIds, hasMore } };
  },
});

/** A `webhook.test` message to one endpoint (whatever event types it asked for), delivered as any other. */
export const sendTestEventOperation = defineExtension("webhooks.sendTestEvent", {
  access: "direct",
  authorize: permission("workspace.*.update_webhook"),
  audit: (body, data) => ({ targets: [body.endpointId, data.messageId] }),
  async run(ctx, body) {
    const endpoint = await sendableEndpoint(ctx, body.endpointId);
    const data: TestEventData = {
      workspaceId: ctx.root.workspaceId,
      endpointId: endpoint.id,
      message: body.message ?? "A test event from keyguard.",
    };
    const [message] = eventMessages({ type: WEBHOOK_TEST, workspaceId: ctx.root.workspaceId, time: ctx.now, data }, [
      { ...endpoint, events: [WEBHOOK_TEST] },
    ]);
    await ctx.tx.enqueueWebhooks([message!]);
    ctx.webhooks.deliverSoon();
    return { data: deliveryItem(message!) };
  },
});
