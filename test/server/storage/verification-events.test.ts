// Verification events and lastUsedAt: what each verification records (never the key), batches
// written on flush and on close, the retention sweep, a store that cannot take events, and the
// keys' lastUsedAt in getKey, whoami and listKeys.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { silentLogger, type Logger } from "keyguard";
import {
  LocalServiceConfigError,
  StoreUnavailableError,
  createLocalKeyService,
  memoryStorage,
  startLocalKeyService,
  type VerificationEvent,
} from "keyguard/server";
import { parseAnalyticsQuery } from "../../../src/server/analytics/query-check";
import { StoreFailureLog } from "../../../src/server/storage/store-failures";
import { VerificationRecorder } from "../../../src/server/storage/verification-events";
import { faultyStore } from "../../support/faulty-store";
import { overriding } from "../../support/storage-wrapper";
import { makeCall, manualClock, start, type Started } from "../helpers";

const DAY = 86_400_000;
const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

async function started(options: Parameters<typeof start>[0] = {}): Promise<Started> {
  const s = await start(options);
  running.push(s);
  return s;
}

const rowsOf = async (s: Started, query: string, rootKey?: string) => {
  const res = await s.call("analytics.getVerifications", { query }, rootKey);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as Array<Record<string, unknown>>;
};

describe("verification events", () => {
  it("records every outcome of a key of the workspace with its fields and tags, never the key, and not NOT_FOUND", async () => {
    const clock = manualClock();
    const s = await started({ now: clock.now });
    const externalId = `user_${Date.now()}`;
    const identityId = (await s.call("identities.createIdentity", { externalId })).body.data.identityId as string;
    const paid = await s.createKey({ credits: { remaining: 2 } });
    const owned = await s.createKey({ externalId });
    const disabled = await s.createKey({ enabled: false });
    const expiring = await s.createKey({ expires: clock.t + 1000 });
    const limited = await s.createKey({ ratelimits: [{ name: "burst", limit: 1, duration: 60_000, autoApply: true }] });

    expect((await s.verify(paid.key, { tags: ["path=/a", "m=GET"], credits: { cost: 2 } })).code).toBe("VALID");
    expect((await s.verify(paid.key, { credits: { cost: 1 } })).code).toBe("USAGE_EXCEEDED");
    expect((await s.verify(owned.key, { permissions: "docs.read" })).code).toBe("INSUFFICIENT_PERMISSIONS");
    expect((await s.verify(disabled.key)).code).toBe("DISABLED");
    expect((await s.verify(limited.key)).code).toBe("VALID");
    expect((await s.verify(limited.key)).code).toBe("RATE_LIMITED");
    clock.advance(2000);
    expect((await s.verify(expiring.key)).code).toBe("EXPIRED");
    expect((await s.verify("sk_not_a_key_at_all_1234")).code).toBe("NOT_FOUND");
    await s.service.flushVerifications();

    const rows = await rowsOf(s, "SELECT * FROM key_verifications_v1 ORDER BY time, outcome");
    expect(rows.map((r) => [r.key_id, r.outcome, r.spent_credits])).toEqual(
      expect.arrayContaining([
        [paid.keyId, "VALID", 2],
        [paid.keyId, "USAGE_EXCEEDED", 0],
        [owned.keyId, "INSUFFICIENT_PERMISSIONS", 0],
        [disabled.keyId, "DISABLED", 0],
        [limited.keyId, "VALID", 0],
        [limited.keyId, "RATE_LIMITED", 0],
        [expiring.keyId, "EXPIRED", 0],
      ]),
    );
    expect(rows).toHaveLength(7);
    const first = rows.find((r) => r.key_id === paid.keyId && r.outcome === "VALID")!;
    expect(first).toMatchObject({
      workspace_id: s.workspaceId,
      key_space_id: s.apiId,
      tags: ["path=/a", "m=GET"],
      region: "local",
      identity_id: "",
      external_id: "",
    });
    expect(first.request_id).toMatch(/^req_/);
    expect(first.time).toBe(clock.t - 2000);
    expect(rows.find((r) => r.key_id === owned.keyId)).toMatchObject({ identity_id: identityId, external_id: externalId });
    const text = JSON.stringify(rows);
    for (const k of [paid, owned, disabled, expiring, limited]) expect(text).not.toContain(k.key);
  });

  it("refuses tags as production does (1..512 characters, at most 20)", async () => {
    const s = await started();
    const k = await s.createKey();
    for (const tags of [[""], ["x".repeat(513)], Array.from({ length: 21 }, (_, i) => `t${i}`), [1]]) {
      const res = await s.call("keys.verifyKey", { key: k.key, tags });
      expect(res.status).toBe(400);
      expect(res.body.error.type).toMatch(/invalid_input$/);
    }
  });

  it("writes the buffered events on close: a SQLite file keeps them across a restart", async () => {
    const dir = mkdtempSync(join(tmpdir(), "keyguard-events-"));
    try {
      const file = join(dir, "keys.db");
      const a = await startLocalKeyService({
        dataFile: file,
        logger: silentLogger,
        rootKey: "root_eventsOnClose1_4f1c9e27b8a35d60e2b7c41f9a0d8e36",
      });
      const call = makeCall(a.baseUrl, a.rootKey);
      const key = (await call("keys.createKey", { apiId: a.apiId })).body.data.key as string;
      for (let i = 0; i < 5; i++) await call("keys.verifyKey", { key });
      await a.close(); // no flush before: close writes them
      const b = await startLocalKeyService({
        dataFile: file,
        logger: silentLogger,
        rootKey: "root_eventsOnClose1_4f1c9e27b8a35d60e2b7c41f9a0d8e36",
      });
      try {
        const res = await makeCall(b.baseUrl, b.rootKey)("analytics.getVerifications", {
          query: "SELECT count(*) AS n FROM key_verifications_v1",
        });
        expect(res.body.data).toEqual([{ n: 5 }]);
      } finally {
        await b.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("deletes events older than the retention (verificationRetentionDays) and refuses a query reaching past it", async () => {
    const clock = manualClock();
    const s = await started({ now: clock.now, verificationRetentionDays: 2 });
    const k = await s.createKey();
    await s.verify(k.key);
    await s.service.flushVerifications();
    clock.advance(DAY);
    await s.verify(k.key);
    await s.service.flushVerifications();
    expect(await rowsOf(s, "SELECT count(*) AS n FROM key_verifications_v1")).toEqual([{ n: 2 }]);
    clock.advance(DAY + 60_000);
    await s.verify(k.key);
    await s.service.flushVerifications(); // the sweep runs with a flush once 5 minutes of service time passed
    expect(await rowsOf(s, "SELECT count(*) AS n FROM key_verifications_v1")).toEqual([{ n: 2 }]);
    const res = await s.call("analytics.getVerifications", {
      query: "SELECT count(*) FROM key_verifications_v1 WHERE time >= now() - INTERVAL 3 DAY",
    });
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe("https://unkey.com/docs/api-reference/errors-v2/user/bad_request/query_range_exceeds_retention");
    expect(res.body.error.detail).toContain("2 days");
  });

  it.each([0, 1.5, -1, 3651, "30"])("refuses verificationRetentionDays = %s", async (days) => {
    await expect(createLocalKeyService({ verificationRetentionDays: days as number, logger: silentLogger })).rejects.toThrow(
      LocalServiceConfigError,
    );
    await expect(createLocalKeyService({ verificationRetentionDays: days as number, logger: silentLogger })).rejects.toThrow(
      /verificationRetentionDays/,
    );
  });

  it("keeps events in memory while the store cannot take them, logs once, and writes them when it is back", async () => {
    let down = true;
    const inner = memoryStorage();
    const store = faultyStore(inner, (call) => (down && call === "appendVerifications" ? new Error("disk full") : undefined));
    const errors: string[] = [];
    const logger: Logger = { ...silentLogger, error: (_fields, msg) => void errors.push(msg), warn: () => undefined };
    const s = await started({ storage: store, logger });
    const k = await s.createKey();
    for (let i = 0; i < 3; i++) await s.verify(k.key);
    await s.service.flushVerifications();
    await s.service.flushVerifications();
    expect(errors.filter((m) => m.includes("verification events"))).toHaveLength(1);
    expect(await rowsOf(s, "SELECT count(*) AS n FROM key_verifications_v1")).toEqual([{ n: 0 }]);
    down = false;
    await s.service.flushVerifications();
    expect(await rowsOf(s, "SELECT count(*) AS n FROM key_verifications_v1")).toEqual([{ n: 3 }]);
  });

  it("reports an unavailable store through the service's failure log (one line per kind), and writes the events once it is back", async () => {
    let down = true;
    const message = "the database is unreachable (events test)";
    const store = faultyStore(memoryStorage(), (call) =>
      down && (call === "appendVerifications" || call === "deleteVerificationsBefore") ? new StoreUnavailableError(message) : undefined,
    );
    const calls: Array<[unknown, string]> = [];
    const logger: Logger = { ...silentLogger, error: (fields, msg) => void calls.push([fields, msg]), warn: () => undefined };
    const s = await started({ storage: store, logger });
    const k = await s.createKey();
    for (let i = 0; i < 3; i++) await s.verify(k.key);
    await s.service.flushVerifications();
    await s.service.flushVerifications();
    expect(calls).toHaveLength(1);
    expect(calls[0]![0]).toEqual({ store: "faulty memory", error: message });
    down = false;
    await s.service.flushVerifications();
    expect(await rowsOf(s, "SELECT count(*) AS n FROM key_verifications_v1")).toEqual([{ n: 3 }]);
  });
});

describe("verification events waiting for the store", () => {
  const event = (i: number): VerificationEvent => ({
    time: i,
    workspaceId: "ws_waiting",
    keySpaceId: "api_waiting",
    keyId: `key_${i}`,
    identityId: "",
    externalId: "",
    outcome: "VALID",
    tags: [],
    spentCredits: 0,
    requestId: `req_${i}`,
    region: "local",
  });

  it("a sweep running at close is stopped between two steps and waited for: no store call after close, nothing logged", async () => {
    const inner = memoryStorage();
    await inner.appendVerifications([event(1), event(2)]);
    // A sweep longer than the close: its steps go on until its signal is aborted.
    let started!: () => void;
    const sweeping = new Promise<void>((resolve) => (started = resolve));
    let returned = false;
    let callsAfterClose = 0;
    let closed = false;
    const store = faultyStore(inner, () => {
      if (closed) callsAfterClose++;
      return undefined;
    });
    const slow = overriding(store, {
      async deleteVerificationsBefore(before: number, signal?: AbortSignal) {
        started();
        while (!signal?.aborted) await new Promise((resolve) => setTimeout(resolve, 5));
        const deleted = await store.deleteVerificationsBefore(before, signal);
        returned = true;
        return deleted;
      },
    });
    const logged: string[] = [];
    const logger: Logger = { ...silentLogger, error: (_f, msg) => void logged.push(msg), warn: (_f, msg) => void logged.push(msg) };
    const recorder = new VerificationRecorder(slow, DAY, () => 10 * DAY, logger, new StoreFailureLog(logger, slow.kind));
    recorder.record(event(3));
    void recorder.flush(); // writes the event, then starts the sweep
    await sweeping;
    recorder.record(event(4));
    await recorder.close();
    closed = true;
    expect(returned).toBe(true);
    expect(callsAfterClose).toBe(0);
    expect(logged).toEqual([]);
    // The event noted during the sweep was written; the sweep, aborted, deleted nothing.
    expect(
      await inner.queryVerifications(
        await parseAnalyticsQuery("SELECT count(*) AS n FROM key_verifications_v1", { now: 10 * DAY, retentionMs: 100 * DAY }),
        {
          workspaceId: "ws_waiting",
        },
      ),
    ).toEqual([{ n: 4 }]);
  });

  it("a flush asked while another is in its sweep writes the events noted since, before it resolves", async () => {
    const inner = memoryStorage();
    let started!: () => void;
    const sweeping = new Promise<void>((resolve) => (started = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const slow = overriding(inner, {
      async deleteVerificationsBefore(before: number, signal?: AbortSignal) {
        started();
        await released;
        return inner.deleteVerificationsBefore(before, signal);
      },
    });
    const recorder = new VerificationRecorder(slow, DAY, () => 10 * DAY, silentLogger, new StoreFailureLog(silentLogger, slow.kind));
    running.push(recorder);
    // Within the retention: the sweep keeps them.
    recorder.record(event(9 * DAY + 1));
    const first = recorder.flush(); // writes the event, then starts the sweep (the timer's pass, say)
    await sweeping;
    recorder.record(event(9 * DAY + 2));
    let asked = false;
    const second = recorder.flush().then(() => (asked = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(asked).toBe(false);
    release();
    await Promise.all([first, second]);
    const count = async () =>
      inner.queryVerifications(
        await parseAnalyticsQuery("SELECT count(*) AS n FROM key_verifications_v1", { now: 10 * DAY, retentionMs: 100 * DAY }),
        { workspaceId: "ws_waiting" },
      );
    expect(await count()).toEqual([{ n: 2 }]);
  });

  it("events noted while a batch is written wait for a full batch or the next flush, not a call of their own", async () => {
    // The recorders' flush timers held (they would write the waiting events a second after
    // construction): what the test sees is the passes' own calls.
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const recorders: VerificationRecorder[] = [];
    try {
      const inner = memoryStorage();
      const calls: number[] = [];
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const slow = overriding(inner, {
        async appendVerifications(events: readonly VerificationEvent[]) {
          calls.push(events.length);
          await gate;
          return inner.appendVerifications(events);
        },
      });
      const recorder = new VerificationRecorder(slow, DAY, () => 10 * DAY, silentLogger, new StoreFailureLog(silentLogger, slow.kind));
      recorders.push(recorder);
      // The 1,000th event starts a pass; 10 more arrive while its batch is being written.
      for (let i = 0; i < 1010; i++) recorder.record(event(9 * DAY + i));
      expect(calls).toEqual([1000]);
      release();
      // The pass ends without a call for the 10.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(calls).toEqual([1000]);
      // A full batch gathered during a write is written in the same pass.
      let releaseSecond!: () => void;
      const second = new Promise<void>((resolve) => (releaseSecond = resolve));
      const slower = overriding(inner, {
        async appendVerifications(events: readonly VerificationEvent[]) {
          calls.push(events.length);
          if (calls.length === 2) await second;
          return inner.appendVerifications(events);
        },
      });
      const other = new VerificationRecorder(slower, DAY, () => 10 * DAY, silentLogger, new StoreFailureLog(silentLogger, slower.kind));
      recorders.push(other);
      for (let i = 0; i < 2500; i++) other.record(event(9 * DAY + 2000 + i));
      releaseSecond();
      await other.flush();
      await recorder.flush();
      expect(calls).toEqual([1000, 1000, 1000, 500, 10]);
      const count = async () =>
        inner.queryVerifications(
          await parseAnalyticsQuery("SELECT count(*) AS n FROM key_verifications_v1", { now: 10 * DAY, retentionMs: 100 * DAY }),
          { workspaceId: "ws_waiting" },
        );
      expect(await count()).toEqual([{ n: 3510 }]);
    } finally {
      await Promise.all(recorders.map((r) => r.close()));
      vi.useRealTimers();
    }
  });

  it("past 100,000 waiting drops the oldest (one warning with the count); a batch being written is never dropped or written twice", async () => {
    let down = true;
    const written: number[] = [];
    const store = faultyStore(memoryStorage(), (call, args) => {
      if (call !== "appendVerifications") return undefined;
      if (down) return new Error("disk full");
      for (const e of args[0] as VerificationEvent[]) written.push(e.time);
      return undefined;
    });
    const warnings: Array<[unknown, string]> = [];
    const logger: Logger = { ...silentLogger, warn: (fields, msg) => void warnings.push([fields, msg]) };
    const recorder = new VerificationRecorder(store, DAY, () => 200_000, logger, new StoreFailureLog(logger, store.kind));
    running.push(recorder);
    // 102,500 events while the store is down: the oldest 2,500 go.
    for (let i = 0; i < 102_500; i++) recorder.record(event(i));
    await recorder.flush();
    expect(written).toEqual([]);
    // The store is back: while the first batch is being written, 1,500 more arrive.
    down = false;
    const flushing = recorder.flush();
    for (let i = 102_500; i < 104_000; i++) recorder.record(event(i));
    await flushing;
    await recorder.flush();
    expect(written.length).toBe(104_000 - 2_500);
    expect(written.every((t, i) => t === 2_500 + i)).toBe(true);
    expect(warnings.filter(([, m]) => m.includes("dropped"))).toEqual([
      [{ dropped: 2_500 }, expect.stringContaining("more than 100000 waiting")],
    ]);
  });
});

describe("lastUsedAt", () => {
  it("is absent until a key is verified, then the time of its latest verification in getKey, whoami and listKeys", async () => {
    const clock = manualClock();
    const s = await started({ now: clock.now });
    const k = await s.createKey();
    const other = await s.createKey();
    expect((await s.call("keys.getKey", { keyId: k.keyId })).body.data).not.toHaveProperty("lastUsedAt");
    await s.verify(k.key);
    clock.advance(5000);
    const usedAt = clock.t;
    await s.verify(k.key);
    // Not yet written: events are written every second, or on flush.
    await s.service.flushVerifications();
    expect((await s.call("keys.getKey", { keyId: k.keyId })).body.data.lastUsedAt).toBe(usedAt);
    expect((await s.call("keys.whoami", { key: k.key })).body.data.lastUsedAt).toBe(usedAt);
    const listed = (await s.call("apis.listKeys", { apiId: s.apiId })).body.data as Array<{ keyId: string; lastUsedAt?: number }>;
    expect(listed.find((x) => x.keyId === k.keyId)!.lastUsedAt).toBe(usedAt);
    expect(listed.find((x) => x.keyId === other.keyId)).not.toHaveProperty("lastUsedAt");
  });

  it("is written by the service within about a second without an explicit flush", async () => {
    const s = await started();
    const k = await s.createKey();
    const before = Date.now();
    await s.verify(k.key);
    let lastUsedAt: number | undefined;
    for (let i = 0; i < 50 && lastUsedAt === undefined; i++) {
      await new Promise((r) => setTimeout(r, 100));
      lastUsedAt = (await s.call("keys.getKey", { keyId: k.keyId })).body.data.lastUsedAt;
    }
    expect(lastUsedAt).toBeGreaterThanOrEqual(before);
  });
});
