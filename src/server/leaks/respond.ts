// What a verified secret-scanning report does: each token that is one of our keys (found by its
// hash, as keys are stored) gets the report recorded and, by its API's `leakResponse`, is disabled
// or only flagged; every token is labelled for the host (`true_positive` for a key of ours,
// `false_positive` otherwise). `keyLeaked` is the one place where a key is said to have leaked.
import { createHash } from "node:crypto";
import type { Logger } from "../../logger";
import { invalidateKeyHash, type InvalidationPublisher } from "../../protocol/invalidation";
import { keyHash } from "../../protocol/key-hash";
import { newId } from "../domain/ids";
import { readEndpoints } from "../webhooks/endpoints";
import { messagesOf } from "../webhooks/events";
import type { StorageTx } from "../storage/seam";
import { DEFAULT_LEAK_RESPONSE, type AuditEvent, type KeyRecord, type LeakReportRecord, type LeakResponse } from "../records";
import type { ReportedToken } from "./report";

/** How many reports a key keeps (the latest). */
const LEAK_REPORTS_KEPT = 20;

/** The host's label of one token: the protocol's answer entry. */
export interface TokenLabel {
  /** Hex SHA-256 of the token, as the protocol asks. */
  token_hash: string;
  token_type: string;
  label: "true_positive" | "false_positive";
}

/** A key that a report found: what `keyLeaked` is told. Never the key. */
export interface LeakedKey {
  keyId: string;
  /** The key's hash (base64 SHA-256), to tell apiKeyAuth() fleets. */
  hash: string;
  apiId: string;
  workspaceId: string;
  /** What was done to it. */
  response: LeakResponse;
  report: LeakReportRecord;
}

/** `url` without the token, should the host's URL hold it. */
function withoutToken(url: string, token: string): string {
  return url.split(token).join("[redacted]");
}

/** The key after a report: the report kept (the latest LEAK_REPORTS_KEPT), disabled when that is the response. */
function reported(key: KeyRecord, report: LeakReportRecord, response: LeakResponse, now: number): KeyRecord {
  const reports = [...(key.leakReports ?? []), report].slice(-LEAK_REPORTS_KEPT);
  const next: KeyRecord = { ...key, leakReports: reports, updatedAt: now };
  if (response === "disable") next.enabled = false;
  return next;
}

/** The report's request, for the audit records of the keys it finds. */
export interface ReportRequest {
  requestId: string;
  /** The host's address. */
  ip: string;
}

/** The audit record of a key a report found, written with the change (the actor is the host, not a root key). */
function leakAudit(key: KeyRecord, report: LeakReportRecord, response: LeakResponse, now: number, request: ReportRequest): AuditEvent {
  return {
    id: newId("aud"),
    time: now,
    workspaceId: key.workspaceId,
    actorId: "github-secret-scanning",
    actorName: "GitHub secret scanning",
    operation: "secretScanning.report",
    targets: [key.id, key.apiId],
    outcome: "success",
    requestId: request.requestId,
    ip: request.ip,
    change: { leakResponse: response, type: report.type, source: report.source, url: report.url },
  };
}

/**
 * Applies a report's tokens in one transaction: the labels in the report's order, and the keys
 * found (to hand to `keyLeaked` once the transaction committed), each with its audit record.
 */
export async function applyReport(
  tx: StorageTx,
  tokens: readonly ReportedToken[],
  now: number,
  request: ReportRequest,
): Promise<{ labels: TokenLabel[]; leaked: LeakedKey[] }> {
  const labels: TokenLabel[] = [];
  const leaked: LeakedKey[] = [];
  for (const t of tokens) {
    const hash = keyHash(t.token);
    const key = await tx.keyByHash(hash);
    const label = { token_hash: createHash("sha256").update(t.token, "utf8").digest("hex"), token_type: t.type };
    if (!key) {
      labels.push({ ...label, label: "false_positive" });
      continue;
    }
    const api = await tx.get("apis", key.apiId);
    const response = api?.leakResponse ?? DEFAULT_LEAK_RESPONSE;
    const report: LeakReportRecord = { reportedAt: now, type: t.type, url: withoutToken(t.url, t.token), source: t.source };
    await tx.put("keys", reported(key, report, response, now));
    const audit = leakAudit(key, report, response, now, request);
    await tx.appendAudit(audit);
    const messages = messagesOf(audit, await readEndpoints(tx, key.workspaceId));
    if (messages.length > 0) await tx.enqueueWebhooks(messages);
    leaked.push({ keyId: key.id, hash, apiId: key.apiId, workspaceId: key.workspaceId, response, report });
    labels.push({ ...label, label: "true_positive" });
  }
  return { labels, leaked };
}

/**
 * The one place where a key is said to have leaked, once its report is stored: apiKeyAuth() fleets
 * on the invalidation bus forget a disabled key's answers, and the operator is told in the log.
 * A webhook of leaks belongs here (the audit record is written with the report, in `applyReport`).
 */
export async function keyLeaked(leak: LeakedKey, deps: { logger: Logger; invalidate: InvalidationPublisher | undefined }): Promise<void> {
  if (leak.response === "disable") await deps.invalidate?.invalidate(invalidateKeyHash(leak.hash));
  deps.logger.warn(
    {
      keyId: leak.keyId,
      apiId: leak.apiId,
      workspaceId: leak.workspaceId,
      response: leak.response,
      url: leak.report.url,
      source: leak.report.source,
    },
    leak.response === "disable"
      ? "keyguard/server: a key was reported leaked by secret scanning and is now disabled"
      : "keyguard/server: a key was reported leaked by secret scanning (flagged, still enabled)",
  );
}
