// The audit steps of the request pipeline: after `run`, the record of what a state-changing
// operation changed, written in its transaction; after a refusal for permissions, the record of
// the attempt, written once the refused transaction has ended.
import { describeChange } from "../domain/audit-change";
import { newId } from "../domain/ids";
import type { AuditChange, OpContext, RunContext } from "../operations/operation";
import type { AnyOperation } from "../operations/table";
import type { StorageTx } from "../storage/seam";
import type { AuditEvent, TableName } from "../records";
import type { ServiceError } from "../errors";
import { readEndpoints, type WebhookEndpointRecord } from "../webhooks/endpoints";
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
  // The descriptions given, else the body's (which names the operation's own ids only).
  const targets = changes.flatMap((c) => c.targets).filter((t): t is string => typeof t === "string");
  const given = changes.flatMap((c) => (c.change ? [c.change] : []));
  const change = given.length === 0 ? describeChange(body, targets) : given.length === 1 ? given[0]! : { changes: given };
  const event = auditEvent(ctx, op.name, "success", targets, change);
  await ctx.tx.appendAudit(event);
  const messages = messagesOf(event, endpoints);
  if (messages.length > 0) await ctx.tx.enqueueWebhooks(messages);
  return messages.length;
}

/**
 * The record of an attempt refused for permissions: the records of the workspace the request named
 * by id (looked up: a string that is no id of a record found is not kept), the permission asked
 * for and the refusal.
 */
export async function auditRefusal(tx: StorageTx, op: AnyOperation, facts: RequestFacts, body: unknown, err: ServiceError): Promise<void> {
  const change = { permission: op.authorize.permission, status: err.status, detail: err.detail };
  const targets = await foundIds(tx, facts.root.workspaceId, body);
  return tx.appendAudit(auditEvent(facts, op.name, "refused", targets, change));
}

/** The tables a request's id fields name records of. */
const ID_FIELDS: Readonly<Record<string, Exclude<TableName, "workspaces">>> = Object.freeze({
  keyId: "keys",
  apiId: "apis",
  permissionId: "permissions",
  roleId: "roles",
  identityId: "identities",
  rootKeyId: "rootKeys",
  namespaceId: "ratelimitNamespaces",
  overrideId: "ratelimitOverrides",
  portalId: "portals",
});

/** The ids of the body's top-level id fields (`keyId`, `endpointId`…) that are records of the workspace (a message's id is not looked up). */
async function foundIds(tx: StorageTx, workspaceId: string, body: unknown): Promise<string[]> {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return [];
  const found: string[] = [];
  for (const [field, value] of Object.entries(body as Record<string, unknown>)) {
    if (typeof value !== "string" || value === "") continue;
    const table = ID_FIELDS[field];
    let mine = false;
    if (table !== undefined) mine = (await tx.get(table, value))?.workspaceId === workspaceId;
    else if (field === "endpointId") mine = (await readEndpoints(tx, workspaceId)).some((e) => e.id === value);
    if (mine) found.push(value);
  }
  return found;
}
