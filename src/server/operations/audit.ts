// keyguard's own audit.listEvents: the workspace's audit log, newest first, filtered by actor,
// target, operation and time; a page at a time, or every record as NDJSON (`exportAll`).
import type { ListAuditEventsRequest } from "../../protocol/types";
import { permission } from "./authorization";
import { defineExtension, type OpContext } from "./operation";
import type { AuditQuery } from "../storage/seam";
import { auditView } from "../domain/views";

const DEFAULT_PAGE_SIZE = 100;
/** Records an export reads from the store at a time. */
const EXPORT_CHUNK = 500;

/** The store query of a request: its filters, in the caller's workspace only. */
function queryOf(ctx: OpContext, body: ListAuditEventsRequest, from: string | undefined, limit: number): AuditQuery {
  const { actorId, targetId, operation, since, until } = body;
  return { workspaceId: ctx.root.workspaceId, actorId, targetId, operation, since, until, from, limit };
}

export const listAuditEventsOperation = defineExtension("audit.listEvents", {
  access: "direct",
  authorize: permission("workspace.*.read_audit_log"),
  refine: (body) =>
    body.since !== undefined && body.until !== undefined && body.since > body.until
      ? [{ location: "body.until", message: "is before since", fix: "Send an until at or after since." }]
      : [],
  async run(ctx, body) {
    const limit = body.limit ?? DEFAULT_PAGE_SIZE;
    const found = await ctx.tx.listAudit(queryOf(ctx, body, body.cursor, limit + 1));
    const next = found[limit];
    return {
      data: found.slice(0, limit).map(auditView),
      pagination: next ? { cursor: next.id, hasMore: true } : { hasMore: false },
    };
  },
  // Every record matching the filters from the cursor on (`limit` does not apply), read in chunks.
  async *exportAll(ctx, body) {
    let from = body.cursor;
    for (;;) {
      const chunk = await ctx.tx.listAudit(queryOf(ctx, body, from, EXPORT_CHUNK + 1));
      for (const e of chunk.slice(0, EXPORT_CHUNK)) yield auditView(e);
      if (chunk.length <= EXPORT_CHUNK) return;
      from = chunk[EXPORT_CHUNK]!.id;
    }
  },
});
