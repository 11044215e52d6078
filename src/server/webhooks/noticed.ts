// Events the service notices itself (a charge's credits, a coming expiry), unlike an operation's
// change: their messages go to the outbox for the endpoints of each event's workspace, read once
// per workspace.
import type { StorageTx } from "../storage/seam";
import { readEndpoints, type WebhookEndpointRecord } from "./endpoints";
import { eventMessages, type WebhookEvent } from "./events";

/** Puts the events' messages in the outbox on `tx` (in its transaction, if it has one); returns how many. */
export async function enqueueNoticed(tx: StorageTx, events: readonly WebhookEvent[]): Promise<number> {
  const endpoints = new Map<string, WebhookEndpointRecord[]>();
  for (const e of events) if (!endpoints.has(e.workspaceId)) endpoints.set(e.workspaceId, await readEndpoints(tx, e.workspaceId));
  const messages = events.flatMap((e) => eventMessages(e, endpoints.get(e.workspaceId)!));
  if (messages.length > 0) await tx.enqueueWebhooks(messages);
  return messages.length;
}
