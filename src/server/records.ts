// The records the key service keeps, as every layer sees them: the tables' rows, the state as
// JSON, and the verification events, audit records and webhook messages the store appends. Plain
// types only (and the constants that describe them): the storage seam (storage/seam.ts) reads and
// writes these, the rules in domain/ compute over them.
import type { CreditsRefill, Meta } from "../protocol/types";

export interface WorkspaceRecord {
  id: string;
  name: string;
  createdAt: number;
}

export interface RootKeyRecord {
  id: string;
  workspaceId: string;
  /** base64(SHA-256(root key)). */
  hash: string;
  permissions: string[];
  createdAt: number;
  /** Set by rootKeys.createRootKey (`bootstrap` for the operator's); for people, never checked. */
  name?: string;
  /** Unix ms after which the root key is refused (401, as an unknown one). Absent: never. */
  expires?: number;
  /** Source addresses or CIDR ranges the root key is accepted from (others: 401). Absent: any. */
  ipWhitelist?: string[];
}

export interface ApiRecord {
  id: string;
  workspaceId: string;
  name: string;
  createdAt: number;
  /** Source addresses or CIDR ranges allowed to verify this API's keys; others get FORBIDDEN. */
  ipWhitelist?: string[];
  /** Keeps an encrypted copy of each recoverable key (`KeyRecord.encrypted`). */
  storeKeys?: boolean;
  /** How new keys look; absent: `plain`. */
  keyFormat?: "plain" | "checksummed";
  /**
   * What a secret-scanning report of one of this API's keys does (keyguard's own): `"disable"` the
   * key, or only `"flag"` it. Absent: `"disable"` (`DEFAULT_LEAK_RESPONSE`).
   */
  leakResponse?: LeakResponse;
  /**
   * keyguard's own: a charge that takes a key's remaining credits from above this number to at or
   * below it sends `key.credits_low` (a whole number ≥ 1). Absent: no such event.
   */
  creditsLowThreshold?: number;
}

/** What a leak report does to a key of an API: disable it, or only flag it. */
export type LeakResponse = "disable" | "flag";

/** What a report of a key does when its API does not say: a key found in public is compromised. */
export const DEFAULT_LEAK_RESPONSE: LeakResponse = "disable";

/** One report of a key found in public by a code host's secret scanning. Never the key. */
export interface LeakReportRecord {
  /** Unix ms when the report arrived. */
  reportedAt: number;
  /** The host's name for the pattern that matched (`type`). */
  type: string;
  /** Where the key was found (may be empty). */
  url: string;
  /** What it was found in (`content`, `commit`, `issue_comment`, …; `unknown` when not said). */
  source: string;
}

export interface RatelimitRecord {
  id: string;
  name: string;
  limit: number;
  duration: number;
  autoApply: boolean;
}

export interface CreditsRecord {
  remaining: number;
  refill?: CreditsRefill;
  /** Unix ms of the last refill (or of creation): the next refill is the first boundary after it. */
  lastRefillAt: number;
}

export interface KeyRecord {
  id: string;
  workspaceId: string;
  apiId: string;
  /** base64(SHA-256(key)). Never the key. */
  hash: string;
  /**
   * A recoverable key of an API that stores keys: the key sealed with AES-256-GCM under the
   * service's key-encryption key (which the state never holds), bound to this record.
   */
  encrypted?: string;
  start: string;
  prefix?: string;
  byteLength: number;
  name?: string;
  meta?: Meta;
  createdAt: number;
  updatedAt?: number;
  expires?: number;
  enabled: boolean;
  identityId?: string;
  permissionIds: string[];
  roleIds: string[];
  /** Absent: unlimited. */
  credits?: CreditsRecord;
  ratelimits: RatelimitRecord[];
  /** keyguard's own: source addresses or CIDR ranges allowed to verify this key (beside its API's list). */
  ipWhitelist?: string[];
  /** keyguard's own: this key's `key.credits_low` threshold, instead of its API's `creditsLowThreshold`. */
  creditsLowThreshold?: number;
  /**
   * Imported by `keys.migrateKeys` under this migration and not yet verified: for a migration of
   * the `github.com/seamapi/prefixed-api-key` algorithm `hash` is still the source system's hash
   * (hex SHA-256 of the key's long token) until the first verification with this `migrationId`.
   */
  pendingMigrationId?: string;
  /** Secret-scanning reports of this key, oldest first, the latest `LEAK_REPORTS_KEPT` only. */
  leakReports?: LeakReportRecord[];
  /**
   * The `expires` a `key.expiring` notice was sent for (`StorageTx.claimExpiryNotices`): a key
   * is noticed once per expiry value; another `expires` arms the notice again.
   */
  expiryNoticeFor?: number;
}

/** A key whose `key.expiring` notice `StorageTx.claimExpiryNotices` took. */
export interface ExpiringKey {
  keyId: string;
  workspaceId: string;
  apiId: string;
  /** Unix ms. */
  expires: number;
}

export interface PermissionRecord {
  id: string;
  workspaceId: string;
  name: string;
  slug: string;
  description?: string;
  createdAt: number;
}

export interface RoleRecord {
  id: string;
  workspaceId: string;
  name: string;
  description?: string;
  permissionIds: string[];
  createdAt: number;
}

export interface IdentityRecord {
  id: string;
  workspaceId: string;
  externalId: string;
  meta?: Meta;
  ratelimits: RatelimitRecord[];
  createdAt: number;
}

/** A `ratelimit.limit` namespace: created on first use (with `ratelimit.*.create_namespace`). */
export interface RatelimitNamespaceRecord {
  id: string;
  workspaceId: string;
  name: string;
  createdAt: number;
}

/** A namespace's limit for one identifier, or for every identifier a `*` pattern matches. */
export interface RatelimitOverrideRecord {
  id: string;
  workspaceId: string;
  namespaceId: string;
  /** An identifier, or a pattern where `*` stands for any sequence of characters. */
  identifier: string;
  limit: number;
  /** Window length, ms. */
  duration: number;
  createdAt: number;
}

/** A key migration registered on the admin surface: what `keys.migrateKeys` imports under. */
export interface KeyMigrationRecord {
  id: string;
  workspaceId: string;
  algorithm: KeyMigrationAlgorithm;
  createdAt: number;
}

/** How a migration's hashes were made (production's two algorithms). */
export type KeyMigrationAlgorithm = "sha256" | "github.com/seamapi/prefixed-api-key";

/** Which self-service actions a portal offers its end users beyond production's (list, reroll, analytics). */
interface PortalActions {
  /** `portal.createKey`, from the portal's key template (the session also needs the `keys:create` scope). */
  create: boolean;
  /** `portal.disableKey` / `portal.enableKey`, for the end user's own keys. */
  disable: boolean;
  /** `portal.deleteKey`, for the end user's own keys. */
  delete: boolean;
}

/** What a key made in a portal (`portal.createKey`) gets, besides its owner (the session's identity). */
interface PortalKeyTemplate {
  prefix?: string;
  byteLength?: number;
  /** Permission slugs (created when missing). */
  permissions?: string[];
  /** Role names (each must exist when a key is made). */
  roles?: string[];
  ratelimits?: Array<{ name: string; limit: number; duration: number; autoApply: boolean }>;
  credits?: { remaining: number; refill?: { interval: "daily" | "monthly"; amount: number; refillDay?: number } };
  /** The key's lifetime from its creation, ms; absent: it never expires. */
  expiresIn?: number;
}

/**
 * keyguard's own: a customer portal an operator configured (`portal.createPortal`), the thing
 * production's `portal.createSession` names by id.
 */
export interface PortalRecord {
  /** `portal_…`. */
  id: string;
  workspaceId: string;
  name: string;
  /** The APIs (production's keyspaces) whose keys the portal shows: at least one. */
  apiIds: string[];
  enabled: boolean;
  logoUrl?: string;
  /** `#rrggbb`. */
  accentColor?: string;
  /** The Docs tab's Markdown (shown sanitised). */
  docs?: string;
  /** Origins (`https://app.example.com`) a session's `returnUrl` may be on; empty: no returnUrl accepted. */
  returnOrigins: string[];
  keyTemplate: PortalKeyTemplate;
  /** How long a rerolled key keeps working (ms), offered by portal.rerollKey when the body asks for less. */
  rerollGraceMs: number;
  actions: PortalActions;
  createdAt: number;
  updatedAt?: number;
}

/**
 * A session of a portal for one end user (`portal.createSession`): the exchange code and the
 * access token are kept as hashes only (base64 SHA-256), never as they are.
 */
export interface PortalSessionRecord {
  /** `ps_…`: not a credential. */
  id: string;
  workspaceId: string;
  portalId: string;
  /** The end user: keys are theirs when their identity has this externalId. */
  externalId: string;
  scopes: string[];
  /** The APIs the portal covered when the session was made (the scopes were checked on them). */
  apiIds: string[];
  preview: boolean;
  returnUrl?: string;
  codeHash: string;
  codeExpiresAt: number;
  /** Set once the code was exchanged (a code is single-use). */
  exchangedAt?: number;
  tokenHash?: string;
  tokenExpiresAt?: number;
  /** The root key that made it (audit). */
  createdBy: string;
  createdAt: number;
}

/** The tables of the state, by name. Every record has a unique `id`. */
export interface Tables {
  workspaces: WorkspaceRecord;
  rootKeys: RootKeyRecord;
  apis: ApiRecord;
  keys: KeyRecord;
  permissions: PermissionRecord;
  roles: RoleRecord;
  identities: IdentityRecord;
  ratelimitNamespaces: RatelimitNamespaceRecord;
  ratelimitOverrides: RatelimitOverrideRecord;
  portals: PortalRecord;
  portalSessions: PortalSessionRecord;
}

export type TableName = keyof Tables;

/** The table names, in the order an export lists (and an import writes) them. */
export const TABLE_NAMES: readonly TableName[] = Object.freeze([
  "workspaces",
  "rootKeys",
  "apis",
  "permissions",
  "roles",
  "identities",
  "keys",
  "ratelimitNamespaces",
  "ratelimitOverrides",
  "portals",
  "portalSessions",
]);

/** Fields a backend indexes within a workspace, per table: what `find` and `list`'s `where` accept. */
export interface IndexedFields {
  workspaces: never;
  rootKeys: never;
  apis: never;
  keys: "apiId" | "identityId";
  permissions: "slug";
  roles: "name";
  identities: "externalId";
  ratelimitNamespaces: "name";
  ratelimitOverrides: "namespaceId";
  portals: never;
  portalSessions: never;
}

/** A webhook endpoint of a workspace (kept as a meta value per workspace: src/server/webhooks/endpoints.ts). */
export interface WebhookEndpointRecord {
  /** `whep_…`. */
  id: string;
  workspaceId: string;
  url: string;
  /** Event types delivered to it (`key.created`, …). */
  events: string[];
  description?: string;
  /**
   * The Standard Webhooks signing secret (`whsec_` + base64 of 24 random bytes), never answered
   * again after the endpoint is created: sealed (`v1.…`, see `sealSecret`) when the service has an
   * encryption key, else as it is (a signature needs it).
   */
  secret: string;
  createdAt: number;
  /** Set when a message to it failed for a whole retry window: it gets no message from then on. */
  disabledAt?: number;
  /** Set while an operator paused it: its messages are kept in the outbox and sent once it is resumed. */
  pausedAt?: number;
  /** When it was last resumed: the retry window of the messages kept meanwhile starts there. */
  resumedAt?: number;
  /**
   * The secret a rotation replaced (stored as `secret` is), signed with as well until
   * `previousSecretUntil` (Unix ms): receivers switch over without losing a message.
   */
  previousSecret?: string;
  previousSecretUntil?: number;
}

/** The whole state as JSON: what `exportState` returns and `importState` takes (hashes only). */
export interface LocalState {
  version: 1;
  /** What the service created first: reused on restart with the same store. */
  bootstrap?: { workspaceId: string; apiId: string };
  workspaces: Record<string, WorkspaceRecord>;
  rootKeys: Record<string, RootKeyRecord>;
  apis: Record<string, ApiRecord>;
  keys: Record<string, KeyRecord>;
  permissions: Record<string, PermissionRecord>;
  roles: Record<string, RoleRecord>;
  identities: Record<string, IdentityRecord>;
  /** Absent in state files of earlier versions (read as empty). */
  ratelimitNamespaces: Record<string, RatelimitNamespaceRecord>;
  ratelimitOverrides: Record<string, RatelimitOverrideRecord>;
  /** Absent in state files of earlier versions (read as empty). */
  portals: Record<string, PortalRecord>;
  portalSessions: Record<string, PortalSessionRecord>;
  /** Key migrations registered on the admin surface (kept as a meta value by every backend). */
  keyMigrations?: Record<string, KeyMigrationRecord>;
  /** Webhook endpoints by id (their secrets as stored: sealed when the service has an encryption key). Absent in earlier state files. */
  webhookEndpoints?: Record<string, WebhookEndpointRecord>;
  /** Rate-limit counters. Exported as `{}`; kept only for reading state files of earlier versions. */
  windows: Record<string, unknown>;
}

/** The outcomes of ratelimit.limit counted in one namespace in one hour (keyguard's own: ratelimit.getNamespaceUsage). */
export interface RatelimitCount {
  workspaceId: string;
  namespaceId: string;
  /** Unix ms: the start of the hour (UTC). */
  hour: number;
  passed: number;
  limited: number;
}

/** One verification of a key found in the caller's workspace: a row of `key_verifications_v1`. Never the key. */
export interface VerificationEvent {
  /** Unix ms. */
  time: number;
  workspaceId: string;
  /** The key's API (production's key space). */
  keySpaceId: string;
  keyId: string;
  /** The key's identity, "" when none. */
  identityId: string;
  /** That identity's external id, "" when none. */
  externalId: string;
  /** The verification's code: VALID, RATE_LIMITED, USAGE_EXCEEDED, DISABLED, EXPIRED, FORBIDDEN, INSUFFICIENT_PERMISSIONS. */
  outcome: string;
  /** The request's `tags` (the caller's array: a store copies or serialises it, never changes it). */
  tags: readonly string[];
  /** Credits charged by this verification (0 when none). */
  spentCredits: number;
  requestId: string;
  /** Where it was verified: always "local". */
  region: string;
}

/**
 * One audit record: a change made through the service's operations, or an attempt refused for
 * permissions. Never a secret: no key, no root key, no hash, no sealed copy.
 */
export interface AuditEvent {
  /** `aud_…`: ids sort by the time they were made. */
  id: string;
  /** Unix ms (the service clock of the request). */
  time: number;
  workspaceId: string;
  /** The root key that made the request (its id, never the key). */
  actorId: string;
  /** That root key's name, when it has one. */
  actorName?: string;
  /** The operation's wire name (`keys.createKey`). */
  operation: string;
  /** Ids of the records changed, or aimed at by a refused attempt. */
  targets: string[];
  outcome: "success" | "refused";
  requestId: string;
  /** The caller's address. */
  ip: string;
  /** A compact description of the change (or of the refusal). */
  change: Record<string, unknown>;
  /**
   * Its place in the workspace's audit chain (from 1), the hash of the record before it and its
   * own (domain/audit-chain.ts): set by the store as it appends. Absent on records from before the chain.
   */
  seq?: number;
  prevHash?: string;
  hash?: string;
}

/** One webhook message of the outbox: an event for one endpoint, delivered at least once. */
export interface WebhookMessage {
  /** `msg_…`: the `webhook-id` of every attempt. */
  id: string;
  workspaceId: string;
  endpointId: string;
  /** The event type (`key.created`). */
  type: string;
  /** The JSON body sent, exactly (what the signature covers). */
  payload: string;
  createdAt: number;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  /** When it is due next (Unix ms). */
  nextAttemptAt: number;
  /** When an operator last sent it again (`webhooks.resendDelivery`): its retry window starts there. */
  resentAt?: number;
  /** The last attempt: its HTTP status (0: no answer), error, time taken. */
  lastStatus?: number;
  lastError?: string;
  lastLatencyMs?: number;
  deliveredAt?: number;
  /** Its attempts, oldest first (the latest MAX_ATTEMPT_HISTORY: src/server/webhooks/dispatcher.ts). Absent before the first. */
  history?: WebhookAttemptRecord[];
}

/** One attempt to deliver a webhook message. */
export interface WebhookAttemptRecord {
  /** When it started (Unix ms, service clock). */
  time: number;
  /** The HTTP status (0: no answer). */
  status: number;
  /** Why it failed, when it did. */
  error?: string;
  durationMs: number;
}
