// Opening a SQLite data file: what kind of file it is, the connection's settings (WAL, the
// synchronous level, a busy timeout), a write probe and the migrations; which SQLite errors mean
// the store cannot serve now; and the file's identity, to notice it deleted, moved or replaced.
import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Logger } from "../../../logger";
import { LocalServiceConfigError } from "../../errors";
import { openConnection, sqliteCode, type SqlConnection, type SqliteDriverName } from "./driver";
import { migrate } from "./schema";

export interface ConnectionSettings {
  driver: SqliteDriverName | undefined;
  synchronous: "normal" | "full";
  busyTimeoutMs: number;
}

const SQLITE_HEADER = "SQLite format 3\0";

const REASONS: Record<string, string> = {
  SQLITE_FULL: "the disk or the database is full",
  SQLITE_READONLY: "the database is read-only",
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
export function unavailableReason(err: unknown): string | undefined {
  const code = sqliteCode(err);
  if (code === undefined) return undefined;
  return REASONS[code] ?? REASONS[/^SQLITE_[A-Z]+/.exec(code)?.[0] ?? ""];
}

/**
 * The files of a data file that hold its state or its lock: the database, its write-ahead log and
 * shared-memory index (SQLite gives these the database file's mode), and keyguard's lock file.
 */
const SIBLINGS = ["", "-wal", "-shm", "-lock"] as const;

/**
 * Creates the data file and its lock file readable by their owner only (0600) when they do not exist
 * yet: they hold key hashes, sealed recoverable keys and metadata. SQLite creates the `-wal` and
 * `-shm` files with the database file's mode. An existing file keeps its mode (see `warnIfReadable`).
 */
export function createPrivately(file: string): void {
  for (const path of [file, `${file}-lock`]) closeSync(openSync(path, "a", 0o600));
}

/**
 * Warns, once per start, about each of the data file's files that other users can read or write, and
 * about a directory they can enter: files made by an earlier keyguard, or by hand, under a umask of 022.
 */
export function warnIfReadable(file: string, logger: Logger): void {
  if (process.platform === "win32") return;
  for (const suffix of SIBLINGS) {
    const path = `${file}${suffix}`;
    if (existsSync(path) && (statSync(path).mode & 0o077) !== 0) {
      logger.warn({ file: path }, `keyguard/server: ${path} can be read by other users; restrict it with: chmod 600 ${path}`);
    }
  }
  const dir = dirname(resolve(file));
  if (existsSync(dir) && (statSync(dir).mode & 0o007) !== 0) {
    logger.warn(
      { directory: dir },
      `keyguard/server: the directory ${dir} of the data file can be entered by other users; restrict it with: chmod o-rwx ${dir}`,
    );
  }
}

/** Refuses a file that exists and is not a SQLite database, naming `keyguard migrate` for a JSON state file. */
export function checkFileKind(file: string): void {
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
      `keyguard/server: ${name} is a JSON state file of an earlier keyguard, not a SQLite database. ` +
        `Import it once into a new SQLite file: keyguard migrate ${file} --data <new-file.db>`,
    );
  }
  throw new LocalServiceConfigError(`keyguard/server: ${name} is not a SQLite database. Use another path.`);
}

/**
 * The data file the store opened, known by its device and inode. `isAt(file)` tells whether the
 * path still names it: no longer once the file is deleted, moved away or replaced by a rename over
 * it; again once it is moved back. A file overwritten in place (`cp other.db keys.db`) keeps its
 * inode: that is not detected.
 */
export class FileIdentity {
  private constructor(
    private readonly dev: number | bigint,
    private readonly ino: number | bigint,
  ) {}

  /** The identity of the file now at `file`; throws when there is none. */
  static of(file: string): FileIdentity {
    const st = statSync(file, { bigint: true });
    const exact = st.dev <= MAX_EXACT && st.ino <= MAX_EXACT;
    return exact ? new FileIdentity(Number(st.dev), Number(st.ino)) : new FileIdentity(st.dev, st.ino);
  }

  /**
   * Whether `file` names this file now: one stat of the path (errors other than ENOENT thrown).
   * A plain stat costs less than a bigint one, and its numbers compare exactly with a dev and an
   * inode below 2^53: a number from it equals such a value only when the field is that value
   * (larger fields round to 2^53 or more). Larger ones (NTFS file ids can be) are compared as bigints.
   */
  isAt(file: string): boolean {
    const st =
      typeof this.ino === "number" ? statSync(file, { throwIfNoEntry: false }) : statSync(file, { bigint: true, throwIfNoEntry: false });
    return st !== undefined && st.ino === this.ino && st.dev === this.dev;
  }
}

const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Opens `file` with the store's settings, checks it can be written and brings its schema up to
 * date. SQLite errors become a `LocalServiceConfigError` saying why the file cannot be used.
 */
export async function openDataFile(file: string, settings: ConnectionSettings): Promise<SqlConnection> {
  const db = await openConnection(file, settings.driver);
  try {
    db.exec(`PRAGMA busy_timeout = ${settings.busyTimeoutMs}`);
    const mode = db.prepare("PRAGMA journal_mode = WAL").get();
    if (String(mode?.journal_mode).toLowerCase() !== "wal") {
      throw new LocalServiceConfigError(`keyguard/server: cannot switch the SQLite data file ${JSON.stringify(file)} to WAL mode.`);
    }
    // In WAL mode NORMAL syncs at checkpoints only: a commit is in the OS before it is acknowledged.
    db.exec(`PRAGMA synchronous = ${settings.synchronous.toUpperCase()}`);
    // Cascades are explicit statements (tables.ts); records may name ids of other tables freely.
    db.exec("PRAGMA foreign_keys = OFF");
    db.exec("PRAGMA journal_size_limit = 67108864");
    // 64 MiB of page cache (SQLite's default is 2 MiB): at a million keys the key-hash index no
    // longer fits 2 MiB, and every insert then reads index pages back from the file.
    db.exec("PRAGMA cache_size = -65536");
    // Temporary files in memory: above all the journal of the savepoints a group commit opens for
    // each operation (store.ts), which spills to a temporary file past 64 KiB by default and then
    // costs a write per page an operation changes.
    db.exec("PRAGMA temp_store = MEMORY");
    migrate(db, file);
    // A file SQLite could open only for reading opens without error: find out now, not at the first write.
    db.exec("BEGIN IMMEDIATE");
    db.exec("COMMIT");
    return db;
  } catch (err) {
    db.close();
    const reason = unavailableReason(err);
    if (reason !== undefined) {
      throw new LocalServiceConfigError(`keyguard/server: cannot use the SQLite data file ${JSON.stringify(file)}: ${reason}.`);
    }
    throw err;
  }
}
