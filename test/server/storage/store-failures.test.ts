// A store that fails: 503 service_unavailable with Retry-After (never a 500, never a crash), one
// throttled log line per kind of failure, recovery once the store is back, and a write that fails
// half-way keeps nothing. Faults are injected with a Store wrapper (see test/support/faulty-store).
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { StoreUnavailableError, memoryStorage } from "keyguard/server";
import { StoreFailureLog } from "../../../src/server/storage/store-failures";
import { faultyStore, type FaultPlan } from "../../support/faulty-store";
import { storeUnderTest } from "../../support/store-under-test";
import { start, type Started } from "../helpers";

let s: Started;
let plan: FaultPlan = () => undefined;
const logger = { warn: vi.fn(), error: vi.fn() };
let inner: Awaited<ReturnType<typeof storeUnderTest>>;
beforeAll(async () => {
  inner = (await storeUnderTest()) ?? memoryStorage();
  s = await start({ store: faultyStore(inner, (call, args) => plan(call, args)), logger });
});
afterAll(async () => {
  await s.close();
  await inner!.close();
});

const down = (): Error => new StoreUnavailableError("the database is unreachable (test)");

describe("a store that is down", () => {
  it("answers 503 service_unavailable with Retry-After: 1 to every operation that needs it, logging one line", async () => {
    const { key, keyId } = await s.createKey({ credits: { remaining: 5 } });
    logger.error.mockClear();
    // A message of its own: the log is throttled per message, and the tests may run in any order.
    const message = "the database is unreachable (only this test)";
    plan = () => new StoreUnavailableError(message);
    try {
      const calls: Array<[string, Record<string, unknown>]> = [
        ["keys.verifyKey", { key }],
        ["keys.createKey", { apiId: s.apiId }],
        ["keys.getKey", { keyId }],
        ["keys.updateCredits", { keyId, operation: "set", value: 1 }],
        ["apis.listKeys", { apiId: s.apiId }],
        ["ratelimit.limit", { namespace: "n", identifier: "i", limit: 1, duration: 60_000 }],
        ["permissions.createPermission", { name: "p.read", slug: "p.read" }],
      ];
      for (const [op, body] of calls) {
        const res = await s.call(op, body);
        expect(res.status, op).toBe(503);
        expect(res.headers.get("retry-after"), op).toBe("1");
        expect(res.body.error, op).toMatchObject({ status: 503, title: "Service Unavailable" });
        expect(res.body.error.type, op).toMatch(/\/application\/service_unavailable$/);
      }
      // Liveness does not touch the store.
      expect((await fetch(`${s.baseUrl}/v2/liveness`)).status).toBe(200);
      // One line for one kind of failure, however many requests it failed; no secret in it.
      expect(logger.error).toHaveBeenCalledOnce();
      expect(logger.error.mock.calls[0]![0]).toEqual({ store: `faulty ${inner!.kind}`, error: message });
      const logged = JSON.stringify(logger.error.mock.calls);
      for (const secret of [key, s.rootKey]) expect(logged).not.toContain(secret);
    } finally {
      plan = () => undefined;
    }
    // Back by itself: nothing was charged while it was down.
    expect(await s.verify(key)).toMatchObject({ code: "VALID", credits: 4 });
  });

  it("a store that fails only for some calls (e.g. the credit charge) still gives a 503, not a 500", async () => {
    const { key } = await s.createKey({ credits: { remaining: 5 } });
    plan = (call) => (call === "spendCredits" ? down() : undefined);
    try {
      const res = await s.call("keys.verifyKey", { key });
      expect(res.status).toBe(503);
    } finally {
      plan = () => undefined;
    }
    expect(await s.verify(key)).toMatchObject({ code: "VALID", credits: 4 });
  });
});

describe("a write that fails half-way keeps nothing", () => {
  it.each([
    { name: "store unavailable", error: down, status: 503 },
    { name: "unexpected store error", error: () => new Error("disk controller on fire (test)"), status: 500 },
  ])("$name → $status; the permission and identity created before the failure are gone", async ({ error, status }) => {
    const slug = `fresh.perm.${status}`;
    const externalId = `fresh-user-${status}`;
    // createKey first creates the missing permission and identity, then writes the key: fail that.
    plan = (call, args) => (call === "put" && args[0] === "keys" ? error() : undefined);
    try {
      const res = await s.call("keys.createKey", { apiId: s.apiId, permissions: [slug], externalId });
      expect(res.status).toBe(status);
      expect(JSON.stringify(res.body)).not.toContain("(test)");
    } finally {
      plan = () => undefined;
    }
    expect((await s.call("permissions.getPermission", { permission: slug })).status).toBe(404);
    expect((await s.call("identities.getIdentity", { identity: externalId })).status).toBe(404);
    const listed = await s.call("permissions.listPermissions", { search: slug });
    expect(listed.body.data).toEqual([]);
  });
});

describe("StoreFailureLog", () => {
  it("logs a kind of failure at most every 10 s, then says how many it did not log", () => {
    const log = { warn: vi.fn(), error: vi.fn() };
    let t = 0;
    const failures = new StoreFailureLog(log, "postgres", () => t);
    const a = new StoreUnavailableError("PostgreSQL is unreachable");
    failures.report(a);
    t = 4000;
    failures.report(a);
    failures.report(a);
    // Another kind is logged at once.
    failures.report(new StoreUnavailableError("Redis is unreachable"));
    expect(log.error).toHaveBeenCalledTimes(2);
    t = 10_000;
    failures.report(a);
    expect(log.error).toHaveBeenCalledTimes(3);
    expect(log.error.mock.calls[2]![0]).toEqual({ store: "postgres", error: "PostgreSQL is unreachable", failuresSinceLastLine: 2 });
    expect(log.error.mock.calls[2]![1]).toMatch(/store is unavailable.*503/);
  });
});
