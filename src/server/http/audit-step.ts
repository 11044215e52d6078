// The audit steps of the request pipeline: after `run`, the record of what a state-changing
// operation changed, written in its transaction; after a refusal for permissions, the record of
// the attempt, written once the refused transaction has ended.
import { describeChange, idsNamedBy } from "../domain/audit-change";
import { newId } from "../domain/ids";
import type { AuditChange, OpContext, RunContext } from "../operations/operation";
import type { AnyOperation } from "../operations/table";
import type { StorageTx } from "../storage/seam";
import type { AuditEvent } from "../records";
import type { ServiceError } from "../errors";
import type { WebhookEndpointRecord } from "../webhooks/endpoints";
import { messagesOf } from "../webhooks/events";

/** What a record tells of its request. */
type RequestFacts = Pick<OpContext, "root" | "requestId" | "ip" | "now">;

function auditEvent(
  facts: RequestFacts,
  operation: string,
  outcome: AuditEvent["outcome"],
  targets: ReadonlyArray<string | undefined>,
  change: Record<string, unknown>,
): AuditEvent {
  const { root } = facts;
  const event: AuditEvent = {
    id: newId("aud"),
    time: facts.now,
    workspaceId: root.workspaceId,
    actorId: root.rootKeyId,
    operation,
    targets: [...new Set(targets.filter((t): t is string => typeof t === "string" && t !== ""))],
    outcome,
    requestId: facts.requestId,
    ip: facts.ip,
    change,
  };
  if (root.name !== undefined) event.actorName = root.name;
  return event;
}

/**
 * audit: the record of a successful call, when the operation declares it changes state or noted a
 * change (`ctx.changed`), and the webhook messages of its event for the workspace's `endpoints`;
 * written on the operation's transaction (or `direct`), so they are kept exactly when the change
 * is. Returns how many messages went to the outbox.
 */
export async function auditChanges(
  op: AnyOperation,
  ctx: RunContext<unknown>,
  body: unknown,
  data: unknown,
  noted: readonly AuditChange[],
  endpoints: readonly WebhookEndpointRecord[],
): Promise<number> {
  const changes = op.audit ? [...noted, op.audit(body, data, ctx.resource)] : noted;
  if (changes.length === 0) return 0;
  // The descriptions given, else the body's.
  const given = changes.flatMap((c) => (c.change ? [c.change] : []));
  const change = given.length === 0 ? describeChange(body) : given.length === 1 ? given[0]! : { changes: given };
  const event = auditEvent(
    ctx,
    op.name,
    "success",
    changes.flatMap((c) => c.targets),
    change,
  );
  await ctx.tx.appendAudit(event);
  const messages = messagesOf(event, endpoints);
  if (messages.length > 0) await ctx.tx.enqueueWebhooks(messages);
  return messages.length;
}

/** The record of an attempt refused for permissions: the ids the request named, the permission asked for and the refusal. */
export function auditRefusal(tx: StorageTx, op: AnyOperation, facts: RequestFacts, body: unknown, err: ServiceError): Promise<void> {
  const change = { permission: op.authorize.permission, status: err.status, detail: err.detail };
  return tx.appendAudit(auditEvent(facts, op.name, "refused", idsNamedBy(body), change));
}
