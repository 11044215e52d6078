// One process per SQLite data file. The lock is SQLite's own file lock (POSIX advisory on Unix,
// LockFileEx on Windows) held on a small sibling database, `<file>-lock`, in exclusive locking
// mode: the operating system releases it when the process ends, however it ends (kill -9
// included), so a stale lock cannot exist. The data file itself stays in normal locking mode,
// so `sqlite3 file.db ".backup …"` can read it while the service runs. The lock file is kept
// (deleting it would let two processes lock two different files of the same name).
import { LocalServiceConfigError } from "../../errors";
import { openConnection, sqliteCode, type SqlConnection, type SqliteDriverName } from "./driver";

/** Takes the lock of `file` or throws a `LocalServiceConfigError` saying another process serves it. */
export async function lockDataFile(file: string, driver: SqliteDriverName | undefined): Promise<SqlConnection> {
  const lock = await openConnection(`${file}-lock`, driver);
  try {
    lock.exec("PRAGMA busy_timeout = 0");
    lock.exec("PRAGMA locking_mode = EXCLUSIVE");
    lock.exec("PRAGMA journal_mode = MEMORY");
    // The first write in exclusive locking mode takes the exclusive lock and keeps it until close.
    lock.exec("BEGIN EXCLUSIVE");
    lock.exec("CREATE TABLE IF NOT EXISTS holder (id INTEGER PRIMARY KEY, pid INTEGER NOT NULL)");
    lock.prepare("INSERT OR REPLACE INTO holder (id, pid) VALUES (1, ?)").run(process.pid);
    lock.exec("COMMIT");
    return lock;
  } catch (err) {
    lock.close();
    const code = sqliteCode(err);
    if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") {
      throw new LocalServiceConfigError(
        `keyguard/server: ${JSON.stringify(file)} is in use by another keyguard process (locked through ` +
          `${JSON.stringify(`${file}-lock`)}). One process serves a SQLite data file: stop the other one first, ` +
          "or use PostgreSQL + Redis to run several instances.",
      );
    }
    throw err;
  }
}
