// The checkpoint worker: it copies the WAL into the data file while the store is open, and its stop
// resolves whether the worker is still running or has exited already (a second stop, or a worker that
// died), instead of waiting for an "exit" that has passed.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sqliteStorage } from "../../../../src/server/storage/sqlite/store";
import { startCheckpointer } from "../../../../src/server/storage/sqlite/checkpointer";

const dir = mkdtempSync(join(tmpdir(), "keyguard-checkpointer-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const runningWorkers = (): number => (process.report.getReport() as unknown as { workers: unknown[] }).workers.length;

/** Whether `text` is in `file` within `ms`, polling. */
async function appearsIn(file: string, text: string, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 25))) {
    if (readFileSync(file).includes(text)) return true;
  }
  return false;
}

describe("checkpoint worker", () => {
  it("copies a write from the WAL into the data file while the store is open", async () => {
    const file = join(dir, "checkpoints.db");
    const store = await sqliteStorage(file);
    try {
      // Started: the store's own automatic checkpoint is only the safety net.
      expect(await store.pragma("wal_autocheckpoint")).toEqual({ wal_autocheckpoint: 20_000 });
      const marker = `checkpointed-${Date.now()}`;
      await store.direct.setMeta("probe", marker);
      // A few pages of WAL, far below SQLite's own automatic checkpoint (1000 pages): only the worker copies them.
      expect(await appearsIn(file, marker, 5000)).toBe(true);
    } finally {
      await store.close();
    }
  });

  it("stops, and a second stop after the worker has exited resolves too", async () => {
    const file = join(dir, "stop-twice.db");
    // The driver this runtime's store picks (better-sqlite3 on Node 20, node:sqlite where its native module cannot load).
    const store = await sqliteStorage(file);
    const driver = store.driver;
    await store.close();
    const before = runningWorkers();
    const checkpointer = await startCheckpointer(file, driver, 50);
    expect(checkpointer).toBeDefined();
    expect(runningWorkers()).toBe(before + 1);
    await checkpointer!.stop();
    expect(runningWorkers()).toBe(before);
    // Bounded: a stop waiting for an "exit" that already happened would never resolve.
    const second = await Promise.race([checkpointer!.stop().then(() => "stopped"), new Promise((r) => setTimeout(() => r("hung"), 5000))]);
    expect(second).toBe("stopped");
  });
});
