// Which charges of a key's credits are webhook events: `key.credits_low` for the charge that takes
// the remaining credits from above its API's threshold to at or below it, `key.credits_exhausted`
// for the charge that takes them to exactly 0. A key's own threshold replaces its API's. No state
// is kept: a charge is atomic in every store, so each crossing belongs to exactly one charge, even
// among concurrent verifications, and only a refill or top-up above the threshold lets a later
// charge cross it again. Such a charge is made in a transaction with its events' messages (the
// store leaves it to one: `SpendOutcome.crossing`).
import type { CreditsEventData } from "../../protocol/contract/webhook-payloads";
import { crossings } from "../domain/credits";
import type { ApiRecord, KeyRecord } from "../records";
import { CREDITS_EXHAUSTED, CREDITS_LOW, type WebhookEvent } from "./events";

const NONE: readonly WebhookEvent[] = Object.freeze([]);

/** The threshold of `key.credits_low` for this key: its own, else its API's. */
export const lowThreshold = (key: KeyRecord, api: ApiRecord | undefined): number | undefined =>
  key.creditsLowThreshold ?? api?.creditsLowThreshold;

/**
 * The events of a charge of `cost` that left `remaining` (the balance before it: `remaining + cost`,
 * after any refill the charge applied).
 */
export function creditsEvents(
  key: KeyRecord,
  api: ApiRecord | undefined,
  cost: number,
  remaining: number,
  now: number,
): readonly WebhookEvent[] {
  const threshold = lowThreshold(key, api);
  const { low, exhausted } = crossings(remaining + cost, cost, threshold);
  if (!low && !exhausted) return NONE;
  const data: CreditsEventData = { workspaceId: key.workspaceId, keyId: key.id, apiId: key.apiId, remaining, threshold: threshold ?? null };
  const events: WebhookEvent[] = [];
  if (low) events.push({ type: CREDITS_LOW, workspaceId: key.workspaceId, time: now, data });
  if (exhausted) events.push({ type: CREDITS_EXHAUSTED, workspaceId: key.workspaceId, time: now, data });
  return events;
}
