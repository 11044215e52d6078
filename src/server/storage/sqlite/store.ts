// The SQLite store: the local key service's state in one file on one machine. One connection,
// WAL, operations serialised by an async mutex, each in a transaction (BEGIN IMMEDIATE … COMMIT)
// that those arriving together share (group commit, handOn);
// credits charged by one UPDATE … RETURNING; rate-limit counters in a table of their own; WAL
// checkpoints in a worker thread (checkpointer.ts).
import { optionNames } from "../../../config-error";
import { LocalServiceConfigError, serviceChecks, StoreUnavailableError } from "../../errors";
import type { AnalyticsPlan, AnalyticsScope } from "../../analytics/plan";
import { DEFAULT_ANALYTICS_TIMEOUT_MS } from "../../analytics/time-limit";
import { appendAudit, auditHeads, deleteAuditBefore, listAudit, readAuditChain } from "./audit";
import * as outbox from "./outbox";
import { type AuditChainCursor, type RatelimitCountQuery, type Storage, type StorageTx, type WebhookQuery } from "../seam";
import type { ChainHead } from "../../domain/audit-chain";
import { type AuditEvent, type RatelimitCount, type WebhookMessage, type VerificationEvent } from "../../records";
import { Mutex } from "../mutex";
import { startCheckpointer, type Checkpointer } from "./checkpointer";
import { chargeLimits, dropCounters, pruneCounters, spendCredits } from "./counters";
import { claimExpiryNotices } from "./expiry";
import type { SqlConnection, SqliteDriverName } from "./driver";
import { AnalyticsWorker, AnalyticsWorkerUnavailable } from "./analytics-worker";
import { appendEvents, compileQuery, deleteEventsBatch, lastUsed, markUsed, runQuery } from "./events";
import { lockDataFile } from "./lock";
import { addCounts, readCounts } from "./ratelimit-counts";
import { checkFileKind, createPrivately, FileIdentity, openDataFile, unavailableReason, type ConnectionSettings } from "./open";
import { SqliteTables } from "./tables";

export interface SqliteStorageOptions {
  /** The driver. Default: `node:sqlite` when the runtime has it (Node >= 22.13), else `better-sqlite3`. */
  driver?: SqliteDriverName;
  /**
   * `"normal"` (default): a commit is durable once the process has handed it to the operating
   * system: a crash or `kill -9` of the process loses nothing acknowledged; a power loss or an
   * operating-system crash can lose the last commits (the file stays consistent). `"full"`:
   * every commit waits for the disk (fsync of the WAL), surviving a power loss too, at a cost per write.
   */
  synchronous?: "normal" | "full";
  /**
   * How long a statement waits for another connection to the file (e.g. the `sqlite3` shell
   * writing to it) before the store answers unavailable, ms. The wait blocks the process. Default 250.
   */
  busyTimeoutMs?: number;
  /**
   * Time limit of one analytics query (run in a worker thread of its own), ms; past it
   * getVerifications answers 422 `query_execution_timeout`. Default 10000.
   */
  analyticsTimeoutMs?: number;
}

/** A SQLite store (see `sqliteStorage`). */
export interface SqliteStorage extends Storage {
  readonly kind: "sqlite";
  readonly file: string;
  readonly driver: SqliteDriverName;
  /** Whether the database holds nothing yet (no record, no meta value): what `keyguard migrate` needs. */
  isEmpty(): Promise<boolean>;
  /**
   * Sets a SQLite PRAGMA on the store's connection, between transactions (e.g. `max_page_count`
   * to cap the file's size). Returns the first row of the answer.
   */
  pragma(name: string, value?: number | string): Promise<unknown>;
}

const OPTION_NAMES = optionNames<SqliteStorageOptions>()({
  driver: true,
  synchronous: true,
  busyTimeoutMs: true,
  analyticsTimeoutMs: true,
});
const check = serviceChecks("keyguard/server: sqliteStorage");

/**
 * Opens (creating when absent) the SQLite data file `file`: takes its lock (one process per file),
 * brings its schema up to date, and returns the store. Throws `LocalServiceConfigError` for a file
 * of the wrong kind, one in use by another process, when no SQLite driver is installed, and for an
 * unknown option name (a misspelled `synchronous` must not leave the file less durable than asked).
 */
export async function sqliteStorage(file: string, options: SqliteStorageOptions = {}): Promise<SqliteStorage> {
  if (typeof file !== "string" || file.trim() === "" || file === ":memory:") {
    check.invalid("file", file, "Pass the path of a file (not :memory:); it is created when absent.");
  }
  check.unknownNames(Object.keys(check.options(options, 'Pass an object such as { synchronous: "full" }, or nothing.')), OPTION_NAMES);
  const synchronous = check.oneOf("synchronous", options.synchronous, ["normal", "full"], "normal");
  const busyTimeoutMs = check.duration("busyTimeoutMs", options.busyTimeoutMs, { min: 0, default: 250 });
  const driver = check.oneOf("driver", options.driver, ["node:sqlite", "better-sqlite3"]);
  const analyticsTimeoutMs = check.duration("analyticsTimeoutMs", options.analyticsTimeoutMs, {
    min: 1,
    default: DEFAULT_ANALYTICS_TIMEOUT_MS,
  });
  checkFileKind(file);
  const settings: ConnectionSettings = { driver, synchronous, busyTimeoutMs };
  // What the open has taken so far, given back in reverse order should a later step fail.
  const acquired: Array<() => unknown> = [];
  try {
    createPrivately(file);
    const lock = await lockDataFile(file, driver);
    acquired.push(() => lock.close());
    const db = await openDataFile(file, settings);
    acquired.push(() => db.close());
    const identity = FileIdentity.of(file);
    const checkpointer = await startCheckpointer(file, db.driver, CHECKPOINT_EVERY_MS);
    if (checkpointer) {
      acquired.push(() => checkpointer.stop());
      // Only the worker checkpoints. SQLite's automatic checkpoint runs on this thread: after a long
      // read has kept the WAL from restarting (an analytics query past its time limit runs on to its
      // end in a dropped worker), it copied the whole WAL here (an 844 ms stall at 1 GB of WAL).
      // Should the worker end, the store turns it back on (below).
      db.exec("PRAGMA wal_autocheckpoint = 0");
    }
    const analytics = AnalyticsWorker.lazy(file, db.driver, analyticsTimeoutMs);
    acquired.push(() => analytics.stop());
    return new SqliteStorageImpl(file, db, lock, identity, checkpointer, analytics);
  } catch (err) {
    await releaseInReverse(acquired);
    if (err instanceof LocalServiceConfigError) throw err;
    throw new LocalServiceConfigError(
      `keyguard/server: cannot open the SQLite data file ${JSON.stringify(file)}: ${(err as Error).message}. ` +
        "Check that its directory exists and is writable.",
    );
  }
}

/** Runs each release, the last acquired first; one that fails does not keep the others from running. */
async function releaseInReverse(acquired: ReadonlyArray<() => unknown>): Promise<void> {
  for (const release of [...acquired].reverse()) {
    try {
      await release();
    } catch {
      // Best effort: the error reported is the one that failed the open.
    }
  }
}

const PRUNE_EVERY_MS = 60_000;
const CHECKPOINT_EVERY_MS = 250;
/** SQLite's own automatic checkpoint (pages of WAL), back on should the checkpoint worker end. */
const AUTOCHECKPOINT_PAGES = 1000;
/**
 * Rows one retention step deletes (and takes off the rollups), and events one append writes with
 * their rollups: each under 10 ms of the event loop's CPU at 10M stored events (`BENCH_ONLY=analytics
 * npm run bench` times both on the store's own connection settings).
 */
export const RETENTION_BATCH = 100;
/** Most callers one COMMIT answers (handOn): the first of them waits for the others' steps. */
const GROUP_COMMIT_MAX = 32;
export const APPEND_BATCH = 50;

class SqliteStorageImpl implements SqliteStorage {
  readonly kind = "sqlite" as const;
  readonly driver: SqliteDriverName;
  readonly appendBatchSize = APPEND_BATCH;
  readonly direct: StorageTx;
  private readonly tables: SqliteTables;
  private readonly mutex = new Mutex();
  private inTransaction = false;
  /** The transactions' steps run in the open transaction, waiting for its COMMIT to answer (handOn). */
  private batch: Array<{ done: () => void; fail: (err: unknown) => void }> | undefined;
  /** Whether the open transaction's COMMIT is due at the event loop's next turn. */
  private flushing = false;
  private closed = false;
  private lastPrune = -Infinity;

  constructor(
    readonly file: string,
    private readonly db: SqlConnection,
    private readonly lock: SqlConnection,
    /** The file opened: a write to a file deleted, moved or replaced under us would be lost. */
    private readonly identity: FileIdentity,
    private readonly checkpointer: Checkpointer | undefined,
    /** Runs the analytics queries; undefined when it cannot start (they then run on `db`). */
    private readonly analytics: AnalyticsWorker | undefined,
  ) {
    this.driver = db.driver;
    this.tables = new SqliteTables(db);
    this.direct = this.txApi(<T>(fn: () => T) => this.exclusive(fn));
    void checkpointer?.exited.then(() => {
      if (this.closed) return;
      try {
        db.exec(`PRAGMA wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
      } catch {
        // Closing meanwhile: nothing more to checkpoint.
      }
    });
  }

  async transaction<T>(fn: (tx: StorageTx) => Promise<T>): Promise<T> {
    await this.enter(true);
    if (this.batch === undefined) {
      try {
        this.guard(() => this.db.exec("BEGIN IMMEDIATE"));
      } catch (err) {
        this.mutex.unlock();
        throw err;
      }
      this.inTransaction = true;
      this.batch = [];
    }
    let open = true;
    const tx = this.txApi(async <R>(call: () => R) => {
      if (!open) throw new Error("keyguard/server: a store transaction was used after it ended");
      return this.guard(call);
    });
    return this.member(async () => {
      try {
        return await fn(tx);
      } finally {
        open = false;
      }
    });
  }

  appendVerifications(events: readonly VerificationEvent[]): Promise<void> {
    return this.exclusive(() => this.atomically(() => appendEvents(this.tables, events)));
  }

  /** Deletes in steps of RETENTION_BATCH rows, each a few milliseconds, letting requests run between them. */
  async deleteVerificationsBefore(before: number, signal?: AbortSignal): Promise<number> {
    let deleted = 0;
    while (!signal?.aborted) {
      const step = await this.exclusive(() => deleteEventsBatch(this.tables, before, RETENTION_BATCH, (fn) => this.atomically(fn)));
      deleted += step.events;
      if (step.done) return deleted;
      await new Promise((resolve) => setImmediate(resolve));
    }
    return deleted;
  }

  async queryVerifications(plan: AnalyticsPlan, scope: AnalyticsScope): Promise<Array<Record<string, unknown>>> {
    const q = compileQuery(plan, scope);
    if (!this.analytics) return this.exclusive(() => runQuery(this.db, q));
    if (this.closed) throw new StoreUnavailableError(`SQLite store unavailable: the store of ${this.file} is closed.`);
    let rows: Array<Record<string, unknown>>;
    try {
      rows = await this.analytics.query(q.text, q.params);
    } catch (err) {
      // No worker thread here: the query runs on the store's connection.
      if (err instanceof AnalyticsWorkerUnavailable) return this.exclusive(() => runQuery(this.db, q));
      // A SQLite error of the worker's that the service cannot help is the store's unavailability, as on `db`.
      return this.guard((): never => {
        throw err;
      });
    }
    return rows.map(q.read);
  }

  addRatelimitCounts(counts: readonly RatelimitCount[]): Promise<void> {
    return this.exclusive(() => this.atomically(() => addCounts(this.tables, counts)));
  }

  ratelimitCounts(query: RatelimitCountQuery): Promise<RatelimitCount[]> {
    return this.exclusive(() => readCounts(this.tables, query));
  }

  claimWebhooks(now: number, limit: number, leaseMs: number): Promise<WebhookMessage[]> {
    return this.exclusive(() => this.atomically(() => outbox.claimWebhooks(this.tables, now, limit, leaseMs)));
  }

  settleWebhook(message: WebhookMessage): Promise<void> {
    return this.exclusive(() => outbox.settleWebhook(this.tables, message));
  }

  getWebhook(messageId: string): Promise<WebhookMessage | undefined> {
    return this.exclusive(() => outbox.getWebhook(this.tables, messageId));
  }

  listWebhooks(query: WebhookQuery): Promise<WebhookMessage[]> {
    return this.exclusive(() => outbox.listWebhooks(this.tables, query));
  }

  deleteAuditBefore(before: number): Promise<number> {
    return this.exclusive(() => this.atomically(() => deleteAuditBefore(this.tables, before)));
  }

  auditHeads(): Promise<Map<string, ChainHead>> {
    return this.exclusive(() => auditHeads(this.tables));
  }

  readAuditChain(workspaceId: string, after: AuditChainCursor | undefined, limit: number): Promise<AuditEvent[]> {
    return this.exclusive(() => readAuditChain(this.tables, workspaceId, after, limit));
  }

  async isEmpty(): Promise<boolean> {
    return this.exclusive(() => this.tables.isEmpty());
  }

  async pragma(name: string, value?: number | string): Promise<unknown> {
    if (!/^[a-z_]+$/.test(name)) throw new TypeError(`not a PRAGMA name: ${JSON.stringify(name)}`);
    if (value !== undefined && !/^[\w.-]+$/.test(String(value))) throw new TypeError(`not a PRAGMA value: ${JSON.stringify(value)}`);
    return this.exclusive(() => {
      if (value !== undefined) this.db.exec(`PRAGMA ${name} = ${value}`);
      return this.db.prepare(`PRAGMA ${name}`).get();
    }, false);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.analytics?.stop();
    await this.checkpointer?.stop();
    await this.mutex.lock();
    if (this.batch !== undefined) this.commitBatch();
    try {
      // The last connection to close folds the WAL into the file and removes it.
      this.db.close();
    } finally {
      this.lock.close();
      this.mutex.unlock();
    }
  }

  /**
   * The StorageTx methods over `run`, which decides where each call runs (in the caller's
   * transaction, or alone). A write of several statements is a transaction of its own when alone.
   */
  private txApi(run: <T>(fn: () => T) => Promise<T>): StorageTx {
    const write = <T>(fn: () => T) => run(() => this.atomically(fn));
    return {
      get: (table, id) => run(() => this.tables.get(table, id)),
      keyByHash: (hash) => run(() => this.tables.byHash("keys", hash)),
      rootKeyByHash: (hash) => run(() => this.tables.byHash("rootKeys", hash)),
      find: (table, workspaceId, field, value) => run(() => this.tables.list(table, workspaceId, { where: { field, value } })),
      list: (table, workspaceId, options) => run(() => this.tables.list(table, workspaceId, options)),
      sortedKeys: (workspaceId, apiId, sort, options) => run(() => this.tables.sortedKeys(workspaceId, apiId, sort, options)),
      put: (table, record) => write(() => this.tables.put(table, record)),
      delete: (table, id) => write(() => this.tables.delete(table, id)),
      spendCredits: (keyId, cost, now, refill, crossings) => run(() => spendCredits(this.tables, keyId, cost, now, refill, crossings)),
      limit: (checks, now) =>
        run(() => {
          if (now - this.lastPrune >= PRUNE_EVERY_MS) {
            this.lastPrune = now;
            pruneCounters(this.tables, now);
          }
          return chargeLimits(this.tables, (fn) => this.atomically(fn), checks, now);
        }),
      dropCounters: (target) => write(() => dropCounters(this.tables, target)),
      lastUsed: (keyIds) => run(() => lastUsed(this.tables, keyIds)),
      markUsed: (uses) => write(() => markUsed(this.tables, uses)),
      appendAudit: (event) => write(() => appendAudit(this.tables, event)),
      listAudit: (query) => run(() => listAudit(this.tables, query)),
      enqueueWebhooks: (messages) => write(() => outbox.enqueueWebhooks(this.tables, messages)),
      rescheduleWebhooks: (workspaceId, endpointId, dueAt) =>
        write(() => outbox.rescheduleWebhooks(this.tables, workspaceId, endpointId, dueAt)),
      claimExpiryNotices: (from, until, limit) => write(() => claimExpiryNotices(this.tables, from, until, limit)),
      getMeta: (name) => run(() => this.tables.getMeta(name)),
      setMeta: (name, value) => run(() => this.tables.setMeta(name, value)),
    };
  }

  /**
   * Runs `fn` holding the mutex, so never beside another caller's transaction: inside the open
   * transaction when there is one and `join` (answering once it committed), else alone.
   */
  private async exclusive<T>(fn: () => T, join = true): Promise<T> {
    await this.enter(join);
    if (this.batch !== undefined) return this.member(() => this.guard(fn));
    try {
      return this.guard(fn);
    } finally {
      this.mutex.unlock();
    }
  }

  /**
   * Runs `work` in the open transaction, in a savepoint of its own when others ran in it before,
   * and answers once that transaction committed (a failure of its own at once). Then hands the
   * mutex on to the next waiter inside the transaction, or commits it.
   */
  private async member<T>(work: () => T | Promise<T>): Promise<T> {
    const batch = this.batch!;
    const savepoint = batch.length > 0;
    let value: T;
    try {
      if (savepoint) this.guard(() => this.db.exec("SAVEPOINT member"));
      value = await work();
      if (savepoint) this.guard(() => this.db.exec("RELEASE member"));
    } catch (err) {
      if (savepoint && !(err instanceof StoreUnavailableError) && this.undoMember()) this.handOn();
      else {
        // The others fail with the store's error, never with this caller's own.
        const storeError =
          err instanceof StoreUnavailableError
            ? err
            : new StoreUnavailableError(`SQLite store unavailable: a failed operation could not be undone alone (${this.file}).`, {
                cause: err,
              });
        this.abort(storeError);
        this.mutex.unlock();
      }
      throw err;
    }
    return new Promise<T>((resolve, reject) => {
      batch.push({ done: () => resolve(value), fail: reject });
      this.handOn();
    });
  }

  /**
   * Group commit: after a caller's steps, the transaction stays open for the callers that come
   * before the event loop's next turn (up to GROUP_COMMIT_MAX of them), so that one COMMIT writes
   * the pages they share (the last leaf of each table and index they append to) once.
   */
  private handOn(): void {
    if (this.batch!.length >= GROUP_COMMIT_MAX) this.commitBatch();
    else if (!this.flushing) {
      this.flushing = true;
      setImmediate(() => {
        this.flushing = false;
        // A caller holding the mutex hands on again when its steps end.
        if (this.batch === undefined || this.mutex.locked) return;
        void this.mutex.lock();
        this.commitBatch();
        this.mutex.unlock();
      });
    }
    this.mutex.unlock();
  }

  /** Commits the open transaction (the caller holds the mutex) and answers the callers in it. */
  private commitBatch(): void {
    const batch = this.batch!;
    try {
      // Those who joined the transaction skipped enter()'s check: a write into a file deleted,
      // moved or replaced meanwhile would be lost, so none of the group is kept.
      this.checkIdentity();
      this.guard(() => this.db.exec("COMMIT"));
    } catch (err) {
      this.abort(err);
      return;
    }
    this.batch = undefined;
    this.inTransaction = false;
    for (const member of batch) member.done();
  }

  /** Rolls back the open transaction: each caller waiting for its commit fails with `err`. */
  private abort(err: unknown): void {
    const batch = this.batch!;
    this.rollback();
    this.batch = undefined;
    this.inTransaction = false;
    for (const member of batch) member.fail(err);
  }

  /** Undoes the last member's statements, keeping the transaction; false when that fails too. */
  private undoMember(): boolean {
    try {
      this.db.exec("ROLLBACK TO member");
      this.db.exec("RELEASE member");
      return true;
    } catch {
      return false;
    }
  }

  /** Takes the mutex and checks the file is still the one open. Unlocks again when it throws. */
  private async enter(join: boolean): Promise<void> {
    if (this.closed) throw new StoreUnavailableError(`SQLite store unavailable: the store of ${this.file} is closed.`);
    await this.mutex.lock();
    if (this.batch !== undefined) {
      // Inside the open transaction: its COMMIT checks the file (commitBatch). Else it commits first.
      if (join) return;
      this.commitBatch();
    }
    try {
      this.checkIdentity();
    } catch (err) {
      this.mutex.unlock();
      throw err;
    }
    // Writes back to back never let the timed checkpoints catch up (checkpointer.ts): once the WAL
    // is large, the next operation waits, with the others, for a checkpoint of the worker, and the
    // write after it restarts the WAL. The event loop runs on meanwhile.
    if (this.checkpointer?.walLarge) await this.checkpointer.checkpoint();
  }

  /** Throws `StoreUnavailableError` unless the file at the store's path is still the one it opened. */
  private checkIdentity(): void {
    let same: boolean;
    try {
      same = this.identity.isAt(this.file);
    } catch (err) {
      throw new StoreUnavailableError(`SQLite store unavailable: cannot check the database file ${this.file}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    // Writing on would write to the old file, lost at the next start. Its WAL cannot be joined to
    // a new file at the same path either: only a restart opens the new one. A file moved back is fine.
    if (!same) {
      throw new StoreUnavailableError(
        `SQLite store unavailable: the database file ${this.file} was deleted, moved or replaced while in use; ` +
          "put it back, or restart keyguard to open the file now at that path.",
      );
    }
  }

  /** Runs `fn` as one transaction of its own unless one is open. */
  private atomically<T>(fn: () => T): T {
    if (this.inTransaction) return fn();
    this.db.exec("BEGIN IMMEDIATE");
    this.inTransaction = true;
    try {
      const result = fn();
      this.db.exec("COMMIT");
      return result;
    } catch (err) {
      this.rollback();
      throw err;
    } finally {
      this.inTransaction = false;
    }
  }

  private rollback(): void {
    try {
      this.db.exec("ROLLBACK");
    } catch {
      // SQLite already rolled back (it does after some I/O errors): nothing left to undo.
    }
  }

  /** Runs `fn`; an error of SQLite that the service cannot help becomes `StoreUnavailableError`. */
  private guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      const reason = unavailableReason(err);
      if (reason === undefined) throw err;
      throw new StoreUnavailableError(`SQLite store unavailable: ${reason} (${this.file}).`, { cause: err });
    }
  }
}
