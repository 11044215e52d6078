// The storage seam of the local key service: the records it keeps and the `Storage` interface, the
// only thing a storage backend implements (memory, SQLite, PostgreSQL + Redis). The operations'
// logic lives above this seam and never knows which backend runs under it.
import type { CreditsRefill, Meta } from "../../protocol/types";
import type { AnalyticsPlan, AnalyticsScope } from "../analytics/plan";

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
  /** Set by rootKeys.createRootKey; for people, never checked. */
  name?: string;
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
}

/** One sliding-window rate limit to check and charge (see `Storage.limit`). */
export interface LimitCheck {
  /**
   * The counter: one per limit id and window length (`limitCounter`), or per workspace,
   * namespace, identifier and window length for `ratelimit.limit` (`namespaceCounter`).
   */
  counter: string;
  limit: number;
  /** Window length, ms. */
  duration: number;
  cost: number;
  /** Key or identity whose limit this is: `dropCounters({ owner })` drops its counters. */
  owner?: string;
}

export interface LimitState {
  passed: boolean;
  /** Uses left in the window after this check, never negative. */
  remaining: number;
  /** Unix ms at the end of the current window. */
  reset: number;
}

/**
 * A refill that `spendCredits` applies first when it fell due: when the key's `lastRefillAt` is
 * before `boundary`, `remaining` becomes `amount` and `lastRefillAt` becomes `now`.
 */
export interface DueRefill {
  boundary: number;
  amount: number;
}

/**
 * The charges `spendCredits` leaves to a transaction when asked (on `Storage.direct`): those that
 * take the balance from above `lowThreshold` to at or below it, or to 0. Those charges cause webhook
 * events, whose messages are written in the charge's own transaction.
 */
export interface CreditsCrossings {
  /** The key's (or its API's) `creditsLowThreshold`; undefined: only reaching 0 counts. */
  lowThreshold: number | undefined;
}

export type SpendOutcome =
  /** Charged: the balance after the charge. */
  | { ok: true; remaining: number }
  /**
   * Not charged: not enough credits; or, with `crossing` (only when `crossings` was given), the
   * balance covers the cost but the charge would cross (make it in a transaction). The balance
   * after any refill.
   */
  | { ok: false; remaining: number; crossing?: true };

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
  /** Key migrations registered on the admin surface (kept as a meta value by every backend). */
  keyMigrations?: Record<string, KeyMigrationRecord>;
  /** Webhook endpoints by id (their secrets as stored: sealed when the service has an encryption key). Absent in earlier state files. */
  webhookEndpoints?: Record<string, WebhookEndpointRecord>;
  /** Rate-limit counters. Exported as `{}`; kept only for reading state files of earlier versions. */
  windows: Record<string, unknown>;
}

/**
 * What an operation sees of the state. Reads and writes are by whole record; a record returned
 * is the caller's own copy (changing it changes nothing until `put`).
 *
 * Inside `Storage.transaction` every read sees the transaction's own writes, and a record read
 * there cannot be changed by anybody else until the transaction ends (the backend serialises
 * writers or locks the rows it read). Outside a transaction (`Storage.direct`) each call stands
 * alone and is atomic on its own.
 */
export interface StorageTx {
  /** A record by id, of any workspace (the caller checks the workspace). */
  get<T extends TableName>(table: T, id: string): Promise<Tables[T] | undefined>;
  /** The key whose `hash` this is. */
  keyByHash(hash: string): Promise<KeyRecord | undefined>;
  /** The root key whose `hash` this is. */
  rootKeyByHash(hash: string): Promise<RootKeyRecord | undefined>;
  /** Records of a workspace whose indexed `field` equals `value`, ordered by id. */
  find<T extends TableName>(table: T, workspaceId: string, field: IndexedFields[T], value: string): Promise<Tables[T][]>;
  /**
   * Records of a workspace ordered by id (ascending, by code unit), from `from` (inclusive) on,
   * at most `limit` of them (all when absent), optionally only those whose indexed field equals
   * a value.
   */
  list<T extends TableName>(
    table: T,
    workspaceId: string,
    options?: { from?: string; limit?: number; where?: { field: IndexedFields[T]; value: string } },
  ): Promise<Tables[T][]>;
  /** Inserts or replaces the record with this id (a key's `credits` included). */
  put<T extends TableName>(table: T, record: Tables[T]): Promise<void>;
  /**
   * Deletes a record and what depends on it: a key's rate-limit counters; an API's keys (and
   * their counters); a permission's place in every key and role; a role's place in every key; an
   * identity's link from its keys (`identityId` cleared) and its counters; a rate-limit
   * namespace's overrides. Unknown ids: no-op.
   */
  delete(table: TableName, id: string): Promise<void>;
  /**
   * Charges `cost` credits of a key with credits, atomically: applies `refill` first when it fell
   * due, then charges only when the balance covers the cost (a cost of 0 only applies the refill).
   * Never below zero, never charged twice. `undefined` when the key does not exist or has no
   * credits. With `crossings`, a charge that would cross (see `CreditsCrossings`) is not made
   * either: `{ ok: false, crossing: true }` (a due refill is still applied). A store may also
   * answer `crossing` when a concurrent change let the balance cover the cost after all: the
   * transaction that follows decides.
   */
  spendCredits(
    keyId: string,
    cost: number,
    now: number,
    refill?: DueRefill,
    crossings?: CreditsCrossings,
  ): Promise<SpendOutcome | undefined>;
  /**
   * Checks sliding-window limits and charges them all-or-nothing, atomically: window =
   * floor(now / duration); used = current + previous × (1 − elapsed fraction of the window);
   * a check passes when used + cost ≤ limit; only when every check passes is every counter
   * charged. Returns one state per check, in order.
   */
  limit(checks: readonly LimitCheck[], now: number): Promise<{ passed: boolean; states: LimitState[] }>;
  /** Drops rate-limit counters: those of these limit ids (every window length), or every counter of an owner. */
  dropCounters(target: { limitIds: readonly string[] } | { owner: string }): Promise<void>;
  /** When each of these keys was last verified (Unix ms), as the events appended so far say; keys never verified are absent. */
  lastUsed(keyIds: readonly string[]): Promise<Map<string, number>>;
  /**
   * Appends one audit record: inside a transaction it is kept or dropped with the transaction's
   * other writes; on `direct`, atomic on its own.
   */
  appendAudit(event: AuditEvent): Promise<void>;
  /**
   * The audit records of `query.workspaceId` matching every filter given, newest first (by id,
   * descending), from `query.from` (inclusive) on, at most `query.limit`.
   */
  listAudit(query: AuditQuery): Promise<AuditEvent[]>;
  /**
   * Puts webhook messages in the outbox: inside a transaction they are kept or dropped with the
   * change that caused them; the dispatcher delivers them once committed.
   */
  enqueueWebhooks(messages: readonly WebhookMessage[]): Promise<void>;
  /**
   * Takes up to `limit` keys, of any workspace, whose `expires` is after `from` and at or before
   * `until` and whose notice was not sent for that value (`expiryNoticeFor` differs), earliest
   * expiry first, and records the notice on each (`expiryNoticeFor = expires`). Inside a
   * transaction the records are kept or dropped with its other writes (the outbox messages), and
   * two transactions never take the same key for the same expiry (PostgreSQL: `FOR UPDATE SKIP LOCKED`).
   */
  claimExpiryNotices(from: number, until: number, limit: number): Promise<ExpiringKey[]>;
  /** A value of the service's own (the bootstrap ids, a workspace's webhook endpoints). */
  getMeta(name: string, options?: MetaReadOptions): Promise<string | undefined>;
  setMeta(name: string, value: string): Promise<void>;
}

/** How `StorageTx.getMeta` may read. */
export interface MetaReadOptions {
  /**
   * The caller accepts a value as old as the announcement of its last change takes to arrive (on
   * PostgreSQL, the record cache serves it outside a transaction; absent values too). Default:
   * false, the value as stored.
   */
  cached?: boolean;
}

/** A storage backend. Errors it cannot recover from are thrown as `StoreUnavailableError`. */
export interface Storage {
  /** Short name for logs and the banner: "memory", "sqlite", "postgres". */
  readonly kind: string;
  /**
   * Runs `fn` as one transaction: all its writes are kept, or (when it throws) none. Counters
   * (`limit`, `dropCounters`) kept outside the database (Redis) are not rolled back.
   */
  transaction<T>(fn: (tx: StorageTx) => Promise<T>): Promise<T>;
  /** Calls outside any transaction, each atomic on its own: the path of keys.verifyKey and ratelimit.limit. */
  readonly direct: StorageTx;
  /**
   * Appends a batch of verification events, all or none, and moves each key's last use
   * (`StorageTx.lastUsed`) forward to its latest event (never back).
   */
  appendVerifications(events: readonly VerificationEvent[]): Promise<void>;
  /**
   * Deletes the events older than `before` (Unix ms); returns how many. A store that deletes in
   * steps stops between two once `signal` is aborted (the service closing: its next sweep deletes
   * the rest), and deletes nothing when it is aborted already.
   */
  deleteVerificationsBefore(before: number, signal?: AbortSignal): Promise<number>;
  /**
   * Runs a validated analytics query over the events of `scope` only (its workspace, and its
   * APIs when given), with bound parameters. Rows hold the plan's outputs by name, in order:
   * numbers as numbers, `tags` as arrays of strings. At most `plan.limit` rows.
   */
  queryVerifications(plan: AnalyticsPlan, scope: AnalyticsScope): Promise<Array<Record<string, unknown>>>;
  /**
   * Takes up to `limit` pending webhook messages due at `now` (oldest due first) for delivery: each
   * taken is not due again before `now + leaseMs` (should the taker crash, it is taken again
   * then). Two takers never get the same message within a lease (PostgreSQL: `FOR UPDATE SKIP LOCKED`).
   */
  claimWebhooks(now: number, limit: number, leaseMs: number): Promise<WebhookMessage[]>;
  /** Writes a message back after an attempt (its status, attempts, next attempt, last answer). */
  settleWebhook(message: WebhookMessage): Promise<void>;
  /** One webhook message by its id, of any workspace (the caller checks the workspace). */
  getWebhook(messageId: string): Promise<WebhookMessage | undefined>;
  /** A workspace's webhook messages, newest first, of one endpoint when given; at most `limit`. */
  listWebhooks(workspaceId: string, endpointId: string | undefined, limit: number): Promise<WebhookMessage[]>;
  /** Deletes the audit records older than `before` (Unix ms); returns how many. */
  deleteAuditBefore(before: number): Promise<number>;
  /**
   * Checks that every server the store uses answers now (PostgreSQL and Redis), for the readiness
   * probe; rejects with `StoreUnavailableError` otherwise. Absent: a store in the process (memory,
   * SQLite) is ready once open.
   */
  ping?(): Promise<void>;
  /**
   * Events per appendVerifications call this store prefers (default 1000). A store whose driver
   * is synchronous (SQLite) asks for small batches: each call holds the event loop only briefly.
   */
  readonly appendBatchSize?: number;
  /** Releases connections and files. Safe to call twice. */
  close(): Promise<void>;
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
}

/** Which audit records `Storage.listAudit` returns. */
export interface AuditQuery {
  workspaceId: string;
  actorId?: string;
  /** Records whose `targets` hold this id. */
  targetId?: string;
  operation?: string;
  /** Unix ms, inclusive. */
  since?: number;
  /** Unix ms, exclusive. */
  until?: number;
  /** Id of the first record to return (inclusive); older ones follow. */
  from?: string;
  limit: number;
}
