// The audit log's retention sweep: at start (and every hour) it deletes the records older than
// the retention and keeps the rest; a store that cannot serve is reported, never thrown.
import { describe, expect, it, vi } from "vitest";
import { silentLogger, type Logger } from "keyguard";
import { memoryStorage, StoreUnavailableError, type AuditEvent } from "keyguard/server";
import { newId } from "../../../src/server/domain/ids";
import { AuditRetention } from "../../../src/server/storage/audit-retention";
import { StoreFailureLog } from "../../../src/server/storage/store-failures";
import { faultyStore } from "../../support/faulty-store";

const DAY = 86_400_000;
const T0 = 1_800_000_000_000;

const record = (time: number): AuditEvent => ({
  id: newId("aud"),
  time,
  workspaceId: "ws_1",
  actorId: "rk_1",
  operation: "keys.deleteKey",
  targets: ["key_1"],
  outcome: "success",
  requestId: newId("req"),
  ip: "127.0.0.1",
  change: {},
});

describe("AuditRetention", () => {
  it("deletes at start the records older than the retention, and keeps the others", async () => {
    const store = memoryStorage();
    const old = record(T0 - 2 * DAY);
    const recent = record(T0 - DAY / 2);
    for (const e of [old, recent]) await store.direct.appendAudit(e);
    const retention = new AuditRetention(store, DAY, () => T0, silentLogger, new StoreFailureLog(silentLogger, store.kind));
    await retention.close();
    expect(await store.direct.listAudit({ workspaceId: "ws_1", limit: 10 })).toEqual([
      { ...recent, seq: 2, prevHash: expect.any(String), hash: expect.any(String) },
    ]);
    expect(await retention.sweep()).toBe(0);
  });

  it("reports a store that cannot serve and resolves", async () => {
    const logger: Logger = { ...silentLogger, error: vi.fn() };
    const store = faultyStore(memoryStorage(), (call) =>
      call === "deleteAuditBefore" ? new StoreUnavailableError("database down") : undefined,
    );
    const retention = new AuditRetention(store, DAY, () => T0, logger, new StoreFailureLog(logger, store.kind));
    expect(await retention.sweep()).toBe(0);
    await retention.close();
    expect(logger.error).toHaveBeenCalled();
  });
});
