// The rollups (analytics/rollup.ts): which plans they answer, and a property over random events
// and queries: the answer read from the rollups and the raw edges is the raw table's answer, on
// SQLite and on PostgreSQL (and the memory evaluator's), events appended in several batches, and
// again after the retention deleted the events older than a random time.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAnalyticsQuery } from "../../../src/server/analytics/query-check";
import { evaluatePlan } from "../../../src/server/analytics/evaluate";
import type { AnalyticsPlan, AnalyticsScope } from "../../../src/server/analytics/plan";
import { routeRollup } from "../../../src/server/analytics/rollup";
import { POSTGRES_DIALECT, compilePlan } from "../../../src/server/analytics/sql";
import type { Storage } from "../../../src/server/storage/seam";
import type { VerificationEvent } from "../../../src/server/records";
import { postgresStorage } from "../../../src/server/storage/postgres/store";
import { quoteIdent } from "../../../src/server/storage/postgres/schema";
import { openConnection, type SqlConnection } from "../../../src/server/storage/sqlite/driver";
import { compileQuery, runQuery } from "../../../src/server/storage/sqlite/events";
import { sqliteStorage } from "../../../src/server/storage/sqlite/store";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Date.UTC(2026, 10, 24, 12, 0, 0) + 17_345;
const CTX = { now: NOW, retentionMs: 30 * DAY };
const plan = (sql: string) => parseAnalyticsQuery(sql, CTX);

describe("routeRollup", () => {
  it("answers the console's 30-day chart from days, hours at its edges and raw events within the hour", async () => {
    const since = NOW - 30 * DAY;
    const route = routeRollup(
      await plan(
        `SELECT toStartOfDay(time) AS d, outcome, count(*) AS total FROM key_verifications_v1 WHERE time >= ${since} GROUP BY d, outcome`,
      ),
    );
    const startOfDay = Math.ceil(since / DAY) * DAY;
    const startOfHour = Math.ceil(since / HOUR) * HOUR;
    // By outcome only: the rollups with a few rows per bucket.
    expect(route).toEqual({
      dimensions: ["workspace_id", "key_space_id", "outcome"],
      raw: [{ from: since, to: startOfHour }],
      rollups: [
        { table: "key_verifications_outcomes_per_day", unit: "day", ranges: [{ from: startOfDay, to: Infinity }] },
        { table: "key_verifications_outcomes_per_hour", unit: "hour", ranges: [{ from: startOfHour, to: startOfDay }] },
      ],
    });
  });

  it("answers a per-key, per-identity or per-tag query from the rollups by every dimension", async () => {
    for (const sql of [
      "SELECT key_id, count(*) AS n FROM key_verifications_v1 GROUP BY key_id",
      "SELECT count(*) AS n FROM key_verifications_v1 WHERE identity_id = 'id_1'",
      "SELECT countIf(has(tags, 'a')) AS n FROM key_verifications_v1",
    ]) {
      expect(
        routeRollup(await plan(sql))?.rollups.map((r) => r.table),
        sql,
      ).toEqual(["key_verifications_per_day"]);
    }
  });

  it("splits the range at every time a condition compares with", async () => {
    const t = NOW - 2 * DAY - 5;
    const route = routeRollup(
      await plan(`SELECT countIf(time > ${t}) AS late, count(*) AS n FROM key_verifications_v1 WHERE time >= ${NOW - 3 * DAY}`),
    );
    // time > t changes at t + 1: the events of t's hour up to it and from it are read raw.
    expect(route?.raw).toContainEqual({ from: Math.floor(t / HOUR) * HOUR, to: Math.ceil((t + 1) / HOUR) * HOUR });
  });

  it.each([
    ["rows, not aggregates", "SELECT outcome FROM key_verifications_v1"],
    ["minute buckets", "SELECT toStartOfMinute(time) AS m, count(*) AS n FROM key_verifications_v1 GROUP BY m"],
    ["time for equality", `SELECT count(*) AS n FROM key_verifications_v1 WHERE time = ${NOW}`],
    ["time per row", "SELECT sum(time) AS s FROM key_verifications_v1"],
    ["request_id", "SELECT count(*) AS n FROM key_verifications_v1 WHERE request_id = 'r'"],
    ["spent_credits outside sum()", "SELECT count(*) AS n FROM key_verifications_v1 WHERE spent_credits > 2"],
    ["a range of less than an hour", `SELECT count(*) AS n FROM key_verifications_v1 WHERE time >= ${NOW - 60_000} AND time < ${NOW}`],
  ])("leaves to the raw events a plan reading %s", async (_what, sql) => {
    expect(routeRollup(await plan(sql))).toBeUndefined();
  });
});

// Random events over four days around NOW, and random queries of the shapes the rollups answer (and a few they do not).
const KEYS = ["key_a", "key_b", "key_c"];
const OUTCOMES = ["VALID", "RATE_LIMITED", "USAGE_EXCEEDED"];
// Times to compare with: anywhere, on an hour, on a day.
const timeArb = fc.oneof(
  fc.integer({ min: NOW - 4 * DAY, max: NOW + HOUR }),
  fc.integer({ min: -30, max: 1 }).map((h) => Math.floor(NOW / HOUR) * HOUR + h * HOUR),
  fc.integer({ min: -4, max: 0 }).map((d) => Math.floor(NOW / DAY) * DAY + d * DAY),
);
const eventArb = fc.record({
  // Anywhere, or next to a time the queries compare with (where a bucket is cut).
  time: fc.oneof(
    fc.integer({ min: NOW - 4 * DAY, max: NOW + HOUR }),
    fc.tuple(timeArb, fc.integer({ min: -2, max: 2 })).map(([t, d]) => t + d),
    fc.tuple(timeArb, fc.integer({ min: 0, max: HOUR - 1 })).map(([t, d]) => t + d),
  ),
  keySpaceId: fc.constantFrom("api_1", "api_2"),
  keyId: fc.constantFrom(...KEYS),
  identity: fc.constantFrom("", "id_1"),
  outcome: fc.constantFrom(...OUTCOMES),
  tags: fc.constantFrom([], ["a"], ["a", "b"], ["b"]),
  spentCredits: fc.integer({ min: 0, max: 3 }),
});
const atomArb: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...OUTCOMES).map((o) => `outcome = '${o}'`),
  fc.subarray(KEYS, { minLength: 1 }).map((ks) => `key_id IN (${ks.map((k) => `'${k}'`).join(", ")})`),
  fc.constantFrom("has(tags, 'a')", "identity_id != ''", "key_space_id = 'api_2'", "external_id = 'ext_1'"),
  fc.tuple(fc.constantFrom("<", "<=", ">", ">="), timeArb).map(([op, t]) => `time ${op} ${t}`),
  fc.tuple(fc.constantFrom("<", ">="), timeArb).map(([op, t]) => `toStartOfHour(time) ${op} ${t}`),
);
const condArb: fc.Arbitrary<string> = fc.letrec((tie) => ({
  c: fc.oneof(
    { depthSize: "small" },
    atomArb,
    fc
      .tuple(tie("c") as fc.Arbitrary<string>, fc.constantFrom("AND", "OR"), tie("c") as fc.Arbitrary<string>)
      .map(([a, o, b]) => `(${a}) ${o} (${b})`),
    (tie("c") as fc.Arbitrary<string>).map((c) => `NOT (${c})`),
  ),
})).c;
const queryArb = fc
  .record({
    keys: fc.uniqueArray(
      fc.constantFrom("outcome", "key_id", "identity_id", "key_space_id", "region", "toStartOfHour(time)", "toStartOfDay(time)"),
      { maxLength: 3 },
    ),
    aggregates: fc.array(
      fc.oneof(
        fc.constantFrom("count(*)", "sum(spent_credits)"),
        condArb.map((c) => `countIf(${c})`),
      ),
      {
        minLength: 1,
        maxLength: 3,
      },
    ),
    from: fc.option(timeArb, { nil: undefined }),
    to: fc.option(fc.tuple(fc.constantFrom("<", "<="), timeArb), { nil: undefined }),
    where: fc.option(condArb, { nil: undefined }),
  })
  .map(({ keys, aggregates, from, to, where }) => {
    const outs = [...keys.map((k, i) => `${k} AS g${i}`), ...aggregates.map((a, i) => `${a} AS a${i}`)];
    const conds = [from === undefined ? "" : `time >= ${from}`, to ? `time ${to[0]} ${to[1]}` : "", where ? `(${where})` : ""].filter(
      Boolean,
    );
    let sql = `SELECT ${outs.join(", ")} FROM key_verifications_v1`;
    if (conds.length > 0) sql += ` WHERE ${conds.join(" AND ")}`;
    if (keys.length > 0) sql += ` GROUP BY ${keys.map((_, i) => `g${i}`).join(", ")}`;
    return sql;
  });
const scopeOf = (workspaceId: string) =>
  fc.constantFrom<AnalyticsScope>({ workspaceId }, { workspaceId }, { workspaceId, keySpaceIds: ["api_1"] });

const canonical = (rows: Array<Record<string, unknown>>) => rows.map((r) => JSON.stringify(r)).sort();

describe("the rollups' answers are the raw events' answers", () => {
  const dir = mkdtempSync(join(tmpdir(), "keyguard-rollup-"));
  let sqlite: Storage;
  let reader: SqlConnection;
  let postgres: { store: Storage; pool: pg.Pool; t: (name: string) => string; drop: () => Promise<void> } | undefined;

  beforeAll(async () => {
    const file = join(dir, "rollup.db");
    sqlite = await sqliteStorage(file);
    reader = await openConnection(file);
    if ((await postgresRedisSkipReason("the rollup property on PostgreSQL")) === undefined) {
      const ns = isolatedNamespace();
      const store = await postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, redisPrefix: ns.redisPrefix });
      const s = quoteIdent(ns.schema);
      postgres = { store, pool: new pg.Pool({ connectionString: POSTGRES_URL, max: 2 }), t: (name) => `${s}.${name}`, drop: ns.drop };
    }
  });
  afterAll(async () => {
    reader?.close();
    await sqlite?.close();
    await postgres?.store.close();
    await postgres?.pool.end();
    await postgres?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  let run = 0;
  it("over random events appended in batches and random queries, on SQLite and PostgreSQL", async () => {
    let routed = 0;
    let total = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(eventArb, { minLength: 1, maxLength: 150 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.tuple(queryArb, fc.nat()), { minLength: 1, maxLength: 12 }),
        timeArb,
        async (generated, batches, queries, before) => {
          // A workspace per run: the runs share the stores, the scope keeps them apart.
          const workspaceId = `ws_${++run}`;
          const events: VerificationEvent[] = generated.map((e, i) => ({
            time: e.time,
            workspaceId,
            keySpaceId: e.keySpaceId,
            keyId: e.keyId,
            identityId: e.identity,
            externalId: e.identity === "" ? "" : "ext_1",
            outcome: e.outcome,
            tags: e.tags,
            spentCredits: e.spentCredits,
            requestId: `req_${i}`,
            region: "local",
          }));
          const size = Math.ceil(events.length / batches);
          for (let i = 0; i < events.length; i += size) {
            await sqlite.appendVerifications(events.slice(i, i + size));
            await postgres?.store.appendVerifications(events.slice(i, i + size));
          }
          const check = async (kept: VerificationEvent[]) => {
            for (const [sql, pick] of queries) {
              const p: AnalyticsPlan = await plan(sql);
              const scope = fc.sample(scopeOf(workspaceId), { numRuns: 1, seed: pick })[0]!;
              total++;
              if (routeRollup(p)) routed++;
              const expected = canonical(evaluatePlan(p, scope, kept));
              expect(canonical(runQuery(reader, compileQuery(p, scope, true))), sql).toEqual(expected);
              expect(canonical(runQuery(reader, compileQuery(p, scope))), sql).toEqual(expected);
              expect(canonical(await sqlite.queryVerifications(p, scope)), sql).toEqual(expected);
              if (postgres) {
                const q = compilePlan(p, scope, postgres.t, POSTGRES_DIALECT);
                const pgRaw = (await postgres.pool.query(q.text, q.params)).rows.map(q.read);
                expect(canonical(pgRaw), sql).toEqual(expected);
                expect(canonical(await postgres.store.queryVerifications(p, scope)), sql).toEqual(expected);
              }
            }
          };
          await check(events);
          // The retention cuts buckets: what it deletes leaves their counts too.
          await sqlite.deleteVerificationsBefore(before);
          await postgres?.store.deleteVerificationsBefore(before);
          await check(events.filter((e) => e.time >= before));
        },
      ),
      { numRuns: 40 },
    );
    console.log(`rollup property: ${total} queries, ${routed} answered from the rollups`);
    // The property is about the rollups: most generated queries must take them.
    expect(routed / total).toBeGreaterThan(0.5);
  }, 300_000);
});
