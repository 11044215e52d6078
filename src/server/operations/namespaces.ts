// Rate-limit namespaces and their overrides, as ratelimit.limit, multiLimit and the override
// operations see them: finding a namespace by id or name, creating it on first use, and the
// override that applies to an identifier (exact first, then the first `*` pattern that matches).
import { createHash } from "node:crypto";
import { encodeBase58Fixed } from "../../protocol/base58";
import { ServiceError } from "../errors";
import type { StorageTx } from "../storage/seam";
import type { RatelimitNamespaceRecord, RatelimitOverrideRecord } from "../records";

/** A namespace of the workspace by id, else by name. */
export async function findNamespace(tx: StorageTx, workspaceId: string, ref: string): Promise<RatelimitNamespaceRecord | undefined> {
  const byId = await tx.get("ratelimitNamespaces", ref);
  if (byId?.workspaceId === workspaceId) return byId;
  return (await tx.find("ratelimitNamespaces", workspaceId, "name", ref))[0];
}

/** As production: 404 for a namespace that does not exist in the workspace. */
export async function requireNamespace(tx: StorageTx, workspaceId: string, ref: string): Promise<RatelimitNamespaceRecord> {
  const found = await findNamespace(tx, workspaceId, ref);
  if (!found) throw new ServiceError("data.ratelimit_namespace_not_found", "This namespace does not exist.");
  return found;
}

/**
 * The id of the namespace `name` creates in a workspace: derived from both, so that requests
 * racing to create it (ratelimit.limit runs outside transactions) all write the same record.
 */
function namespaceIdFor(workspaceId: string, name: string): string {
  const digest = createHash("sha256").update(`${workspaceId}\0${name}`, "utf8").digest();
  return `rlns_${encodeBase58Fixed(BigInt(`0x${digest.subarray(0, 16).toString("hex")}`), 22)}`;
}

/** Creates the namespace `name` (idempotent, see `namespaceIdFor`). */
export async function createNamespace(tx: StorageTx, workspaceId: string, name: string, now: number): Promise<RatelimitNamespaceRecord> {
  const record: RatelimitNamespaceRecord = { id: namespaceIdFor(workspaceId, name), workspaceId, name, createdAt: now };
  await tx.put("ratelimitNamespaces", record);
  return record;
}

/** The override of a namespace set for exactly this identifier (or pattern). */
export async function exactOverride(
  tx: StorageTx,
  ns: RatelimitNamespaceRecord,
  identifier: string,
): Promise<RatelimitOverrideRecord | undefined> {
  return (await tx.find("ratelimitOverrides", ns.workspaceId, "namespaceId", ns.id)).find((o) => o.identifier === identifier);
}

/** The override that applies to `identifier`: the exact one, else the first (by id) pattern that matches. */
export async function matchingOverride(
  tx: StorageTx,
  ns: RatelimitNamespaceRecord,
  identifier: string,
): Promise<RatelimitOverrideRecord | undefined> {
  const all = await tx.find("ratelimitOverrides", ns.workspaceId, "namespaceId", ns.id);
  return (
    all.find((o) => o.identifier === identifier) ?? all.find((o) => o.identifier.includes("*") && wildcardMatch(o.identifier, identifier))
  );
}

/**
 * Whether `text` matches `pattern` as a whole, where `*` stands for any sequence of characters
 * (the empty one too) and everything else for itself. Linear backtracking: no regular expression,
 * so no pattern can make it slow.
 */
export function wildcardMatch(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let mark = 0;
  while (t < text.length) {
    if (p < pattern.length && pattern[p] !== "*" && pattern[p] === text[t]) {
      p++;
      t++;
    } else if (p < pattern.length && pattern[p] === "*") {
      star = p++;
      mark = t;
    } else if (star >= 0) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === "*") p++;
  return p === pattern.length;
}
