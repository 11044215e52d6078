// The webhook event types the key service sends: what an endpoint may ask for (the `events` of
// webhooks.createEndpoint). No imports, so the web console takes the list from here without
// bundling the schemas.

const TYPES = [
  "key.created",
  "key.updated",
  "key.rerolled",
  "key.deleted",
  "key.leaked",
  "root_key.created",
  "root_key.deleted",
  "key.credits_low",
  "key.credits_exhausted",
  "key.expiring",
] as const;

/** One webhook event type. */
export type WebhookEventType = (typeof TYPES)[number];

/** Every event type an endpoint may ask for. */
export const WEBHOOK_EVENT_TYPES: readonly string[] = Object.freeze([...TYPES]);
