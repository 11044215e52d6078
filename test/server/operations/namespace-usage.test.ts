// keyguard's own ratelimit.getNamespaceUsage: the outcomes of ratelimit.limit counted per namespace
// and hour, written with the verification events (and on close), read back as a zero-filled series.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalKeyService } from "../../../src/server";
import { memoryStorage } from "../../../src/server/storage/memory/store";
import { silentLogger } from "keyguard";
import { storeUnderTest } from "../../support/store-under-test";
import { makeCall, manualClock, start, type Started } from "../helpers";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const clock = manualClock(Date.UTC(2025, 0, 15, 12, 30, 0));

let s: Started;
beforeAll(async () => {
  s = await start({ now: clock.now });
});
afterAll(() => s.close());

const limit = (namespace: string, identifier: string) => s.call("ratelimit.limit", { namespace, identifier, limit: 2, duration: 60_000 });

describe("ratelimit.getNamespaceUsage", () => {
  it("counts passed and limited calls per hour, every hour of the range present, by name or by id", async () => {
    // The hour it starts in (the tests of this file share the clock, in any order): two pass, one
    // refused; an hour later (a new window): one passes.
    const FIRST = Math.floor(clock.t / HOUR) * HOUR;
    for (let i = 0; i < 3; i++) expect((await limit("usage.hours", "u1")).body.data.success).toBe(i < 2);
    clock.advance(HOUR);
    expect((await limit("usage.hours", "u1")).body.data.success).toBe(true);
    // Another namespace's calls are not this one's.
    await limit("usage.other", "u1");
    await s.service.flushVerifications();

    const res = await s.call("ratelimit.getNamespaceUsage", { namespace: "usage.hours", start: FIRST - HOUR, end: FIRST + 3 * HOUR });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      { time: FIRST - HOUR, passed: 0, limited: 0, total: 0 },
      { time: FIRST, passed: 2, limited: 1, total: 3 },
      { time: FIRST + HOUR, passed: 1, limited: 0, total: 1 },
      { time: FIRST + 2 * HOUR, passed: 0, limited: 0, total: 0 },
    ]);
    // start taken back to its hour, end forward to the end of its hour; the namespace by id.
    const { namespaceId } = (await s.call("ratelimit.listNamespaces", {})).body.data.find(
      (n: { name: string }) => n.name === "usage.hours",
    );
    const byId = await s.call("ratelimit.getNamespaceUsage", { namespace: namespaceId, start: FIRST + 59 * 60_000, end: FIRST + HOUR + 1 });
    expect(byId.body.data).toEqual([
      { time: FIRST, passed: 2, limited: 1, total: 3 },
      { time: FIRST + HOUR, passed: 1, limited: 0, total: 1 },
    ]);
  });

  it("sums the hours of a day (UTC) with granularity day", async () => {
    const dayStart = Date.UTC(2025, 0, 15);
    for (let i = 0; i < 3; i++) await limit("usage.days", `d${i}`);
    clock.advance(5 * HOUR);
    for (let i = 0; i < 3; i++) await limit("usage.days", "same");
    await s.service.flushVerifications();
    const res = await s.call("ratelimit.getNamespaceUsage", {
      namespace: "usage.days",
      start: dayStart - DAY,
      end: dayStart + DAY,
      granularity: "day",
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      { time: dayStart - DAY, passed: 0, limited: 0, total: 0 },
      { time: dayStart, passed: 5, limited: 1, total: 6 },
    ]);
  });

  it("refuses a range that ends before it starts or holds too many points, and a namespace that does not exist", async () => {
    await limit("usage.checks", "u");
    const HOUR_START = Math.floor(clock.t / HOUR) * HOUR;
    const backwards = await s.call("ratelimit.getNamespaceUsage", { namespace: "usage.checks", start: HOUR_START, end: HOUR_START });
    expect(backwards.status).toBe(400);
    expect(backwards.body.error.errors).toEqual([expect.objectContaining({ location: "body.end", message: "must be after start" })]);
    const long = await s.call("ratelimit.getNamespaceUsage", { namespace: "usage.checks", start: HOUR_START, end: HOUR_START + 32 * DAY });
    expect(long.status).toBe(400);
    expect(long.body.error.errors[0]).toMatchObject({ location: "body.end", message: "is more than 744 hours after start" });
    const byDay = await s.call("ratelimit.getNamespaceUsage", {
      namespace: "usage.checks",
      start: HOUR_START,
      end: HOUR_START + 32 * DAY,
      granularity: "day",
    });
    expect(byDay.status).toBe(200);
    expect(byDay.body.data).toHaveLength(33);
    expect(
      (
        await s.call("ratelimit.getNamespaceUsage", {
          namespace: "usage.checks",
          start: HOUR_START,
          end: HOUR_START + 367 * DAY,
          granularity: "day",
        })
      ).status,
    ).toBe(400);
    const granularity = await s.call("ratelimit.getNamespaceUsage", { namespace: "usage.checks", start: 0, end: 1, granularity: "minute" });
    expect(granularity.status).toBe(400);
    const missing = await s.call("ratelimit.getNamespaceUsage", {
      namespace: "usage.never-used",
      start: HOUR_START,
      end: HOUR_START + HOUR,
    });
    expect(missing.status).toBe(404);
    expect(JSON.stringify(missing.body)).not.toContain("never-used");
  });

  it("answers a root key holding ratelimit.<namespaceId>.read_override for that namespace only", async () => {
    await limit("usage.mine", "u");
    await limit("usage.theirs", "u");
    const list = (await s.call("ratelimit.listNamespaces", { limit: 100 })).body.data as Array<{ name: string; namespaceId: string }>;
    const mine = list.find((n) => n.name === "usage.mine")!;
    const narrow = (await s.service.createRootKey({ permissions: [`ratelimit.${mine.namespaceId}.read_override`] })).rootKey;
    const hour = Math.floor(clock.t / HOUR) * HOUR;
    const body = { start: hour, end: hour + HOUR };
    expect((await s.call("ratelimit.getNamespaceUsage", { namespace: "usage.mine", ...body }, narrow)).status).toBe(200);
    const refused = await s.call("ratelimit.getNamespaceUsage", { namespace: "usage.theirs", ...body }, narrow);
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.body)).not.toContain(narrow);
  });
});

describe("ratelimit.limit counts on close", () => {
  it("writes the counts noted before a graceful close to the store, with no flush asked for", async () => {
    const store = (await storeUnderTest()) ?? memoryStorage();
    try {
      const now = Date.UTC(2025, 2, 1, 8, 15);
      const service = await startLocalKeyService({ storage: store, logger: silentLogger, now: () => now });
      const call = makeCall(service.baseUrl, service.rootKey);
      for (let i = 0; i < 4; i++) await call("ratelimit.limit", { namespace: "usage.close", identifier: "u", limit: 3, duration: 60_000 });
      const { namespaceId } = (await call("ratelimit.listNamespaces", {})).body.data[0];
      await service.close();
      const hour = Date.UTC(2025, 2, 1, 8);
      const rows = await store.ratelimitCounts({
        workspaceId: service.workspaceId,
        namespaceIds: [namespaceId],
        from: hour,
        until: hour + HOUR,
      });
      expect(rows).toEqual([{ workspaceId: service.workspaceId, namespaceId, hour, passed: 3, limited: 1 }]);
    } finally {
      await store.close();
    }
  });
});
