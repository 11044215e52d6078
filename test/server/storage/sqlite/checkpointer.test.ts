// The checkpoint worker's stop: it resolves whether the worker is still running or has exited
// already (a second stop, or a worker that died), instead of waiting for an "exit" that has passed.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sqliteStore } from "../../../../src/server/storage/sqlite/store";
import { startCheckpointer } from "../../../../src/server/storage/sqlite/checkpointer";

const dir = mkdtempSync(join(tmpdir(), "keyguard-checkpointer-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const runningWorkers = (): number => (process.report.getReport() as unknown as { workers: unknown[] }).workers.length;

describe("checkpoint worker", () => {
  it("stops, and a second stop after the worker has exited resolves too", async () => {
    const file = join(dir, "stop-twice.db");
    // The driver this runtime's store picks (better-sqlite3 on Node 20, node:sqlite where its native module cannot load).
    const store = await sqliteStore(file);
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
