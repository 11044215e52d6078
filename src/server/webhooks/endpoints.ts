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

/** The signing secret of an endpoint; undefined when it is sealed and cannot be opened (no vault, or another encryption key). */
export function signingSecret(endpoint: WebhookEndpointRecord, vault: KeyVault | undefined): string | undefined {
  if (endpoint.secret.startsWith("whsec_")) return endpoint.secret;
  return vault?.open(endpoint.secret, boundTo(endpoint));
}

/** The workspace's endpoints (none when it has none); `cached`: see `MetaReadOptions`. */
export async function readEndpoints(tx: StorageTx, workspaceId: string, options?: MetaReadOptions): Promise<WebhookEndpointRecord[]> {
  const raw = await tx.getMeta(metaName(workspaceId), options);
  return raw === undefined ? [] : (JSON.parse(raw) as WebhookEndpointRecord[]);
}

export async function writeEndpoints(tx: StorageTx, workspaceId: string, endpoints: readonly WebhookEndpointRecord[]): Promise<void> {
  await tx.setMeta(metaName(workspaceId), JSON.stringify(endpoints));
}
