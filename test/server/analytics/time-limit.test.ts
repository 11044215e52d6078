// Analytics queries never hold the service: on SQLite they run in a worker thread (the store's
// other calls go on meanwhile), and on both stores a query past its time limit is answered
// 422 query_execution_timeout, after which the service answers queries again.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import { startLocalKeyService, type RunningLocalKeyService, type Storage } from "keyguard/server";
import { AnalyticsTimeoutError } from "../../../src/server/analytics/time-limit";
import { parseAnalyticsQuery } from "../../../src/server/analytics/query-check";
import { postgresStorage } from "../../../src/server/storage/postgres/store";
import { quoteIdent } from "../../../src/server/storage/postgres/schema";
import { AnalyticsWorker } from "../../../src/server/storage/sqlite/analytics-worker";
import { openConnection } from "../../../src/server/storage/sqlite/driver";
import { sqliteStorage } from "../../../src/server/storage/sqlite/store";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";
import { makeCall } from "../helpers";

const COPIES = 300_000;
const COLUMNS = "time, workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, spent_credits";
/** A query the rollups cannot answer: it reads every event of the workspace. */
const RAW_QUERY = "SELECT key_id, count(*) AS n FROM key_verifications_v1 WHERE request_id != 'none' GROUP BY key_id";
const skipPg = await postgresRedisSkipReason("analytics time limits on PostgreSQL");

interface Backend {
  name: string;
  skip?: string;
  /** A store whose analytics queries may take `limitMs`. */
  open(limitMs: number): Promise<{ store: Storage; copyEvents(n: number): Promise<void>; drop(): Promise<void> }>;
}

const BACKENDS: Backend[] = [
  {
    name: "sqlite",
    open: async (limitMs) => {
      const dir = mkdtempSync(join(tmpdir(), "keyguard-time-limit-"));
      const file = join(dir, "keys.db");
      const store = await sqliteStorage(file, { analyticsTimeoutMs: limitMs });
      return {
        store,
        // Another connection copies the events the service wrote (the store's lock is for other keyguard processes).
        copyEvents: async (n) => {
          const db = await openConnection(file);
          db.exec("PRAGMA busy_timeout = 5000");
          db.exec(
            `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${n}) ` +
              `INSERT INTO key_verifications (${COLUMNS}, request_id, region) SELECT ${COLUMNS}, 'copy_' || x, region FROM key_verifications, c`,
          );
          db.close();
        },
        drop: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
  {
    name: "postgres",
    ...(skipPg !== undefined && { skip: skipPg }),
    open: async (limitMs) => {
      const ns = isolatedNamespace();
      const store = await postgresStorage({
        postgres: POSTGRES_URL,
        redis: REDIS_URL,
        schema: ns.schema,
        redisPrefix: ns.redisPrefix,
        analyticsTimeoutMs: limitMs,
      });
      const table = `${quoteIdent(ns.schema)}.key_verifications`;
      return {
        store,
        copyEvents: async (n) => {
          const client = new pg.Client({ connectionString: POSTGRES_URL });
          await client.connect();
          await client.query(
            `INSERT INTO ${table} (${COLUMNS}, request_id, region) SELECT ${COLUMNS}, 'copy_' || x, region FROM ${table}, generate_series(1, ${n}) AS x`,
          );
          await client.end();
        },
        drop: () => ns.drop(),
      };
    },
  },
];

describe.each(BACKENDS)("an analytics query past its time limit on $name", (backend) => {
  let local: RunningLocalKeyService;
  let opened: Awaited<ReturnType<Backend["open"]>>;

  beforeAll(async () => {
    if (backend.skip) return;
    // 1 ms: no query over 300,000 events finishes within it.
    opened = await backend.open(1);
    local = await startLocalKeyService({ storage: opened.store, logger: silentLogger });
    const call = makeCall(local.baseUrl, local.rootKey);
    const { key } = (await call("keys.createKey", { apiId: local.apiId })).body.data as { key: string };
    await call("keys.verifyKey", { key });
    await local.service.flushVerifications();
    await opened.copyEvents(COPIES);
  }, 120_000);
  afterAll(async () => {
    await local?.close();
    await opened?.store.close();
    await opened?.drop();
  });

  it.skipIf(backend.skip)("is answered 422 query_execution_timeout, as production answers it", async () => {
    const call = makeCall(local.baseUrl, local.rootKey);
    const res = await call("analytics.getVerifications", { query: RAW_QUERY });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body.error.type).toBe("https://unkey.com/docs/api-reference/errors-v2/user/unprocessable_entity/query_execution_timeout");
    expect(res.body.error.detail).toMatch(/Query execution time limit exceeded \(1 ms\)/);
    // The service goes on answering.
    expect((await call("keys.createKey", { apiId: local.apiId })).status).toBe(200);
  });
});

describe("the SQLite store's analytics worker", () => {
  const dir = mkdtempSync(join(tmpdir(), "keyguard-analytics-worker-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("runs a long query while the store's own calls go on, and answers the same rows", async () => {
    const file = join(dir, "busy.db");
    const store = await sqliteStorage(file);
    try {
      const event = (i: number) => ({
        time: 1_000_000 + i,
        workspaceId: "ws_1",
        keySpaceId: "api_1",
        keyId: `key_${i % 3}`,
        identityId: "",
        externalId: "",
        outcome: "VALID",
        tags: [],
        spentCredits: 0,
        requestId: `req_${i}`,
        region: "local",
      });
      await store.appendVerifications(Array.from({ length: 1000 }, (_, i) => event(i)));
      const db = await openConnection(file);
      db.exec(
        `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${COPIES}) ` +
          `INSERT INTO key_verifications (${COLUMNS}, request_id, region) SELECT ${COLUMNS}, 'copy_' || x, region FROM key_verifications, c WHERE key_verifications.rowid <= 1`,
      );
      db.close();
      const plan = await parseAnalyticsQuery(RAW_QUERY, { now: 2_000_000, retentionMs: 86_400_000 });
      let settled = false;
      const answer = store.queryVerifications(plan, { workspaceId: "ws_1" }).finally(() => (settled = true));
      // On the store's own thread the query would hold every call until it ends: here they go on meanwhile.
      let calls = 0;
      while (!settled) {
        await store.direct.getMeta("probe");
        calls++;
        // A turn of the event loop between calls, as between requests (the worker's answer arrives as an event).
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(calls).toBeGreaterThan(5);
      expect(await answer).toEqual(
        expect.arrayContaining([
          { key_id: "key_0", n: 334 + COPIES },
          { key_id: "key_1", n: 333 },
          { key_id: "key_2", n: 333 },
        ]),
      );
    } finally {
      await store.close();
    }
  }, 120_000);

  it("answers a query past its limit with AnalyticsTimeoutError, and the next ones from a new worker once it ended", async () => {
    const file = join(dir, "limit.db");
    const store = await sqliteStorage(file);
    await store.close();
    const worker = AnalyticsWorker.lazy(file, store.driver, 300);
    try {
      // Far more than the limit for SQLite, and over within seconds.
      const slow = worker.query(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000000) SELECT count(*) AS n FROM c",
        [],
      );
      const queued = worker.query("SELECT 2 AS x", []);
      await expect(slow).rejects.toBeInstanceOf(AnalyticsTimeoutError);
      // The query waiting behind it had the same limit, counted from its arrival.
      await expect(queued).rejects.toBeInstanceOf(AnalyticsTimeoutError);
      // Until the dropped worker's query ends, queries wait (within their limit); then a new worker
      // answers. The query takes a second on a quiet machine, a minute beside CPU-bound processes:
      // each query below is asked again past its limit, for up to two minutes.
      const deadline = Date.now() + 120_000;
      const answered = async (text: string, params: Array<string | number>): Promise<unknown> => {
        for (;;) {
          const outcome = await worker.query(text, params).then(
            (rows) => ({ rows }),
            (err: unknown) => ({ err }),
          );
          if (!("err" in outcome)) return outcome.rows;
          if (!(outcome.err instanceof AnalyticsTimeoutError) || Date.now() > deadline) throw outcome.err;
        }
      };
      expect(await answered("SELECT ? AS x", [3])).toEqual([{ x: 3 }]);
      // Read-only: the worker's connection cannot write.
      await expect(answered("DELETE FROM key_verifications RETURNING 1", [])).rejects.toThrow(/readonly|read-only|query_only/i);
    } finally {
      await worker.stop();
    }
  }, 180_000);
});
