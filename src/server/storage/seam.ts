// The storage seam of the local key service: the `Storage` interface, the only thing a storage
// backend implements (memory, SQLite, PostgreSQL + Redis), and `StorageTx`, what an operation sees
// of the state. The records it reads and writes are in ../records.ts. The operations' logic lives
// above this seam and never knows which backend runs under it.
import type { AnalyticsPlan, AnalyticsScope } from "../analytics/plan";
import type { CreditsCrossings, DueRefill, SpendOutcome } from "../domain/credits";
import type { LimitCheck, LimitState } from "../domain/sliding-window";
import type { ChainHead } from "../domain/audit-chain";
import type { KeyPosition, KeySort } from "../domain/key-sort";
import type {
  AuditEvent,
  ExpiringKey,
  IndexedFields,
  RatelimitCount,
  KeyRecord,
  RootKeyRecord,
  TableName,
  Tables,
  VerificationEvent,
  WebhookMessage,
} from "../records";

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
  /**
   * keyguard's sorted `apis.listKeys`: the keys of an API in the order of `sort` (a column, then
   * id; a missing value after every value in `asc`, see domain/key-sort.ts), from `from`
   * (inclusive) on, at most `limit` of them.
   */
  sortedKeys(workspaceId: string, apiId: string, sort: KeySort, options: { from?: KeyPosition; limit: number }): Promise<KeyRecord[]>;
  /** Inserts or replaces the record with this id (a key's `credits` included). */
  put<T extends TableName>(table: T, record: Tables[T]): Promise<void>;
  /**
   * Deletes a record and what depends on it: a key's rate-limit counters; an API's keys (and
   * their counters); a permission's place in every key and role; a role's place in every key; an
   * identity's link from its keys (`identityId` cleared) and its counters; a rate-limit
   * namespace's overrides. Unknown ids: no-op.
   *
   * Atomic with respect to other transactions: one that read the record before (and so holds it)
   * ends first, and what it wrote pointing at the record (a key of the API, a key granted the
   * permission or role, a key joined to the identity) goes with it; one that reads the record
   * after the delete committed does not find it. No record is left pointing at a deleted one.
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
  /** Moves the last use (`lastUsed`) of these ids forward to the time given, never back: root keys' uses. */
  markUsed(uses: ReadonlyMap<string, number>): Promise<void>;
  /**
   * Appends one audit record at the end of its workspace's chain (its `seq`, `prevHash` and `hash`
   * set by the store, domain/audit-chain.ts): inside a transaction it is kept or dropped with the
   * transaction's other writes; on `direct`, atomic on its own. Appends to one workspace are
   * serialised, by every instance sharing the store: its chain stays one line.
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
   * Makes every pending message of an endpoint due at `dueAt` (an endpoint resumed: the messages
   * kept while it was paused go out at once); inside a transaction, kept or dropped with it.
   * Returns how many.
   */
  rescheduleWebhooks(workspaceId: string, endpointId: string, dueAt: number): Promise<number>;
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

/** How `Storage.transaction` may run its `fn`. */
export interface TransactionOptions {
  /**
   * A hint that `fn` reads a few records by id (`get`) and then writes (`put`, `appendAudit`,
   * `enqueueWebhooks`). A backend may then run it without locks and check, with its writes, that
   * the records read are unchanged: one statement for them all (PostgreSQL). Where one changed, or
   * `fn` calls anything else, it runs `fn` again as an ordinary transaction (so `fn` may run more
   * than once, as it may after a deadlock, and must have no effect outside its `tx`). A backend
   * that does not use the hint runs an ordinary transaction.
   */
  optimistic?: boolean;
}

/**
 * What a backend throws inside `fn` to give up an attempt it will run again another way (an
 * optimistic transaction whose `fn` called what it cannot defer). It never leaves
 * `Storage.transaction`, and it is no failure of the store.
 */
export class RunAgain extends Error {
  constructor(why: string) {
    super(`keyguard/server: the transaction runs again: ${why}`);
    this.name = "RunAgain";
  }
}

/** A storage backend. Errors it cannot recover from are thrown as `StoreUnavailableError`. */
export interface Storage {
  /** Short name for logs and the banner: "memory", "sqlite", "postgres". */
  readonly kind: string;
  /**
   * Runs `fn` as one transaction: all its writes are kept, or (when it throws) none. Counters
   * (`limit`, `dropCounters`) kept outside the database (Redis) are not rolled back. `fn` uses its
   * `tx` only: it neither calls the store nor awaits a call to it made before (a backend may run
   * that call, and answer it, only after `fn`'s transaction: SQLite's group commit).
   */
  transaction<T>(fn: (tx: StorageTx) => Promise<T>, options?: TransactionOptions): Promise<T>;
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
   * Adds counts of ratelimit.limit outcomes to those stored for the same workspace, namespace and
   * hour (a sum, never a replacement: every instance sharing the store adds its own), all or none.
   */
  addRatelimitCounts(counts: readonly RatelimitCount[]): Promise<void>;
  /** The counts stored for these namespaces of a workspace whose hour is at or after `from` and before `until`, in any order. */
  ratelimitCounts(query: RatelimitCountQuery): Promise<RatelimitCount[]>;
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
  /** A workspace's webhook messages matching every filter given, newest first (by id, descending). */
  listWebhooks(query: WebhookQuery): Promise<WebhookMessage[]>;
  /** Deletes the audit records older than `before` (Unix ms); returns how many. */
  deleteAuditBefore(before: number): Promise<number>;
  /** Every workspace with an audit log, and the head of its chain (seq 0 and 64 zeros when none of its records is chained). */
  auditHeads(): Promise<Map<string, ChainHead>>;
  /**
   * A workspace's audit records in chain order: those from before the chain (no `seq`) first, by
   * id; then by `seq`, then id. After `after` (exclusive), at most `limit`. The fields a store
   * keeps in columns as well as in the record are taken from the columns, so a change to either shows.
   */
  readAuditChain(workspaceId: string, after: AuditChainCursor | undefined, limit: number): Promise<AuditEvent[]>;
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

/** Which counts `Storage.ratelimitCounts` returns. */
export interface RatelimitCountQuery {
  workspaceId: string;
  namespaceIds: readonly string[];
  /** Unix ms, inclusive. */
  from: number;
  /** Unix ms, exclusive. */
  until: number;
}

/** Which webhook messages `Storage.listWebhooks` returns. */
export interface WebhookQuery {
  workspaceId: string;
  endpointId?: string;
  status?: WebhookMessage["status"];
  /** Id of the first message to return (inclusive); older ones follow. */
  from?: string;
  limit: number;
}

/** Where `Storage.readAuditChain` goes on: after this record (its `seq`, absent for one from before the chain). */
export interface AuditChainCursor {
  seq?: number;
  id: string;
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
