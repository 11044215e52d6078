// analytics.getVerifications over HTTP: the console's three queries on every store, production's
// error kinds for what is outside the supported subset, the root key's workspace and APIs, and
// queries that try to write (refused, the data intact afterwards).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import {
  memoryStorage,
  postgresStorage,
  sqliteStorage,
  startLocalKeyService,
  type RunningLocalKeyService,
  type Storage,
} from "keyguard/server";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";
import { makeCall, manualClock, type Call } from "../helpers";

const TYPE = "https://unkey.com/docs/api-reference/errors-v2/user/bad_request";
const HOUR = 3_600_000;
const skipPg = await postgresRedisSkipReason("analytics.getVerifications on PostgreSQL");

interface Backend {
  name: string;
  skip?: string;
  open(): Promise<{ store: Storage; drop(): Promise<void> }>;
}

const BACKENDS: Backend[] = [
  { name: "memory", open: async () => ({ store: memoryStorage(), drop: async () => undefined }) },
  {
    name: "sqlite",
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), "keyguard-analytics-"));
      return { store: await sqliteStorage(join(dir, "keys.db")), drop: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: "postgres",
    ...(skipPg !== undefined && { skip: skipPg }),
    open: async () => {
      const ns = isolatedNamespace();
      const store = await postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, redisPrefix: ns.redisPrefix });
      return { store, drop: () => ns.drop() };
    },
  },
];

describe.each(BACKENDS)("analytics.getVerifications on $name", (backend) => {
  const clock = manualClock(Date.UTC(2026, 10, 24, 12, 30, 0));
  const T0 = Date.UTC(2026, 10, 24, 10, 0, 0);
  let local: RunningLocalKeyService;
  let opened: { store: Storage; drop(): Promise<void> };
  let call: Call;
  let keys: { a: { keyId: string; key: string }; b: { keyId: string; key: string } };
  let otherApi: { apiId: string; keyId: string };
  let intruder: { rootKey: string; keyId: string };

  beforeAll(async () => {
    if (backend.skip) return;
    opened = await backend.open();
    local = await startLocalKeyService({ storage: opened.store, logger: silentLogger, now: clock.now });
    call = makeCall(local.baseUrl, local.rootKey);
    const create = async (apiId: string, body: Record<string, unknown> = {}) =>
      (await call("keys.createKey", { apiId, ...body })).body.data as { keyId: string; key: string };
    keys = {
      a: await create(local.apiId),
      b: await create(local.apiId, { ratelimits: [{ name: "burst", limit: 1, duration: 3_600_000, autoApply: true }] }),
    };
    // Load: 10:00 → a VALID ×3 (tag x), b VALID + RATE_LIMITED ×2; 11:00 → a VALID ×1, b RATE_LIMITED ×1.
    clock.t = T0 + 60_000;
    for (let i = 0; i < 3; i++) await call("keys.verifyKey", { key: keys.a.key, tags: ["x"] });
    for (let i = 0; i < 3; i++) await call("keys.verifyKey", { key: keys.b.key });
    clock.t = T0 + HOUR + 120_000;
    await call("keys.verifyKey", { key: keys.a.key });
    await call("keys.verifyKey", { key: keys.b.key });
    // Another API of the workspace, and another workspace with its own root key and events.
    const { apiId } = await local.service.createApi({ name: "other" });
    const ok = await create(apiId);
    await call("keys.verifyKey", { key: ok.key });
    otherApi = { apiId, keyId: ok.keyId };
    const { workspaceId } = await local.service.createWorkspace({ name: "intruder" });
    const { apiId: theirApi } = await local.service.createApi({ workspaceId, name: "theirs" });
    const { rootKey } = await local.service.createRootKey({
      workspaceId,
      permissions: ["api.*.create_key", "api.*.verify_key", "api.*.read_analytics"],
    });
    const theirCall = makeCall(local.baseUrl, rootKey);
    const theirs = (await theirCall("keys.createKey", { apiId: theirApi })).body.data as { keyId: string; key: string };
    for (let i = 0; i < 4; i++) await theirCall("keys.verifyKey", { key: theirs.key, tags: ["secret-other"] });
    intruder = { rootKey, keyId: theirs.keyId };
    clock.t = Date.UTC(2026, 10, 24, 12, 30, 0);
    await local.service.flushVerifications();
  });
  afterAll(async () => {
    await local?.close();
    await opened?.store.close();
    await opened?.drop();
  });

  const rows = async (query: string, rootKey?: string) => {
    const res = await call("analytics.getVerifications", { query }, rootKey);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data as Array<Record<string, unknown>>;
  };
  const refused = async (query: string, kind: string, rootKey?: string) => {
    const res = await call("analytics.getVerifications", { query }, rootKey);
    expect(res.status, `${query} → ${JSON.stringify(res.body)}`).toBe(400);
    expect(res.body.error.type, query).toBe(`${TYPE}/${kind}`);
    expect(res.body.error.detail).toBeTruthy();
    return res.body.error.detail as string;
  };

  it.skipIf(backend.skip !== undefined)("answers the console's outcomes-over-time query, by hour, minute and day", async () => {
    const since = T0 - HOUR;
    const q = (fn: string) =>
      `SELECT ${fn}(fromUnixTimestamp64Milli(time)) AS hour, outcome, count(*) AS total FROM key_verifications_v1 WHERE time >= ${since} GROUP BY hour, outcome ORDER BY hour`;
    const byHour = await rows(q("toStartOfHour"));
    expect(byHour.sort((x, y) => Number(x.hour) - Number(y.hour) || String(x.outcome).localeCompare(String(y.outcome)))).toEqual([
      { hour: T0, outcome: "RATE_LIMITED", total: 2 },
      { hour: T0, outcome: "VALID", total: 4 },
      { hour: T0 + HOUR, outcome: "RATE_LIMITED", total: 1 },
      { hour: T0 + HOUR, outcome: "VALID", total: 2 },
    ]);
    const byDay = await rows(q("toStartOfDay"));
    expect(byDay.sort((x, y) => String(x.outcome).localeCompare(String(y.outcome)))).toEqual([
      { hour: Date.UTC(2026, 10, 24), outcome: "RATE_LIMITED", total: 3 },
      { hour: Date.UTC(2026, 10, 24), outcome: "VALID", total: 6 },
    ]);
    const byMinute = await rows(q("toStartOfMinute"));
    expect(byMinute.map((r) => r.hour)).toEqual([...byMinute.map((r) => r.hour as number)].sort((x, y) => x - y));
    expect(new Set(byMinute.map((r) => r.hour))).toEqual(new Set([T0 + 60_000, T0 + HOUR + 120_000]));
  });

  it.skipIf(backend.skip !== undefined)("answers the console's latest-events and rate-limited-keys queries", async () => {
    const latest = await rows("SELECT time, key_id, outcome, tags FROM key_verifications_v1 ORDER BY time DESC LIMIT 20");
    expect(latest).toHaveLength(9);
    expect(Object.keys(latest[0]!)).toEqual(["time", "key_id", "outcome", "tags"]);
    expect(latest.map((r) => r.time)).toEqual([...latest.map((r) => r.time as number)].sort((x, y) => y - x));
    expect(latest.filter((r) => r.key_id === keys.a.keyId && (r.tags as string[]).includes("x"))).toHaveLength(3);
    const limited = await rows(
      `SELECT key_id, countIf(outcome = 'RATE_LIMITED') AS limited FROM key_verifications_v1 WHERE time >= ${T0} GROUP BY key_id`,
    );
    expect(limited.sort((x, y) => String(x.key_id).localeCompare(String(y.key_id)))).toEqual(
      [
        { key_id: keys.a.keyId, limited: 0 },
        { key_id: keys.b.keyId, limited: 3 },
        { key_id: otherApi.keyId, limited: 0 },
      ].sort((x, y) => x.key_id.localeCompare(y.key_id)),
    );
  });

  it.skipIf(backend.skip !== undefined)(
    "supports the documented subset: IN, NOT, has(tags), BETWEEN, now() - INTERVAL, sum, count()",
    async () => {
      expect(await rows(`SELECT count() AS n FROM key_verifications_v1 WHERE outcome IN ('VALID') AND NOT has(tags, 'x')`)).toEqual([
        { n: 3 },
      ]);
      expect(await rows(`SELECT count(*) AS n FROM key_verifications_v1 WHERE time BETWEEN ${T0} AND ${T0 + HOUR - 1}`)).toEqual([
        { n: 6 },
      ]);
      expect(await rows(`SELECT count(*) AS n FROM key_verifications_v1 WHERE time >= now() - INTERVAL 2 HOUR`)).toEqual([{ n: 3 }]);
      expect(await rows(`SELECT sum(spent_credits) AS s FROM key_verifications_v1`)).toEqual([{ s: 0 }]);
      expect(
        await rows(
          `SELECT key_space_id, count(*) AS n FROM key_verifications_v1 WHERE key_space_id = '${otherApi.apiId}' GROUP BY key_space_id`,
        ),
      ).toEqual([{ key_space_id: otherApi.apiId, n: 1 }]);
    },
  );

  it.skipIf(backend.skip !== undefined)("answers only the root key's workspace, whatever the query says", async () => {
    const mine = await rows("SELECT count(*) AS n FROM key_verifications_v1");
    expect(mine).toEqual([{ n: 9 }]);
    for (const q of [
      `SELECT * FROM key_verifications_v1 WHERE workspace_id != 'x' OR 1 = 1`,
      `SELECT * FROM key_verifications_v1 WHERE key_id = '${intruder.keyId}'`,
      `SELECT * FROM key_verifications_v1 WHERE has(tags, 'secret-other') OR NOT has(tags, 'secret-other')`,
    ]) {
      const found = await rows(q);
      expect(JSON.stringify(found)).not.toContain(intruder.keyId);
      expect(JSON.stringify(found)).not.toContain("secret-other");
    }
    expect(await rows("SELECT count(*) AS n FROM key_verifications_v1", intruder.rootKey)).toEqual([{ n: 4 }]);
  });

  it.skipIf(backend.skip !== undefined)("needs api.*.read_analytics, and an API-scoped root key reads only its APIs", async () => {
    const { rootKey: none } = await local.service.createRootKey({ permissions: ["api.*.verify_key"] });
    const res = await call("analytics.getVerifications", { query: "SELECT count(*) FROM key_verifications_v1" }, none);
    expect(res.status).toBe(403);
    expect(res.body.error.type).toMatch(/\/authorization\/insufficient_permissions$/);
    expect(res.body.error.detail).toContain("api.*.read_analytics");
    const { rootKey: scoped } = await local.service.createRootKey({ permissions: [`api.${otherApi.apiId}.read_analytics`] });
    expect(await rows("SELECT key_id, count(*) AS n FROM key_verifications_v1 GROUP BY key_id", scoped)).toEqual([
      { key_id: otherApi.keyId, n: 1 },
    ]);
    expect(
      await rows(`SELECT count(*) AS n FROM key_verifications_v1 WHERE key_space_id = '${local.apiId}' OR key_space_id != ''`, scoped),
    ).toEqual([{ n: 1 }]);
  });

  it.skipIf(backend.skip !== undefined)("refuses what is outside the subset with production's error kinds", async () => {
    await refused("", "invalid_analytics_query");
    // The caller's text is described (place, length), never repeated: the table, its columns and
    // the supported functions are the only names an error gives.
    expect(await refused("SELECT * FROM key_verifications_v1 WHERE invalid syntax here", "invalid_analytics_query")).toMatch(
      /^The query could not be parsed at line 1, column \d+\.$/,
    );
    expect(await refused("SELECT nonexistent_column FROM key_verifications_v1", "invalid_analytics_query")).toMatch(
      /^Unknown column: a column name \(a string of 18 characters\)\. Columns: request_id, time, /,
    );
    expect(await refused("SELECT * FROM keys", "invalid_analytics_table")).toBe(
      "The table after FROM (a string of 4 characters) is not available. The table is key_verifications_v1.",
    );
    expect(await refused("SELECT avg(spent_credits) FROM key_verifications_v1", "invalid_analytics_function")).toMatch(
      /^The function avg is not supported here\. Supported: count, countIf/,
    );
    expect(await refused("SELECT zzfoo(time) FROM key_verifications_v1", "invalid_analytics_function")).toMatch(
      /^The function a function name \(a string of 5 characters\) is not supported here/,
    );
    expect(await refused("SELECT key_id AS x, outcome AS x FROM key_verifications_v1", "invalid_analytics_query")).toMatch(
      /^The selected columns 1 and 2 have the same name/,
    );
    expect(await refused("SELECT outcome AS o, count(*) FROM key_verifications_v1", "invalid_analytics_query")).toMatch(
      /^The selected column 1 must be in GROUP BY/,
    );
    expect(await refused("ZZTOP key_verifications_v1", "invalid_analytics_query_type")).toBe(
      "Only SELECT queries are allowed, not a statement beginning with a word (a string of 5 characters).",
    );
    expect(await refused(`SELECT ${"1 + ".repeat(4000)}1 FROM key_verifications_v1`, "invalid_analytics_query")).toContain(
      "maximum length",
    );
    await refused("SELECT * FROM system.tables", "invalid_analytics_table");
    await refused("SELECT * FROM default.key_verifications_raw_v2", "invalid_analytics_table");
    await refused("SELECT * FROM key_verifications", "invalid_analytics_table");
    await refused("SELECT * FROM keys", "invalid_analytics_table");
    await refused("SELECT * FROM sqlite_master", "invalid_analytics_table");
    await refused("SELECT * FROM pg_catalog.pg_tables", "invalid_analytics_table");
    await refused("SELECT avg(spent_credits) FROM key_verifications_v1", "invalid_analytics_function");
    await refused("SELECT file('x') FROM key_verifications_v1", "invalid_analytics_function");
    await refused("SELECT count(*) FROM key_verifications_v1 WHERE lower(outcome) = 'valid'", "invalid_analytics_function");
    await refused("SELECT * FROM (SELECT * FROM key_verifications_v1)", "invalid_analytics_query");
    await refused("SELECT * FROM key_verifications_v1 WHERE key_id IN (SELECT id FROM keys)", "invalid_analytics_query");
    await refused("SELECT * FROM key_verifications_v1 UNION SELECT * FROM key_verifications_v1", "invalid_analytics_query");
    await refused("SELECT outcome, count(*) FROM key_verifications_v1", "invalid_analytics_query");
    await refused("SELECT * FROM key_verifications_v1 LIMIT 10 OFFSET 5", "invalid_analytics_query");
    await refused("SELECT * FROM key_verifications_v1 WHERE time > 'yesterday'", "invalid_analytics_query");
    expect(await refused("DELETE FROM key_verifications_v1 WHERE time < now()", "invalid_analytics_query_type")).toBe(
      "Only SELECT queries are allowed, not DELETE.",
    );
    expect(
      await refused(
        "SELECT COUNT(*) as count FROM key_verifications_v1 WHERE time >= now() - INTERVAL 60 DAY",
        "query_range_exceeds_retention",
      ),
    ).toContain("30 days");
  });

  it.skipIf(backend.skip !== undefined)(
    "bounds how deep a query nests: 400 invalid_analytics_query saying so, never a 500 or the parser's own error",
    async () => {
      const base = "SELECT count(*) AS n FROM key_verifications_v1 WHERE ";
      for (const sql of [
        `${base}${"NOT ".repeat(1000)}outcome = 'VALID'`,
        `${base}${"(".repeat(4000)}outcome = 'VALID'${")".repeat(4000)}`,
        `${base}${"NOT ".repeat(2400)}outcome = 'VALID'`,
        `${base}${"(NOT ".repeat(33)}outcome = 'VALID'${")".repeat(33)}`,
        `SELECT countIf(${"NOT ".repeat(40)}outcome = 'VALID') AS n FROM key_verifications_v1`,
      ]) {
        const detail = await refused(sql, "invalid_analytics_query");
        expect(detail).toMatch(/nests .* Flatten it/);
        expect(detail).not.toMatch(/call stack|Expression tree/i);
      }
      // 32 levels, and a chain of one operator (one level, however long), still answer.
      const notValid = await rows(`${base}outcome != 'VALID'`);
      const all = await rows("SELECT count(*) AS n FROM key_verifications_v1");
      expect(notValid).not.toEqual(all);
      expect(await rows(`${base}${"NOT (".repeat(16)}outcome != 'VALID'${")".repeat(16)}`)).toEqual(notValid);
      const chain = Array.from({ length: 300 }, (_, i) => `outcome != 'x${i}'`).join(" AND ");
      expect(await rows(`${base}${chain}`)).toEqual(all);
      expect(await rows(`${base}${chain} AND outcome != 'VALID'`)).toEqual(notValid);
      expect(await refused(`${base}${Array.from({ length: 501 }, () => "time>0").join(" OR ")}`, "invalid_analytics_query")).toContain(
        "more than 500 conditions",
      );
    },
  );

  it.skipIf(backend.skip !== undefined)("no query can write: every write is refused and the data is intact afterwards", async () => {
    const before = await rows("SELECT * FROM key_verifications_v1 ORDER BY request_id");
    const keyBefore = await call("keys.getKey", { keyId: keys.a.keyId });
    const type = "invalid_analytics_query_type";
    const writes: Array<[string, string | undefined]> = [
      ["INSERT INTO key_verifications_v1 (key_id) VALUES ('k')", type],
      ["UPDATE key_verifications_v1 SET outcome = 'VALID'", type],
      ["DELETE FROM key_verifications_v1", type],
      ["DROP TABLE key_verifications_v1", type],
      ["DROP TABLE keys", type],
      ["TRUNCATE key_verifications_v1", type],
      ["ALTER TABLE key_verifications_v1 ADD COLUMN x int", type],
      ["CREATE TABLE x (id int)", type],
      ["SELECT 1 FROM key_verifications_v1; DROP TABLE keys", type],
      ["SELECT count(*) FROM key_verifications_v1; DELETE FROM key_verifications_v1", type],
      ["ATTACH DATABASE '/tmp/x.db' AS x", type],
      ["PRAGMA writable_schema = 1", type],
      ["/* hidden */ VACUUM", type],
      ["GRANT ALL ON keys TO public", type],
      ["COPY key_verifications_v1 TO '/tmp/x'", type],
      ["SELECT * FROM key_verifications_v1 WHERE outcome = ''; DELETE FROM keys; --'", type],
      ["WITH d AS (DELETE FROM key_verifications_v1 RETURNING *) SELECT * FROM d", "invalid_analytics_query"],
      ["SELECT * INTO backup FROM key_verifications_v1", "invalid_analytics_query"],
      ["SELECT pg_sleep(1) FROM key_verifications_v1", "invalid_analytics_function"],
      ["SELECT set_config('a', 'b', false) FROM key_verifications_v1", "invalid_analytics_function"],
      ["SELECT * FROM key_verifications_v1 WHERE key_id IN (SELECT id FROM keys)", "invalid_analytics_query"],
      // A read: comments are comments, and the workspace still applies.
      ["SELECT * FROM key_verifications_v1 WHERE outcome = 'x' OR 1=1 --", undefined],
    ];
    for (const [query, kind] of writes) {
      if (kind === undefined) {
        expect(JSON.stringify(await rows(query))).not.toContain(intruder.keyId);
        continue;
      }
      await refused(query, kind);
    }
    expect(await rows("SELECT * FROM key_verifications_v1 ORDER BY request_id")).toEqual(before);
    expect((await call("keys.getKey", { keyId: keys.a.keyId })).body).toEqual({ ...keyBefore.body, meta: expect.anything() });
    // The key is still found by its value (whoami: no verification event, so the counts the other tests read stay put).
    expect((await call("keys.whoami", { key: keys.a.key })).body.data).toMatchObject({ keyId: keys.a.keyId, enabled: true });
  });
});
