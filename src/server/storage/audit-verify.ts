// `keyguard audit verify`: each workspace's audit chain read from a store (in chain order, against
// the head the store keeps), or from an NDJSON export of audit.listEvents, checked record by
// record (domain/audit-chain.ts); the first record changed, removed or inserted is named.
import { ChainCheck, type ChainHead, type ChainProblem, type ChainSummary } from "../domain/audit-chain";
import { auditView } from "../domain/views";
import type { AuditEventItem } from "../../protocol/types";
import type { Storage } from "./seam";

/** What a check reads of a store: a Storage, or a reader opened for the check alone. */
export type AuditChainSource = Pick<Storage, "auditHeads" | "readAuditChain">;

/** The outcome of one workspace's log (an export: `workspaceId` absent). */
export interface AuditVerdict {
  workspaceId?: string;
  problem?: ChainProblem;
  summary: ChainSummary;
}

/** Records read from a store at a time. */
const PAGE = 1000;

/** Every workspace's chain of the store, in workspace id order. */
export async function verifyStoredAudit(source: AuditChainSource, page = PAGE): Promise<AuditVerdict[]> {
  const heads = await source.auditHeads();
  const verdicts: AuditVerdict[] = [];
  for (const workspaceId of [...heads.keys()].sort()) {
    verdicts.push({ workspaceId, ...(await verifyWorkspace(source, workspaceId, heads.get(workspaceId)!, page)) });
  }
  return verdicts;
}

async function verifyWorkspace(source: AuditChainSource, workspaceId: string, head: ChainHead, page: number) {
  const check = new ChainCheck(head);
  let after: { seq?: number; id: string } | undefined;
  let lastSeq = 0;
  for (;;) {
    const records = await source.readAuditChain(workspaceId, after, page);
    for (const r of records) {
      check.add(auditView(r));
      if (r.seq !== undefined && r.seq > lastSeq) lastSeq = r.seq;
    }
    if (check.found || records.length < page) break;
    const last = records[records.length - 1]!;
    after = last.seq === undefined ? { id: last.id } : { seq: last.seq, id: last.id };
  }
  // Past the head read first: appended since, while a running service went on, if the head has
  // moved with them; else added behind its back, as the check then says.
  if (!check.found && lastSeq > head.seq) {
    const now = (await source.auditHeads()).get(workspaceId);
    if (now !== undefined && now.seq >= lastSeq) check.headMovedTo(now, lastSeq);
  }
  return check.end();
}

/** An NDJSON export of one workspace's log (any order: audit.listEvents exports newest first). Throws on a line that is not a record. */
export function verifyExportedAudit(text: string): AuditVerdict {
  const items: AuditEventItem[] = [];
  text.split("\n").forEach((line, i) => {
    if (line.trim() === "") return;
    let item: unknown;
    try {
      item = JSON.parse(line);
    } catch {
      throw new Error(`line ${i + 1} is not JSON`);
    }
    if (typeof item !== "object" || item === null || typeof (item as { id?: unknown }).id !== "string") {
      throw new Error(`line ${i + 1} is not an audit record (no id)`);
    }
    items.push(item as AuditEventItem);
  });
  const check = new ChainCheck();
  for (const item of items.sort(chainOrder)) check.add(item);
  return check.end();
}

/** Records without `seq` first (by id), then by `seq` and id. */
function chainOrder(a: AuditEventItem, b: AuditEventItem): number {
  return (a.seq ?? -1) - (b.seq ?? -1) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
