// The webhook event types the service sends, for the webhooks page's form. A test holds this list
// equal to the service's WEBHOOK_EVENT_TYPES.
export const WEBHOOK_EVENTS: readonly string[] = [
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
];
