// Which changes are webhook events, and their messages: an operation's successful change becomes
// an event of one type, put in the outbox for every endpoint of the workspace that wants it, in the
// change's own transaction. Payloads follow the Standard Webhooks format: { type, timestamp, data }.
import { ALL_EVENTS, type WebhookEventType } from "../../protocol/contract/webhook-events";
import type { ChangeEventData, ChangeSubject } from "../../protocol/contract/webhook-payloads";
import { newId } from "../domain/ids";
import type { AuditEvent, WebhookMessage } from "../records";
import type { WebhookEndpointRecord } from "./endpoints";

/** The event type of each operation's change, and what its first target is. */
const EVENT_OF: Readonly<Record<string, { type: WebhookEventType; subject: ChangeSubject }>> = {
  "keys.createKey": { type: "key.created", subject: "keyId" },
  "keys.updateKey": { type: "key.updated", subject: "keyId" },
  "keys.updateCredits": { type: "key.updated", subject: "keyId" },
  "keys.addPermissions": { type: "key.updated", subject: "keyId" },
  "keys.removePermissions": { type: "key.updated", subject: "keyId" },
  "keys.setPermissions": { type: "key.updated", subject: "keyId" },
  "keys.addRoles": { type: "key.updated", subject: "keyId" },
  "keys.removeRoles": { type: "key.updated", subject: "keyId" },
  "keys.setRoles": { type: "key.updated", subject: "keyId" },
  "keys.rerollKey": { type: "key.rerolled", subject: "keyId" },
  "keys.deleteKey": { type: "key.deleted", subject: "keyId" },
  "secretScanning.report": { type: "key.leaked", subject: "keyId" },
  "rootKeys.createRootKey": { type: "root_key.created", subject: "rootKeyId" },
  "rootKeys.deleteRootKey": { type: "root_key.deleted", subject: "rootKeyId" },
  "apis.createApi": { type: "api.created", subject: "apiId" },
  "apis.deleteApi": { type: "api.deleted", subject: "apiId" },
  "permissions.createPermission": { type: "permission.created", subject: "permissionId" },
  "permissions.deletePermission": { type: "permission.deleted", subject: "permissionId" },
  "permissions.createRole": { type: "role.created", subject: "roleId" },
  "permissions.deleteRole": { type: "role.deleted", subject: "roleId" },
  "identities.createIdentity": { type: "identity.created", subject: "identityId" },
  "identities.updateIdentity": { type: "identity.updated", subject: "identityId" },
  "identities.deleteIdentity": { type: "identity.deleted", subject: "identityId" },
  // The override first among the targets, its namespace second.
  "ratelimit.setOverride": { type: "ratelimit_override.set", subject: "overrideId" },
  "ratelimit.deleteOverride": { type: "ratelimit_override.deleted", subject: "overrideId" },
  "portal.createPortal": { type: "portal.created", subject: "portalId" },
  "portal.updatePortal": { type: "portal.updated", subject: "portalId" },
  "portal.deletePortal": { type: "portal.deleted", subject: "portalId" },
  // What a portal session's end user does to their own keys (the actor: the session).
  "portal.rerollKey": { type: "key.rerolled", subject: "keyId" },
  "portal.createKey": { type: "key.created", subject: "keyId" },
  "portal.setKeyEnabled": { type: "key.updated", subject: "keyId" },
  "portal.deleteKey": { type: "key.deleted", subject: "keyId" },
};

/**
 * Event types no operation makes: the service notices them itself, a key's credits on a charge
 * (credits-events.ts) and its coming expiry in a scan (expiry-notices.ts).
 */
export const CREDITS_LOW = "key.credits_low" satisfies WebhookEventType;
export const CREDITS_EXHAUSTED = "key.credits_exhausted" satisfies WebhookEventType;
export const KEY_EXPIRING = "key.expiring" satisfies WebhookEventType;
/** Sent by webhooks.sendTestEvent to one endpoint, whatever it asked for. */
export const WEBHOOK_TEST = "webhook.test" satisfies WebhookEventType;

/** One event of a workspace: its type, when it happened, and the payload's `data` (which names the workspace). */
export interface WebhookEvent {
  type: string;
  workspaceId: string;
  /** Unix ms. */
  time: number;
  data: Record<string, unknown>;
}

/** Whether an endpoint asked for events of `type` (by name, or all of them). */
const wants = (endpoint: WebhookEndpointRecord, type: string): boolean =>
  endpoint.events.includes(type) || (endpoint.events.includes(ALL_EVENTS) && type !== WEBHOOK_TEST);

/**
 * The outbox messages of an event: one per enabled endpoint that wants its type (a paused one
 * included: its messages wait for it to be resumed).
 */
export function eventMessages(event: WebhookEvent, endpoints: readonly WebhookEndpointRecord[]): WebhookMessage[] {
  const wanting = endpoints.filter((e) => e.disabledAt === undefined && wants(e, event.type));
  if (wanting.length === 0) return [];
  const payload = JSON.stringify({ type: event.type, timestamp: new Date(event.time).toISOString(), data: event.data });
  return wanting.map((endpoint) => ({
    id: newId("msg"),
    workspaceId: event.workspaceId,
    endpointId: endpoint.id,
    type: event.type,
    payload,
    createdAt: event.time,
    status: "pending",
    attempts: 0,
    nextAttemptAt: event.time,
  }));
}

/** The outbox messages of a recorded change: one per endpoint that wants its event type (none for a refusal). */
export function messagesOf(event: AuditEvent, endpoints: readonly WebhookEndpointRecord[]): WebhookMessage[] {
  const kind = EVENT_OF[event.operation];
  if (!kind || event.outcome !== "success") return [];
  const data: ChangeEventData = {
    workspaceId: event.workspaceId,
    ...({ [kind.subject]: event.targets[0] } as Record<ChangeSubject, string>),
    targets: event.targets,
    actor: { rootKeyId: event.actorId, ...(event.actorName === undefined ? {} : { name: event.actorName }) },
    requestId: event.requestId,
    change: event.change,
  };
  return eventMessages({ type: kind.type, workspaceId: event.workspaceId, time: event.time, data }, endpoints);
}
