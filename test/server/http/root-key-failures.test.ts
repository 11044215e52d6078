// rootKeyFailureLimit: after `max` failed root-key authentications from one address, that
// address's requests are answered 429 with Retry-After without looking at their root key (the
// store's root-key reads are counted) until the window ends; on SQLite, and on PostgreSQL + Redis
// with two service instances sharing the count. What counts (unknown and malformed root keys, not
// a missing header), the default, `false`, X-Forwarded-For only with trustProxy, the options.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import {
  LocalServiceConfigError,
  postgresStorage,
  sqliteStorage,
  startLocalKeyService,
  type LocalKeyServiceOptions,
  type RunningLocalKeyService,
  type Storage,
} from "keyguard/server";
import { overriding } from "../../support/storage-wrapper";
import { manualClock } from "../helpers";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";

const strongRootKey = () => `root_${randomBytes(24).toString("hex")}`;
const wrongRootKey = () => `root_${randomBytes(24).toString("hex")}`;

/** The store with its root-key reads counted. */
function countingRootKeyReads(store: Storage): { storage: Storage; reads: { count: number } } {
  const reads = { count: 0 };
  const inner = store.direct;
  const direct = new Proxy(inner, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name);
      if (typeof value !== "function") return value;
      if (name !== "rootKeyByHash") return (value as (...a: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        reads.count++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { storage: overriding(store, { direct }), reads };
}

interface Service {
  svc: RunningLocalKeyService;
  reads: { count: number };
  /** keys.verifyKey with this root key (null: no Authorization header), from `forwardedFor` if given. */
  ask(rootKey: string | null, forwardedFor?: string): Promise<{ status: number; headers: Headers; body: { error?: { type?: string } } }>;
}

function serviceOf(svc: RunningLocalKeyService, reads: { count: number }): Service {
  return {
    svc,
    reads,
    async ask(rootKey, forwardedFor) {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (rootKey !== null) headers.authorization = `Bearer ${rootKey}`;
      if (forwardedFor !== undefined) headers["x-forwarded-for"] = forwardedFor;
      const res = await fetch(`${svc.baseUrl}/v2/keys.verifyKey`, {
        method: "POST",
        headers,
        body: JSON.stringify({ key: "sk_nothing_here_1234567890" }),
      });
      return { status: res.status, headers: res.headers, body: (await res.json()) as { error?: { type?: string } } };
    },
  };
}

describe("rootKeyFailureLimit on SQLite", () => {
  const dirs: string[] = [];
  const running: RunningLocalKeyService[] = [];
  async function sqliteService(options: LocalKeyServiceOptions = {}): Promise<Service> {
    const dir = mkdtempSync(join(tmpdir(), "keyguard-root-failures-"));
    dirs.push(dir);
    const { storage, reads } = countingRootKeyReads(await sqliteStorage(join(dir, "keys.db")));
    const svc = await startLocalKeyService({ storage, logger: silentLogger, ...options });
    running.push(svc);
    return serviceOf(svc, reads);
  }
  afterAll(async () => {
    for (const svc of running) await svc.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  /** keys.verifyKey with a root key in a header that is not `Bearer <key>`. */
  const malformed = (s: Service) =>
    fetch(`${s.svc.baseUrl}/v2/keys.verifyKey`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Basic abc" },
      body: JSON.stringify({ key: "sk_nothing_here_1234567890" }),
    });

  it("after max failures the address gets 429 with Retry-After, without a root-key lookup, even with a good root key", async () => {
    const s = await sqliteService({ rootKeyFailureLimit: { max: 3, windowMs: 60_000 } });
    for (let i = 0; i < 3; i++) expect((await s.ask(wrongRootKey())).status).toBe(401);
    const before = s.reads.count;
    const refused = await s.ask(wrongRootKey());
    expect(refused.status).toBe(429);
    expect(refused.body.error?.type).toMatch(/too_many_requests\/authentication_failures$/);
    const seconds = Number(refused.headers.get("retry-after"));
    expect(seconds).toBeGreaterThanOrEqual(1);
    expect(seconds).toBeLessThanOrEqual(60);
    // The whole address waits: a good root key is not looked at either.
    expect((await s.ask(s.svc.rootKey)).status).toBe(429);
    expect(s.reads.count).toBe(before);
    // The answer never repeats the root key sent.
    expect(JSON.stringify(refused.body)).not.toMatch(/root_[0-9a-f]{48}/);
  });

  it("malformed Authorization headers count; requests without one do not", async () => {
    const s = await sqliteService({ rootKeyFailureLimit: { max: 2, windowMs: 60_000 } });
    for (let i = 0; i < 5; i++) expect((await s.ask(null)).status).toBe(400);
    expect((await s.ask(s.svc.rootKey)).status).toBe(200);
    expect((await malformed(s)).status).toBe(400);
    expect((await malformed(s)).status).toBe(400);
    expect((await malformed(s)).status).toBe(429);
  });

  it("once the window has passed, root keys are checked again", async () => {
    // The service's clock, moved by the test: a busy machine cannot let the window pass between two requests.
    const clock = manualClock(Date.UTC(2030, 0, 1, 0, 0, 10));
    const s = await sqliteService({ rootKeyFailureLimit: { max: 1, windowMs: 60_000 }, now: clock.now });
    expect((await s.ask(wrongRootKey())).status).toBe(401);
    expect((await s.ask(s.svc.rootKey)).status).toBe(429);
    clock.advance(30_000);
    expect((await s.ask(s.svc.rootKey)).status).toBe(429);
    clock.advance(60_000);
    expect((await s.ask(s.svc.rootKey)).status).toBe(200);
  });

  it("is on by default at 100 failures per window; false turns it off", async () => {
    // A clock half-way through a minute: the 100 failures all fall in one window.
    const on = await sqliteService({ now: () => Date.UTC(2030, 0, 1, 0, 0, 30) });
    for (let i = 0; i < 100; i++) expect((await on.ask(wrongRootKey())).status).toBe(401);
    expect((await on.ask(wrongRootKey())).status).toBe(429);
    const off = await sqliteService({ rootKeyFailureLimit: false });
    for (let i = 0; i < 120; i++) expect((await off.ask(wrongRootKey())).status).toBe(401);
  });

  it("X-Forwarded-For names the address only with trustProxy", async () => {
    const ignored = await sqliteService({ rootKeyFailureLimit: { max: 2, windowMs: 60_000 } });
    for (let i = 0; i < 2; i++) expect((await ignored.ask(wrongRootKey(), `203.0.113.${i}`)).status).toBe(401);
    expect((await ignored.ask(wrongRootKey(), "203.0.113.50")).status).toBe(429);

    const trusted = await sqliteService({ rootKeyFailureLimit: { max: 2, windowMs: 60_000 }, trustProxy: true });
    for (let i = 0; i < 2; i++) expect((await trusted.ask(wrongRootKey(), "203.0.113.7")).status).toBe(401);
    expect((await trusted.ask(wrongRootKey(), "203.0.113.7")).status).toBe(429);
    expect((await trusted.ask(trusted.svc.rootKey, "203.0.113.8")).status).toBe(200);
    // Addresses the caller writes before the proxy's entry change nothing: still that address.
    expect((await trusted.ask(wrongRootKey(), "198.51.100.1, 203.0.113.7")).status).toBe(429);
    // Nor can a caller lock out another address by naming it first.
    expect((await trusted.ask(trusted.svc.rootKey, "203.0.113.7, 203.0.113.9")).status).toBe(200);
  });

  it("refuses bad settings", async () => {
    await expect(startLocalKeyService({ rootKeyFailureLimit: { max: 0 }, logger: silentLogger })).rejects.toThrow(LocalServiceConfigError);
    await expect(startLocalKeyService({ rootKeyFailureLimit: { windowMs: 10 }, logger: silentLogger })).rejects.toThrow(
      /rootKeyFailureLimit\.windowMs/,
    );
  });
});

const skip = await postgresRedisSkipReason("rootKeyFailureLimit on 2 service instances on one PostgreSQL + Redis");

describe.skipIf(skip !== undefined)("rootKeyFailureLimit on 2 service instances on one PostgreSQL + Redis", () => {
  const ns = isolatedNamespace();
  const rootKey = strongRootKey();
  let services: Service[] = [];

  beforeAll(async () => {
    services = await Promise.all(
      [0, 1].map(async () => {
        const store = await postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, redisPrefix: ns.redisPrefix });
        const { storage, reads } = countingRootKeyReads(store);
        const svc = await startLocalKeyService({
          storage,
          rootKey,
          logger: silentLogger,
          rootKeyFailureLimit: { max: 4, windowMs: 60_000 },
        });
        return serviceOf({ ...svc, close: () => svc.close().then(() => store.close()) }, reads);
      }),
    );
  });
  afterAll(async () => {
    for (const s of services) await s.svc.close();
    await ns.drop();
  });

  it("failures spread over both instances trip the limit for both", async () => {
    const [a, b] = services as [Service, Service];
    for (const s of [a, b, a, b]) expect((await s.ask(wrongRootKey())).status).toBe(401);
    // Each instance saw 2 of the 4: the count is the fleet's.
    expect((await b.ask(wrongRootKey())).status).toBe(429);
    expect((await a.ask(wrongRootKey())).status).toBe(429);
    const before = [a.reads.count, b.reads.count];
    expect((await a.ask(rootKey)).status).toBe(429);
    expect((await b.ask(rootKey)).status).toBe(429);
    expect([a.reads.count, b.reads.count]).toEqual(before);
  });
});
