// The audit chain checked while the service goes on writing: records appended between the check's
// reading of the heads and of the records are not taken for inserted ones; a record added behind
// the store's back (the head not moved) still is.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { memoryStorage, sqliteStorage, type Storage } from "keyguard/server";
import { newId } from "../../../src/server/domain/ids";
import type { AuditEvent } from "../../../src/server/records";
import { verifyStoredAudit, type AuditChainSource } from "../../../src/server/storage/audit-verify";

const WS = "ws_running";
const dir = mkdtempSync(join(tmpdir(), "keyguard-audit-running-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const event = (): AuditEvent => ({
  id: newId("aud"),
  time: 1_800_000_000_000 + ++n,
  workspaceId: WS,
  actorId: "rk_bootstrap",
  actorName: "bootstrap",
  operation: "keys.createKey",
  targets: [`key_${n}`],
  outcome: "success",
  requestId: newId("req"),
  ip: "127.0.0.1",
  change: {},
});

/** The store, with `during` run once, after the heads were read and before the records are. */
function appendingMeanwhile(store: Storage, during: () => Promise<void>): AuditChainSource {
  let done = false;
  return {
    auditHeads: () => store.auditHeads(),
    async readAuditChain(...args) {
      if (!done) {
        done = true;
        await during();
      }
      return store.readAuditChain(...args);
    },
  };
}

describe.each([
  ["memory", () => memoryStorage()],
  ["SQLite", () => sqliteStorage(join(dir, `store-${process.pid}-${Math.random().toString(36).slice(2)}.db`))],
])("audit verify while records are appended (%s)", (_name, open) => {
  it("records appended during the check, by the store, are not inserted ones", async () => {
    const store = await open();
    try {
      for (let i = 0; i < 5; i++) await store.transaction((tx) => tx.appendAudit(event()));
      const source = appendingMeanwhile(store, async () => {
        for (let i = 0; i < 3; i++) await store.transaction((tx) => tx.appendAudit(event()));
      });
      const [verdict] = await verifyStoredAudit(source, 2);
      expect(verdict!.problem).toBeUndefined();
      expect(verdict!.summary.records).toBe(8);
    } finally {
      await store.close();
    }
  });
});
