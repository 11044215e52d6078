// The checkpoint worker: it copies the WAL into the data file while the store is open; the store's
// long writes wait for it, so the WAL stays small; its stop resolves whether the worker is still
// running or has exited already (a second stop, or a worker that died), instead of waiting for an
// "exit" that has passed.
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sqliteStorage } from "../../../../src/server/storage/sqlite/store";
import { startCheckpointer, type Checkpointer } from "../../../../src/server/storage/sqlite/checkpointer";
import { openConnection } from "../../../../src/server/storage/sqlite/driver";
import type { VerificationEvent } from "../../../../src/server/records";

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
      // Started: the store's own connection never checkpoints (it would on the event loop).
      expect(await store.pragma("wal_autocheckpoint")).toEqual({ wal_autocheckpoint: 0 });
      const marker = `checkpointed-${Date.now()}`;
      await store.direct.setMeta("probe", marker);
      // A few pages of WAL, far below SQLite's own automatic checkpoint (1000 pages): only the worker copies them.
      expect(await appearsIn(file, marker, 5000)).toBe(true);
      // Copied by a timed checkpoint, which is PASSIVE: it never takes the writers' lock (a TRUNCATE
      // one would, and would empty the WAL file here); only a checkpoint the store waits for does.
      expect(statSync(`${file}-wal`).size).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });

  it("should the worker end, the store's connection checkpoints by itself again", async () => {
    const store = await sqliteStorage(join(dir, "worker-ends.db"));
    try {
      // The worker ending unasked, as a crash would (the store still open).
      await (store as unknown as { checkpointer: Checkpointer }).checkpointer.stop();
      await expect.poll(() => store.pragma("wal_autocheckpoint")).toEqual({ wal_autocheckpoint: 1000 });
      await store.direct.setMeta("probe", "still written");
      expect(await store.direct.getMeta("probe")).toBe("still written");
    } finally {
      await store.close();
    }
  });

  it("writes back to back wait for checkpoints: the WAL stays tens of MB", async () => {
    // The WAL restarts only at a write that finds every frame copied; batches committed back to back
    // never let the timed checkpoints catch up. The WAL grew until SQLite's automatic checkpoint ran
    // on the event loop (82 MB for these 100,000 events), and without it grows without bound.
    const file = join(dir, "back-to-back.db");
    const walMb = () => (statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0) / 1e6;
    const start = Date.now() - 86_400_000;
    const store = await sqliteStorage(file);
    let largest = 0;
    try {
      for (let b = 0; b < 1000; b++) {
        const events: VerificationEvent[] = Array.from({ length: 100 }, (_, i) => ({
          time: start + b * 100 + i,
          workspaceId: "ws_wal",
          keySpaceId: "ks_wal",
          keyId: `key_${(b * 100 + i) % 1000}`,
          identityId: i % 4 === 0 ? `id_${i}` : "",
          externalId: "",
          outcome: i % 5 === 0 ? "RATE_LIMITED" : "VALID",
          tags: i % 10 === 0 ? ["plan=pro"] : [],
          spentCredits: 0,
          requestId: `req_${b}_${i}`,
          region: "local",
        }));
        await store.appendVerifications(events);
        largest = Math.max(largest, walMb());
        // As the service's flushes do: the event loop turns between batches.
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(largest).toBeGreaterThan(1);
      expect(largest).toBeLessThan(60);
      // The retention sweep's steps go through the same wait.
      const sampler = setInterval(() => (largest = Math.max(largest, walMb())), 5);
      const deleted = await store.deleteVerificationsBefore(Date.now());
      clearInterval(sampler);
      expect(deleted).toBe(100_000);
      expect(Math.max(largest, walMb())).toBeLessThan(60);
    } finally {
      await store.close();
    }
  });

  it("a checkpoint the store waits for empties the WAL file in the worker; with a reader on the WAL it leaves it", async () => {
    // Else the store's next write truncates the WAL to journal_size_limit on the event loop: 260 ms
    // for a WAL a long analytics query let grow to 1 GB.
    const file = join(dir, "truncate.db");
    const walBytes = () => statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0;
    const store = await sqliteStorage(file);
    const checkpointer = (store as unknown as { checkpointer: Checkpointer }).checkpointer;
    const reader = await openConnection(file);
    try {
      for (let i = 0; i < 200; i++) await store.direct.setMeta(`probe_${i}`, "x".repeat(2000));
      expect(walBytes()).toBeGreaterThan(100_000);
      // A reader on the WAL: the checkpoint copies what it can and returns, the WAL kept.
      reader.exec("BEGIN");
      expect(reader.prepare("SELECT count(*) AS n FROM meta WHERE name LIKE 'probe_%'").get()).toEqual({ n: 200 });
      await checkpointer.checkpoint();
      expect(walBytes()).toBeGreaterThan(0);
      reader.exec("COMMIT");
      await checkpointer.checkpoint();
      expect(walBytes()).toBe(0);
      // The store goes on writing and reading.
      await store.direct.setMeta("after", "written");
      expect(await store.direct.getMeta("after")).toBe("written");
    } finally {
      reader.close();
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
