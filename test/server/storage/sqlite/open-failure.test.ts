// A SQLite store whose open fails after the checkpoint worker started gives back everything it
// took: the worker thread (with its connection), its own connection and the file's lock. The
// failure is injected (the store's connection refuses the PRAGMA that follows the worker's start):
// nothing a real file can do makes that step fail. The worker threads are counted by Node's
// diagnostic report, which lists the running ones.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { LocalServiceConfigError } from "../../../../src/server/errors";
import { sqliteStorage } from "../../../../src/server/storage/sqlite/store";
import type * as SqliteOpen from "../../../../src/server/storage/sqlite/open";

const fault = vi.hoisted(() => ({ on: false }));

vi.mock("../../../../src/server/storage/sqlite/open", async (importOriginal) => {
  const actual = await importOriginal<typeof SqliteOpen>();
  return {
    ...actual,
    openDataFile: async (...args: Parameters<typeof actual.openDataFile>) => {
      const db = await actual.openDataFile(...args);
      if (!fault.on) return db;
      return {
        ...db,
        exec: (sql: string) => {
          if (sql.startsWith("PRAGMA wal_autocheckpoint")) throw new Error("injected: PRAGMA refused");
          db.exec(sql);
        },
      };
    },
  };
});

/** The worker threads this thread started that are running. */
const runningWorkers = (): number => (process.report.getReport() as { workers: unknown[] }).workers.length;

const dir = mkdtempSync(join(tmpdir(), "keyguard-sqlite-open-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a SQLite open that fails after the checkpoint worker started", () => {
  it("stops the worker and closes the connection and the lock, so the file opens again", async () => {
    const file = join(dir, "keys.db");
    const workersBefore = runningWorkers();
    fault.on = true;
    try {
      await expect(sqliteStorage(file)).rejects.toThrow(LocalServiceConfigError);
      await expect(sqliteStorage(file)).rejects.toThrow(/cannot open the SQLite data file .*injected: PRAGMA refused/);
    } finally {
      fault.on = false;
    }
    expect(runningWorkers()).toBe(workersBefore);
    // The lock and the connection are closed: the file opens again, with its checkpoint worker.
    const store = await sqliteStorage(file);
    try {
      expect(runningWorkers()).toBe(workersBefore + 1);
      expect(await store.pragma("wal_autocheckpoint")).toEqual({ wal_autocheckpoint: 0 });
    } finally {
      await store.close();
    }
    expect(runningWorkers()).toBe(workersBefore);
  });
});
