// What webhook delivery guarantees, counted with a real receiver process: `keyguard serve` killed
// with SIGKILL while changes are being made loses no event of an acknowledged change (delivered
// after the restart); a receiver down for a minute gets every message once it is back; three
// instances on one PostgreSQL deliver each message exactly once; two instances scanning for keys
// about to expire send each key.expiring notice once.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import { startLocalKeyService, type LocalKeyServiceOptions, type RunningLocalKeyService } from "keyguard/server";
import { exited, killChildren, serve, type Served } from "../../cli/cli-process";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, listenToRecords, postgresRedisSkipReason } from "../../support/postgres-redis";
import { receiver, stopReceivers, type Received } from "../../support/webhook-receiver-process";
import { makeCall, manualClock, start, type Call } from "../helpers";

const dir = mkdtempSync(join(tmpdir(), "keyguard-webhooks-"));
const rootKey = `root_${randomBytes(18).toString("hex")}`;

/** `n` instances of the service on one PostgreSQL schema (and the test Redis), with this file's root key. */
const onePostgres = (n: number, schema: string, extra: Partial<LocalKeyServiceOptions> = {}): Promise<RunningLocalKeyService[]> =>
  Promise.all(
    Array.from({ length: n }, () =>
      startLocalKeyService({
        postgres: POSTGRES_URL,
        redis: REDIS_URL,
        postgresSchema: schema,
        rootKey,
        webhooksAllowPrivate: true,
        logger: silentLogger,
        ...extra,
      }),
    ),
  );
const rootKeyFile = join(dir, "root-key");
writeFileSync(rootKeyFile, `${rootKey}\n`, { mode: 0o600 });
afterEach(() => {
  killChildren();
  stopReceivers();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The key ids of the key.created events received (each once, however often it was received). */
const createdKeys = (received: readonly Received[]) =>
  new Set(received.map((r) => (JSON.parse(r.body) as { type: string; data: { keyId: string } }).data.keyId));

describe("keyguard serve killed with SIGKILL while changes are made", () => {
  it("delivers the event of every acknowledged change once it runs again", { timeout: 120_000 }, async () => {
    const r = await receiver();
    const file = join(dir, "crash.db");
    // The shortest lease, so that the test waits 15 s for the messages the dead process had taken, not 60.
    const args = [
      "--port",
      "0",
      "--data",
      file,
      "--root-key-file",
      rootKeyFile,
      "--webhooks-allow-private",
      "--webhook-lease-seconds",
      "15",
    ];
    const first: Served = await serve(args);
    const call = makeCall(first.baseUrl, rootKey);
    expect((await call("webhooks.createEndpoint", { url: r.url, events: ["key.created"] })).status).toBe(200);
    const acked: string[] = [];
    const worker = async () => {
      for (;;) {
        try {
          const res = await call("keys.createKey", { apiId: first.apiId });
          if (res.status === 200) acked.push(res.body.data.keyId as string);
        } catch {
          return; // killed under this request: not acknowledged
        }
      }
    };
    const workers = Promise.all(Array.from({ length: 6 }, worker));
    while (acked.length < 60) await new Promise((resolve) => setTimeout(resolve, 20));
    first.child.kill("SIGKILL");
    await exited(first.child);
    await workers;
    const beforeRestart = createdKeys(r.received).size;

    await serve(args);
    // A message taken for delivery when the process died is taken again once its lease (15 s) is over.
    await expect.poll(() => acked.filter((k) => !createdKeys(r.received).has(k)), { timeout: 60_000, interval: 200 }).toEqual([]);
    console.log(
      `kill -9 under load: ${acked.length} createKey acknowledged, ${beforeRestart} of their events received before the kill, ` +
        `all ${acked.length} after the restart; ${r.received.length} requests for ${createdKeys(r.received).size} events ` +
        `(${r.received.length - new Set(r.received.map((x) => x.id)).size} repeated)`,
    );
  });
});

describe("a receiver down for a minute", () => {
  it("gets every message once it is back: retried with backoff meanwhile, none failed, none lost", { timeout: 60_000 }, async () => {
    // The service's clock is driven by the test, so the minute passes for the retry schedule without
    // the test waiting a minute; the receiver really is gone (connections refused) and back.
    const clock = manualClock();
    const first = await receiver();
    const s = await start({ now: clock.now, webhooksAllowPrivate: true });
    try {
      expect((await s.call("webhooks.createEndpoint", { url: first.url, events: ["key.created"] })).status).toBe(200);
      await first.kill();
      const created: string[] = [];
      for (let i = 0; i < 20; i++) created.push((await s.createKey()).keyId);
      const listed = async () => (await s.call("webhooks.listDeliveries", { limit: 100 })).body.data as Array<Record<string, unknown>>;
      await expect.poll(async () => (await listed()).filter((d) => d.attempts === 1).length, { timeout: 10_000 }).toBe(20);
      // A minute of refused attempts: each message is tried again as its backoff (5, 10, 20, 40 s) comes due.
      for (let elapsed = 0; elapsed < 60_000; elapsed += 5_000) {
        clock.advance(5_000);
        await new Promise((resolve) => setTimeout(resolve, 600));
      }
      const during = await listed();
      expect(during.every((d) => d.status === "pending" && (d.attempts as number) >= 4)).toBe(true);
      expect(during.every((d) => d.lastStatus === 0)).toBe(true);

      const back = await receiver({ RECEIVER_PORT: String(first.port) });
      for (let i = 0; i < 40 && createdKeys(back.received).size < created.length; i++) {
        clock.advance(10_000);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect([...createdKeys(back.received)].sort()).toEqual([...created].sort());
      expect(back.received).toHaveLength(created.length);
      expect(first.received).toHaveLength(0);
      await expect.poll(async () => (await listed()).every((d) => d.status === "delivered"), { timeout: 10_000 }).toBe(true);
      const attempts = (await listed()).map((d) => d.attempts as number);
      console.log(
        `receiver down for a minute (service clock): ${created.length} messages, all delivered once it was back, ` +
          `after ${Math.min(...attempts)}–${Math.max(...attempts)} attempts each`,
      );
    } finally {
      await s.close();
    }
  });
});

const skip = await postgresRedisSkipReason("webhooks from 3 service instances on one PostgreSQL + Redis");

describe.skipIf(skip !== undefined)("3 service instances on one PostgreSQL + Redis", () => {
  it("deliver each message exactly once, whichever instance made the change", { timeout: 45_000 }, async () => {
    const ns = isolatedNamespace();
    const r = await receiver();
    const instances = await onePostgres(3, ns.schema);
    try {
      const calls: Call[] = instances.map((s) => makeCall(s.baseUrl, rootKey));
      // Each instance has read (and keeps) the workspace's endpoints: none yet.
      for (const call of calls) expect((await call("keys.createKey", { apiId: instances[0]!.apiId })).status).toBe(200);
      const records = await listenToRecords(ns.redisPrefix);
      const heard = records.nextMessage();
      expect((await calls[0]!("webhooks.createEndpoint", { url: r.url, events: ["key.created"] })).status).toBe(200);
      // The endpoint's announcement heard here (the instances, in this process, got it at the same
      // moment on their own connections), and a round trip more: every instance has handled it and
      // forgotten the endpoints it kept.
      await heard;
      records.close();
      expect((await fetch(`${instances[1]!.baseUrl}/v2/liveness`)).status).toBe(200);
      const first = await calls[1]!("keys.createKey", { apiId: instances[0]!.apiId });
      expect(first.status).toBe(200);
      const created: string[] = [first.body.data.keyId as string];
      await Promise.all(
        [0, 1, 2, 3, 4, 5].map(async (w) => {
          for (let i = 0; i < 15; i++) {
            const res = await calls[(w + i) % 3]!("keys.createKey", { apiId: instances[0]!.apiId });
            expect(res.status).toBe(200);
            created.push(res.body.data.keyId as string);
          }
        }),
      );
      await expect.poll(() => createdKeys(r.received).size, { timeout: 30_000, interval: 200 }).toBe(created.length);
      // Every instance polls the outbox too: a while longer, and still one request per message.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const ids = r.received.map((x) => x.id);
      expect(new Set(ids).size).toBe(created.length);
      expect(ids).toHaveLength(created.length);
      expect([...createdKeys(r.received)].sort()).toEqual([...created].sort());
      console.log(
        `3 instances on PostgreSQL: ${created.length} changes, ${ids.length} deliveries, ${ids.length - new Set(ids).size} duplicates`,
      );
    } finally {
      await Promise.all(instances.map((s) => s.close()));
      await ns.drop();
    }
  });
});

describe.skipIf(skip !== undefined)("2 service instances on one PostgreSQL + Redis scanning for expiring keys", () => {
  it("send each key's key.expiring notice once", { timeout: 45_000 }, async () => {
    const ns = isolatedNamespace();
    const r = await receiver();
    let now = Date.UTC(2025, 0, 15, 12, 0, 0);
    const instances = await onePostgres(2, ns.schema, { now: () => now });
    try {
      const calls: Call[] = instances.map((s) => makeCall(s.baseUrl, rootKey));
      expect((await calls[0]!("webhooks.createEndpoint", { url: r.url, events: ["key.expiring"] })).status).toBe(200);
      const expiring: string[] = [];
      for (let i = 0; i < 30; i++) {
        const res = await calls[i % 2]!("keys.createKey", { apiId: instances[0]!.apiId, expires: now + 3_600_000 + i });
        expect(res.status).toBe(200);
        expiring.push(res.body.data.keyId as string);
      }
      // Both instances scan at their next pass (a minute of service time later), at about the same
      // time. The clock moves once: moved again while a delivery is out, it would let the message's
      // lease (a minute of service time) run out, and the other instance send it too.
      now += 60_000;
      await expect.poll(() => r.received.length, { timeout: 30_000, interval: 200 }).toBe(expiring.length);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const keyIds = r.received.map((x) => (JSON.parse(x.body) as { data: { keyId: string } }).data.keyId);
      expect(keyIds).toHaveLength(expiring.length);
      expect([...keyIds].sort()).toEqual([...expiring].sort());
    } finally {
      await Promise.all(instances.map((s) => s.close()));
      await ns.drop();
    }
  });
});
