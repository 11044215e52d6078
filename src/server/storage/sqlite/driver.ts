// The SQLite driver under the SQLite store: `node:sqlite` where the runtime has it (Node >= 22.13),
// else the optional peer dependency `better-sqlite3`, loaded on demand. Both are synchronous; this
// adapter gives them one shape and turns their errors into ones the store can classify.
import { LocalServiceConfigError } from "../../errors";

export type SqlValue = string | number | bigint | null | Uint8Array;
export type SqlRow = Record<string, SqlValue>;

export interface SqlStatement {
  run(...params: SqlValue[]): { changes: number };
  get(...params: SqlValue[]): SqlRow | undefined;
  all(...params: SqlValue[]): SqlRow[];
}

export interface SqlConnection {
  readonly driver: SqliteDriverName;
  exec(sql: string): void;
  prepare(sql: string): SqlStatement;
  close(): void;
}

export type SqliteDriverName = "node:sqlite" | "better-sqlite3";

interface NativeDatabase {
  exec(sql: string): unknown;
  prepare(sql: string): SqlStatement;
  close(): void;
}

/** Whether this runtime's `node:sqlite` can be used without a flag (Node >= 22.13). */
export function hasNodeSqlite(version: string = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split(".").map(Number);
  return major > 22 || (major === 22 && minor >= 13);
}

const MISSING =
  "keyguard/server: the SQLite store needs a SQLite driver: Node.js 22.13 or later (node:sqlite), " +
  "or the better-sqlite3 package. Install it with: npm install better-sqlite3";

type Loader = (name: string) => Promise<unknown>;
// A variable specifier: bundlers leave the import alone, so neither driver is required at build time.
const importModule: Loader = (name) => import(name);

async function openNodeSqlite(file: string, load: Loader): Promise<NativeDatabase> {
  const mod = (await load("node:sqlite")) as { DatabaseSync: new (file: string) => NativeDatabase };
  return new mod.DatabaseSync(file);
}

async function openBetterSqlite3(file: string, load: Loader): Promise<NativeDatabase> {
  let mod: { default?: unknown };
  try {
    mod = (await load("better-sqlite3")) as { default?: unknown };
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") throw new LocalServiceConfigError(MISSING);
    throw err;
  }
  const Database = (mod.default ?? mod) as new (file: string) => NativeDatabase;
  try {
    return new Database(file);
  } catch (err) {
    // Its native module loads on first use: built for another Node.js, it cannot.
    const message = (err as Error).message ?? "";
    if ((err as { code?: string }).code === "ERR_DLOPEN_FAILED" || /NODE_MODULE_VERSION|did not self-register/.test(message)) {
      throw new LocalServiceConfigError(
        `keyguard/server: better-sqlite3 cannot load on Node.js ${process.version} (its native module was built for another ` +
          "version). Rebuild it: npm rebuild better-sqlite3",
      );
    }
    throw err;
  }
}

/**
 * Opens `file` with `driver` (default: node:sqlite when the runtime has it, else better-sqlite3).
 * Throws `LocalServiceConfigError` naming what to install when no driver is there.
 */
export async function openConnection(file: string, driver?: SqliteDriverName, load: Loader = importModule): Promise<SqlConnection> {
  const name: SqliteDriverName = driver ?? (hasNodeSqlite() ? "node:sqlite" : "better-sqlite3");
  if (name === "node:sqlite" && !hasNodeSqlite()) {
    throw new LocalServiceConfigError(
      `keyguard/server: the SQLite driver node:sqlite needs Node.js 22.13 or later (this is ${process.version}). ` +
        "Use better-sqlite3 instead: npm install better-sqlite3",
    );
  }
  const db = name === "node:sqlite" ? await openNodeSqlite(file, load) : await openBetterSqlite3(file, load);
  return {
    driver: name,
    exec: (sql) => void db.exec(sql),
    prepare: (sql) => db.prepare(sql),
    close: () => db.close(),
  };
}

/** SQLite's primary result codes by name, as both drivers report them. */
const PRIMARY: Record<number, string> = {
  3: "SQLITE_PERM",
  5: "SQLITE_BUSY",
  6: "SQLITE_LOCKED",
  7: "SQLITE_NOMEM",
  8: "SQLITE_READONLY",
  10: "SQLITE_IOERR",
  11: "SQLITE_CORRUPT",
  13: "SQLITE_FULL",
  14: "SQLITE_CANTOPEN",
  15: "SQLITE_PROTOCOL",
  26: "SQLITE_NOTADB",
};

/**
 * The SQLite result code of a driver error ("SQLITE_FULL", "SQLITE_READONLY_DBMOVED", …), or
 * undefined when `err` is not an error from SQLite. better-sqlite3 puts it in `code`; node:sqlite
 * puts the number in `errcode`.
 */
export function sqliteCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; errcode?: unknown; errstr?: unknown } | null;
  if (typeof e?.code === "string" && e.code.startsWith("SQLITE_")) return e.code;
  if (typeof e?.errcode === "number") return PRIMARY[e.errcode & 0xff] ?? `SQLITE_ERROR_${e.errcode}`;
  return undefined;
}
