// The webhook event types the key service sends, each with what it means: what an endpoint may ask
// for (the `events` of webhooks.createEndpoint and updateEndpoint, or ALL_EVENTS for every type,
// present and future). No imports, so the web console takes the list from here without bundling
// the schemas (their payloads' schemas are in ./webhook-payloads).

const DESCRIPTIONS = {
  "key.created": "A key was created (keys.createKey).",
  "key.updated": "A key was changed: keys.updateKey, updateCredits, or its permissions or roles.",
  "key.rerolled": "A key was rerolled (keys.rerollKey): keyId is the new key.",
  "key.deleted": "A key was deleted (keys.deleteKey).",
  "key.leaked": "A secret-scanning report found a key.",
  "root_key.created": "A root key was created (rootKeys.createRootKey).",
  "root_key.deleted": "A root key was deleted (rootKeys.deleteRootKey).",
  "key.credits_low": "A verification's charge took a key's remaining credits to at or below its threshold.",
  "key.credits_exhausted": "A verification's charge took a key's remaining credits to 0.",
  "key.expiring": "A key expires within the notice (72 hours by default).",
  "api.created": "An API was created (apis.createApi).",
  "api.deleted": "An API was deleted, with its keys (apis.deleteApi).",
  "permission.created": "A permission was created (permissions.createPermission).",
  "permission.deleted": "A permission was deleted (permissions.deletePermission).",
  "role.created": "A role was created (permissions.createRole).",
  "role.deleted": "A role was deleted (permissions.deleteRole).",
  "identity.created": "An identity was created (identities.createIdentity).",
  "identity.updated": "An identity was changed (identities.updateIdentity).",
  "identity.deleted": "An identity was deleted (identities.deleteIdentity).",
  "ratelimit_override.set": "A rate-limit override was set (ratelimit.setOverride).",
  "ratelimit_override.deleted": "A rate-limit override was deleted (ratelimit.deleteOverride).",
  "portal.created": "A customer portal was configured (portal.createPortal).",
  "portal.updated": "A customer portal's configuration was changed (portal.updatePortal).",
  "portal.deleted": "A customer portal was deleted, with its sessions (portal.deletePortal).",
  "webhook.test": "A test message sent by webhooks.sendTestEvent to one endpoint, whatever it asked for.",
} as const;

/** One webhook event type. */
export type WebhookEventType = keyof typeof DESCRIPTIONS;

/** Every event type, with what it means. */
export const WEBHOOK_EVENT_DESCRIPTIONS: Readonly<Record<WebhookEventType, string>> = Object.freeze(DESCRIPTIONS);

/** Every event type an endpoint may ask for. */
export const WEBHOOK_EVENT_TYPES: readonly string[] = Object.freeze(Object.keys(DESCRIPTIONS));

/** In an endpoint's `events`: every event type, those added in later versions included. */
export const ALL_EVENTS = "*";
