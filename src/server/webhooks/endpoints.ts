// A workspace's webhook endpoints: where its events go (a URL, the event types it wants) and the
// secret their signatures use, sealed with the service's encryption key when it has one. Kept as
// one meta value per workspace (a handful of endpoints), read and written in the operations'
// transactions.
import type { KeyVault } from "../domain/key-vault";
import type { MetaReadOptions, StorageTx } from "../storage/seam";
import type { WebhookEndpointRecord } from "../records";
import { webhookEndpointsMeta as metaName } from "../storage/state-file";

export type { WebhookEndpointRecord };

/** What a sealed secret is bound to: this endpoint's secret, and nothing else sealed with the same key. */
const boundTo = (endpoint: { workspaceId: string; id: string }) => ({ workspaceId: endpoint.workspaceId, id: `whsec:${endpoint.id}` });

/** The secret as stored: sealed when there is a vault. */
export function sealSecret(secret: string, endpoint: { workspaceId: string; id: string }, vault: KeyVault | undefined): string {
  return vault ? vault.seal(secret, boundTo(endpoint)) : secret;
}

/** A secret as stored, opened; undefined when it is sealed and cannot be opened (no vault, or another encryption key). */
function opened(stored: string, endpoint: WebhookEndpointRecord, vault: KeyVault | undefined): string | undefined {
  if (stored.startsWith("whsec_")) return stored;
  return vault?.open(stored, boundTo(endpoint));
}

/**
 * The secrets a message to the endpoint is signed with at `now`: its secret, then the one a
 * rotation replaced while the overlap lasts. Undefined when its secret cannot be opened.
 */
export function signingSecrets(endpoint: WebhookEndpointRecord, vault: KeyVault | undefined, now: number): string[] | undefined {
  const current = opened(endpoint.secret, endpoint, vault);
  if (current === undefined) return undefined;
  if (endpoint.previousSecret === undefined || (endpoint.previousSecretUntil ?? 0) <= now) return [current];
  const previous = opened(endpoint.previousSecret, endpoint, vault);
  return previous === undefined ? [current] : [current, previous];
}

/** The workspace's endpoints (none when it has none); `cached`: see `MetaReadOptions`. */
export async function readEndpoints(tx: StorageTx, workspaceId: string, options?: MetaReadOptions): Promise<WebhookEndpointRecord[]> {
  const raw = await tx.getMeta(metaName(workspaceId), options);
  return raw === undefined ? [] : (JSON.parse(raw) as WebhookEndpointRecord[]);
}

export async function writeEndpoints(tx: StorageTx, workspaceId: string, endpoints: readonly WebhookEndpointRecord[]): Promise<void> {
  await tx.setMeta(metaName(workspaceId), JSON.stringify(endpoints));
}
