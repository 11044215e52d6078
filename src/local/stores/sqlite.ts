// The SQLite store: the local key service's state in one file on one machine. One connection,
// WAL, every operation one transaction (BEGIN IMMEDIATE … COMMIT) serialised by an async mutex;
// credits charged by one UPDATE … RETURNING; rate-limit counters in a table of their own.
import { existsSync, openSync, readSync, closeSync } from "node:fs";
import { LocalServiceConfigError } from "../options";
import { checkLimits } from "../ratelimit";
import { StoreUnavailableError, type DueRefill, type LimitCheck, type LimitState, type SpendOutcome, type Store, type StoreTx } from "../storage";
import type { WindowRecord } from "../store";
import { Mutex } from "./mutex";
import { openConnection, sqliteCode, type SqlConnection, type SqliteDriverName } from "./sqlite-driver";
import { lockDataFile } from "./sqlite-lock";
import { migrate } from "./sqlite-schema";
import { SqliteTables } from "./sqlite-tables";

export interface SqliteStoreOptions {
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
}

/** A SQLite store (see `sqliteStore`). */
export interface SqliteStore extends Store {
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

const SQLITE_HEADER = "SQLite format 3\0";

const REASONS: Record<string, string> = {
  SQLITE_FULL: "the disk or the database is full",
  SQLITE_READONLY: "the database file is read-only",
  SQLITE_READONLY_DBMOVED: "the database file was deleted or moved while in use",
  SQLITE_IOERR: "an I/O error occurred",
  SQLITE_CANTOPEN: "the database file cannot be opened",
  SQLITE_BUSY: "another connection holds the database locked",
  SQLITE_LOCKED: "another connection holds the database locked",
  SQLITE_CORRUPT: "the database file is damaged",
  SQLITE_NOTADB: "the database file is damaged",
  SQLITE_NOMEM: "out of memory",
  SQLITE_PERM: "permission denied",
  SQLITE_PROTOCOL: "the file's locks are in a bad state",
};

/** The reason a SQLite error makes the store unavailable, or undefined for other errors (bugs). */
function unavailableReason(err: unknown): string | undefined {
  const code = sqliteCode(err);
  if (code === undefined) return undefined;
  return REASONS[code] ?? REASONS[/^SQLITE_[A-Z]+/.exec(code)?.[0] ?? ""];
}

/** Refuses a file that exists and is not a SQLite database, naming `keyguard migrate` for a JSON state file. */
function checkFileKind(file: string): void {
  if (!existsSync(file)) return;
  const head = Buffer.alloc(16);
  const fd = openSync(file, "r");
  let n: number;
  try {
    n = readSync(fd, head, 0, 16, 0);
  } finally {
    closeSync(fd);
  }
  if (n === 0 || head.toString("latin1", 0, n) === SQLITE_HEADER) return;
  const name = JSON.stringify(file);
  if (/^\s*\{/.test(head.toString("utf8", 0, n))) {
    throw new LocalServiceConfigError(
      `keyguard/local: ${name} is a JSON state file of an earlier keyguard, not a SQLite database. ` +
        `Import it once into a new SQLite file: keyguard migrate ${file} --data <new-file.db>`,
    );
  }
  throw new LocalServiceConfigError(`keyguard/local: ${name} is not a SQLite database. Use another path.`);
}

/**
 * Opens (creating when absent) the SQLite data file `file`: takes its lock (one process per file),
 * brings its schema up to date, and returns the store. Throws `LocalServiceConfigError` for a file
 * of the wrong kind, one in use by another process, or when no SQLite driver is installed.
 */
export async function sqliteStore(file: string, options: SqliteStoreOptions = {}): Promise<SqliteStore> {
  if (typeof file !== "string" || file.trim() === "" || file === ":memory:") {
    throw new LocalServiceConfigError(`keyguard/local: sqliteStore needs a file path, got ${JSON.stringify(file)}.`);
  }
  const synchronous = options.synchronous ?? "normal";
  if (synchronous !== "normal" && synchronous !== "full") {
    throw new LocalServiceConfigError(`keyguard/local: invalid option synchronous = ${JSON.stringify(synchronous)}. Use "normal" or "full".`);
  }
  const busyTimeoutMs = options.busyTimeoutMs ?? 250;
  if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
    throw new LocalServiceConfigError(`keyguard/local: invalid option busyTimeoutMs = ${String(busyTimeoutMs)}. Use an integer >= 0.`);
  }
  checkFileKind(file);
  const lock = await lockDataFile(file, options.driver);
  let db: SqlConnection | undefined;
  try {
    db = await openConnection(file, options.driver);
    db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
    const mode = db.prepare("PRAGMA journal_mode = WAL").get();
    if (String(mode?.journal_mode).toLowerCase() !== "wal") throw new Error(`cannot switch ${file} to WAL mode`);
    db.exec(`PRAGMA synchronous = ${synchronous.toUpperCase()}`);
    db.exec("PRAGMA foreign_keys = OFF");
    db.exec("PRAGMA journal_size_limit = 67108864");
    migrate(db, file);
  } catch (err) {
    db?.close();
    lock.close();
    const reason = unavailableReason(err);
    if (reason && !(err instanceof LocalServiceConfigError)) {
      throw new LocalServiceConfigError(`keyguard/local: cannot open the SQLite data file ${JSON.stringify(file)}: ${reason}.`);
    }
    throw err;
  }
  return new SqliteStoreImpl(file, db, lock);
}

const PRUNE_EVERY_MS = 60_000;

class SqliteStoreImpl implements SqliteStore {
  readonly kind = "sqlite" as const;
  readonly driver: SqliteDriverName;
  readonly direct: StoreTx;
  private readonly tables: SqliteTables;
  private readonly mutex = new Mutex();
  private inTransaction = false;
  private closed = false;
  private lastPrune = -Infinity;

  constructor(
    readonly file: string,
    private readonly db: SqlConnection,
    private readonly lock: SqlConnection,
  ) {
    this.driver = db.driver;
    this.tables = new SqliteTables(db);
    this.direct = this.txApi(<T>(fn: () => T) => this.exclusive(fn));
  }

  async transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    await this.mutex.lock();
    let open = true;
    const tx = this.txApi(async <R>(call: () => R) => {
      if (!open) throw new Error("keyguard/local: a store transaction was used after it ended");
      return this.guard(call);
    });
    try {
      this.guard(() => this.db.exec("BEGIN IMMEDIATE"));
      this.inTransaction = true;
      let result: T;
      try {
        result = await fn(tx);
        this.guard(() => this.db.exec("COMMIT"));
      } catch (err) {
        this.rollback();
        throw err;
      }
      return result;
    } finally {
      open = false;
      this.inTransaction = false;
      this.mutex.unlock();
    }
  }

  async isEmpty(): Promise<boolean> {
    return this.exclusive(() => this.tables.isEmpty());
  }

  async pragma(name: string, value?: number | string): Promise<unknown> {
    if (!/^[a-z_]+$/.test(name)) throw new TypeError(`not a PRAGMA name: ${JSON.stringify(name)}`);
    if (value !== undefined && !/^[\w.-]+$/.test(String(value))) throw new TypeError(`not a PRAGMA value: ${JSON.stringify(value)}`);
    return this.exclusive(() => this.db.prepare(`PRAGMA ${name}${value === undefined ? "" : ` = ${value}`}`).get());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.mutex.lock();
    try {
      this.db.close();
    } finally {
      this.lock.close();
      this.mutex.unlock();
    }
  }

  /**
   * The StoreTx methods over `run`, which decides where each call runs (in the caller's
   * transaction, or alone). A write of several statements is a transaction of its own when alone.
   */
  private txApi(run: <T>(fn: () => T) => Promise<T>): StoreTx {
    const t = this.tables;
    const write = <T>(fn: () => T) => run(() => this.atomically(fn));
    return {
      get: (table, id) => run(() => t.get(table, id)),
      keyByHash: (hash) => run(() => t.byHash("keys", hash)),
      rootKeyByHash: (hash) => run(() => t.byHash("rootKeys", hash)),
      find: (table, workspaceId, field, value) => run(() => t.list(table, workspaceId, { where: { field, value } })),
      list: (table, workspaceId, options) => run(() => t.list(table, workspaceId, options)),
      put: (table, record) => write(() => t.put(table, record)),
      delete: (table, id) => write(() => t.delete(table, id)),
      spendCredits: (keyId, cost, now, refill) => run(() => this.spend(keyId, cost, now, refill)),
      limit: (checks, now) => run(() => this.limit(checks, now)),
      dropCounters: (target) => write(() => this.dropCounters(target)),
      getMeta: (name) => run(() => t.getMeta(name)),
      setMeta: (name, value) => run(() => t.setMeta(name, value)),
    };
  }

  /** Runs `fn` holding the mutex: never inside another caller's transaction. */
  private async exclusive<T>(fn: () => T): Promise<T> {
    if (this.closed) throw new StoreUnavailableError(`SQLite store unavailable: the store of ${this.file} is closed.`);
    await this.mutex.lock();
    try {
      return this.guard(fn);
    } finally {
      this.mutex.unlock();
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

  private spend(keyId: string, cost: number, now: number, refill: DueRefill | undefined): SpendOutcome | undefined {
    const boundary = refill?.boundary ?? null;
    const amount = refill?.amount ?? null;
    const due = "(? IS NOT NULL AND credits_last_refill_at < ?)";
    const balance = `(CASE WHEN ${due} THEN ? ELSE credits_remaining END)`;
    const charged = this.tables
      .stmt(
        `UPDATE keys SET credits_remaining = ${balance} - ?, credits_last_refill_at = CASE WHEN ${due} THEN ? ELSE credits_last_refill_at END ` +
          `WHERE id = ? AND credits_remaining IS NOT NULL AND ${balance} >= ? AND (? > 0 OR ${due}) RETURNING credits_remaining AS remaining`,
      )
      .get(boundary, boundary, amount, cost, boundary, boundary, now, keyId, boundary, boundary, amount, cost, cost, boundary, boundary);
    if (charged) return { ok: true, remaining: Number(charged.remaining) };
    // Not charged: apply a refill that fell due all the same, then report the balance.
    const row =
      (boundary === null
        ? undefined
        : this.tables
            .stmt(
              "UPDATE keys SET credits_remaining = ?, credits_last_refill_at = ? WHERE id = ? AND credits_remaining IS NOT NULL " +
                "AND credits_last_refill_at < ? RETURNING credits_remaining AS remaining",
            )
            .get(amount, now, keyId, boundary)) ?? this.tables.stmt("SELECT credits_remaining AS remaining FROM keys WHERE id = ?").get(keyId);
    if (!row || row.remaining === null) return undefined;
    return { ok: cost === 0, remaining: Number(row.remaining) };
  }

  private limit(checks: readonly LimitCheck[], now: number): { passed: boolean; states: LimitState[] } {
    if (now - this.lastPrune >= PRUNE_EVERY_MS) {
      this.lastPrune = now;
      this.tables
        .stmt("DELETE FROM counters WHERE counter IN (SELECT counter FROM counters WHERE expires_at <= ? LIMIT 1000)")
        .run(now);
    }
    const read = this.tables.stmt("SELECT duration, win, cur, prev FROM counters WHERE counter = ?");
    const windows: Record<string, WindowRecord> = Object.create(null);
    for (const c of checks) {
      const row = read.get(c.counter);
      if (row) windows[c.counter] = { duration: Number(row.duration), window: Number(row.win), current: Number(row.cur), previous: Number(row.prev) };
    }
    const out = checkLimits(windows, checks, now);
    if (out.passed) {
      const write = this.tables.stmt(
        "INSERT INTO counters (counter, owner, duration, win, cur, prev, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (counter) DO UPDATE SET " +
          "owner = excluded.owner, duration = excluded.duration, win = excluded.win, cur = excluded.cur, prev = excluded.prev, expires_at = excluded.expires_at",
      );
      this.atomically(() => {
        for (const c of checks) {
          const w = windows[c.counter]!;
          write.run(c.counter, c.owner ?? null, w.duration, w.window, w.current, w.previous, (w.window + 2) * w.duration);
        }
      });
    }
    return out;
  }

  private dropCounters(target: { limitIds: readonly string[] } | { owner: string }): void {
    if ("owner" in target) {
      this.tables.stmt("DELETE FROM counters WHERE owner = ?").run(target.owner);
      return;
    }
    // Counters of a limit id are "<id>/<duration>": the range ["<id>/", "<id>0") of the primary key.
    const drop = this.tables.stmt("DELETE FROM counters WHERE counter >= ? AND counter < ?");
    for (const id of target.limitIds) drop.run(`${id}/`, `${id}0`);
  }
}
