// analytics.getVerifications fuzzed: 10,000 generated queries (a grammar of the supported subset
// mixed with hostile fragments: comments, quotes, stacked statements, subqueries, other tables,
// conditions on workspace_id). Each is refused with a ServiceError of production's kinds, or it
// runs on SQLite (and a share on PostgreSQL) with exactly the rows the memory evaluator gives over
// the scope's own events: another workspace's rows (marked OTHER) never come out.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAnalyticsQuery } from "../../../src/server/analytics/query-check";
import type { AnalyticsScope } from "../../../src/server/analytics/plan";
import { ServiceError } from "../../../src/server/errors";
import type { Storage } from "../../../src/server/storage/seam";
import type { VerificationEvent } from "../../../src/server/records";
import { memoryStorage } from "../../../src/server/storage/memory/store";
import { postgresStorage } from "../../../src/server/storage/postgres/store";
import { sqliteStorage } from "../../../src/server/storage/sqlite/store";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";

const RUNS = 10_000;
const PG_EVERY = 10; // one query in ten also runs on PostgreSQL
const NOW = Date.UTC(2026, 10, 24, 12, 0, 0);
const CTX = { now: NOW, retentionMs: 30 * 86_400_000 };
const W = "ws_mine";
const O = "ws_OTHER";
const OUTCOMES = ["VALID", "RATE_LIMITED", "USAGE_EXCEEDED", "DISABLED"];

function events(): VerificationEvent[] {
  const out: VerificationEvent[] = [];
  for (let i = 0; i < 120; i++) {
    const mine = i % 3 !== 0;
    out.push({
      time: NOW - (i % 40) * 1_800_000 - i,
      workspaceId: mine ? W : O,
      keySpaceId: mine ? (i % 2 ? "api_1" : "api_2") : "api_OTHER",
      keyId: mine ? `key_${i % 7}` : `key_OTHER_${i % 5}`,
      identityId: mine && i % 4 === 0 ? "id_1" : mine ? "" : "id_OTHER",
      externalId: mine && i % 4 === 0 ? "user_1" : mine ? "" : "ext_OTHER",
      outcome: OUTCOMES[i % OUTCOMES.length]!,
      tags: mine ? (i % 5 === 0 ? ["a", "b=1"] : []) : ["secret-OTHER"],
      spentCredits: i % 6,
      requestId: mine ? `req_${i}` : `req_OTHER_${i}`,
      region: "local",
    });
  }
  return out;
}

// The grammar. Strings come from small pools so that filters hit rows of both workspaces.
const str = fc.constantFrom(
  "'VALID'",
  "'RATE_LIMITED'",
  `'${W}'`,
  `'${O}'`,
  "'key_1'",
  "'key_OTHER_1'",
  "'api_1'",
  "'api_OTHER'",
  "'a'",
  "'secret-OTHER'",
  "''",
  "'it''s'",
  "'\\''",
);
const strCol = fc.constantFrom("outcome", "key_id", "workspace_id", "key_space_id", "external_id", "identity_id", "request_id", "region");
const numCol = fc.constantFrom("time", "spent_credits", "fromUnixTimestamp64Milli(time)");
const num = fc.oneof(
  fc.integer({ min: -3, max: 8 }).map(String),
  fc.constantFrom(
    String(NOW - 3_600_000),
    String(NOW - 86_400_000),
    "now() - INTERVAL 2 HOUR",
    "now() - INTERVAL 1 DAY",
    "now() - INTERVAL 90 DAY",
    "1.5",
    "9999999999999999999",
  ),
);
const op = fc.constantFrom("=", "!=", "<>", "<", "<=", ">", ">=", "LIKE", "==");
const atom = fc.oneof(
  fc.tuple(strCol, op, str).map(([c, o, v]) => `${c} ${o} ${v}`),
  fc.tuple(numCol, op, num).map(([c, o, v]) => `${c} ${o} ${v}`),
  fc
    .tuple(strCol, fc.boolean(), fc.array(str, { minLength: 1, maxLength: 3 }))
    .map(([c, not, vs]) => `${c} ${not ? "NOT IN" : "IN"} (${vs.join(", ")})`),
  str.map((v) => `has(tags, ${v})`),
  fc.tuple(numCol, num, num).map(([c, a, b]) => `${c} BETWEEN ${a} AND ${b}`),
  fc.constantFrom(
    "1 = 1",
    "workspace_id = workspace_id",
    "key_id IN (SELECT key_id FROM key_verifications)",
    "workspace_id = (SELECT workspace_id FROM key_verifications LIMIT 1)",
    "outcome = outcome OR 1=1",
    "lower(outcome) = 'valid'",
    "tags = 'a'",
    "time = 'x'",
    "1 = '1'",
    "NULL IS NULL",
    "true",
  ),
);
/** Conditions over `atom`: AND, OR and NOT, nested. */
const conditionOf = (atom: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.letrec((tie) => ({
    cond: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      atom,
      fc
        .tuple(tie("cond") as fc.Arbitrary<string>, fc.constantFrom("AND", "OR"), tie("cond") as fc.Arbitrary<string>)
        .map(([a, o, b]) => `(${a}) ${o} (${b})`),
      (tie("cond") as fc.Arbitrary<string>).map((c) => `NOT (${c})`),
    ),
  })).cond;
const condition = conditionOf(atom);
const output = fc.oneof(
  strCol,
  fc.constantFrom(
    "time",
    "tags",
    "spent_credits",
    "count(*) AS n",
    "count() AS n2",
    "sum(spent_credits) AS s",
    "toStartOfHour(fromUnixTimestamp64Milli(time)) AS h",
    "toStartOfDay(time) AS d",
    "avg(time)",
    "*",
  ),
  condition.map((c) => `countIf(${c}) AS c`),
);
const hostile = fc.constantFrom(
  "",
  "",
  "",
  " -- comment",
  " /* c */",
  "; DELETE FROM key_verifications",
  "; DROP TABLE keys",
  " UNION SELECT * FROM key_verifications",
  " UNION ALL SELECT * FROM key_verifications_v1",
  "'",
  '"',
  " OR 1=1",
  ") OR (1=1",
  " LIMIT 1 OFFSET 1",
  " FORMAT JSON",
  " SETTINGS max_threads = 1",
);
const table = fc.constantFrom(
  "key_verifications_v1",
  "key_verifications_v1",
  "key_verifications_v1",
  "key_verifications_v1 k",
  "key_verifications",
  "keys",
  "sqlite_master",
  "default.key_verifications_raw_v2",
  "(SELECT * FROM key_verifications)",
);
const hostileQuery = fc
  .record({
    outputs: fc.uniqueArray(output, { minLength: 1, maxLength: 4 }),
    table,
    where: fc.option(condition, { nil: undefined }),
    groupBy: fc.option(
      fc.uniqueArray(fc.constantFrom("outcome", "key_id", "h", "workspace_id", "key_space_id", "tags"), { minLength: 1, maxLength: 2 }),
      { nil: undefined },
    ),
    orderBy: fc.option(fc.constantFrom("time DESC", "outcome", "n DESC", "h", "key_id ASC, time"), { nil: undefined }),
    limit: fc.option(fc.constantFrom(0, 1, 5, 50, 20_000), { nil: undefined }),
    tail: hostile,
  })
  .map(({ outputs, table: t, where, groupBy, orderBy, limit, tail }) => {
    let sql = `SELECT ${outputs.join(", ")} FROM ${t}`;
    if (where) sql += ` WHERE ${where}`;
    if (groupBy) sql += ` GROUP BY ${groupBy.join(", ")}`;
    if (orderBy) sql += ` ORDER BY ${orderBy}`;
    if (limit !== undefined) sql += ` LIMIT ${limit}`;
    return sql + tail;
  });

// Queries of the supported subset only (most of them run), with conditions that try to reach the other workspace.
const cleanNum = fc.oneof(
  fc.integer({ min: 0, max: 8 }).map(String),
  fc.constantFrom(String(NOW - 3_600_000), String(NOW - 86_400_000), "now() - INTERVAL 2 HOUR", "now() - INTERVAL 1 DAY"),
);
const cleanOp = fc.constantFrom("=", "!=", "<>", "<", "<=", ">", ">=");
const cleanAtom = fc.oneof(
  fc
    .tuple(
      strCol,
      cleanOp,
      str.filter((v) => !v.includes("\\")),
    )
    .map(([c, o, v]) => `${c} ${o} ${v}`),
  fc.tuple(numCol, cleanOp, cleanNum).map(([c, o, v]) => `${c} ${o} ${v}`),
  fc
    .tuple(
      strCol,
      fc.boolean(),
      fc.array(
        str.filter((v) => !v.includes("\\")),
        { minLength: 1, maxLength: 3 },
      ),
    )
    .map(([c, not, vs]) => `${c} ${not ? "NOT IN" : "IN"} (${vs.join(", ")})`),
  str.filter((v) => !v.includes("\\")).map((v) => `has(tags, ${v})`),
  fc.constantFrom("1 = 1", "workspace_id = workspace_id", `workspace_id = '${O}' OR workspace_id != '${O}'`, "'a' < 'b'"),
);
const cleanCondition = conditionOf(cleanAtom);
const groupable = fc.constantFrom(
  "outcome",
  "key_id",
  "workspace_id",
  "key_space_id",
  "external_id",
  "toStartOfHour(fromUnixTimestamp64Milli(time))",
  "toStartOfMinute(time)",
);
const aggregate = fc.oneof(
  fc.constantFrom("count(*)", "count()", "sum(spent_credits)", "sum(time)"),
  cleanCondition.map((c) => `countIf(${c})`),
);
const cleanQuery = fc.oneof(
  // Rows: columns, a filter, an order, a limit.
  fc
    .record({
      outputs: fc.uniqueArray(fc.oneof(strCol, fc.constantFrom("time", "tags", "spent_credits", "*")), { minLength: 1, maxLength: 4 }),
      where: fc.option(cleanCondition, { nil: undefined }),
      orderBy: fc.option(fc.constantFrom("time DESC", "outcome", "key_id ASC, time", "request_id"), { nil: undefined }),
      limit: fc.option(fc.constantFrom(0, 1, 5, 50, 10_000), { nil: undefined }),
      tail: fc.constantFrom("", " -- c", " /* c */", ";"),
    })
    .filter(({ outputs }) => !outputs.includes("*") || outputs.length === 1)
    .map(({ outputs, where, orderBy, limit, tail }) => {
      let sql = `SELECT ${outputs.join(", ")} FROM key_verifications_v1`;
      if (where) sql += ` WHERE ${where}`;
      if (orderBy) sql += ` ORDER BY ${orderBy}`;
      if (limit !== undefined) sql += ` LIMIT ${limit}`;
      return sql + tail;
    }),
  // Groups: keys, aggregates, a filter, an order by an output.
  fc
    .record({
      keys: fc.uniqueArray(groupable, { minLength: 0, maxLength: 2 }),
      aggregates: fc.array(aggregate, { minLength: 1, maxLength: 3 }),
      where: fc.option(cleanCondition, { nil: undefined }),
      order: fc.boolean(),
      limit: fc.option(fc.constantFrom(1, 3, 100), { nil: undefined }),
    })
    .map(({ keys, aggregates, where, order, limit }) => {
      const outs = [...keys.map((k, i) => `${k} AS g${i}`), ...aggregates.map((a, i) => `${a} AS a${i}`)];
      let sql = `SELECT ${outs.join(", ")} FROM key_verifications_v1`;
      if (where) sql += ` WHERE ${where}`;
      if (keys.length > 0) sql += ` GROUP BY ${keys.map((_, i) => `g${i}`).join(", ")}`;
      if (order) sql += ` ORDER BY a0 DESC`;
      if (limit !== undefined) sql += ` LIMIT ${limit}`;
      return sql;
    }),
);
const query = fc.oneof({ arbitrary: cleanQuery, weight: 3 }, { arbitrary: hostileQuery, weight: 1 });
const scope = fc.constantFrom<AnalyticsScope>(
  { workspaceId: W },
  { workspaceId: W },
  { workspaceId: W, keySpaceIds: ["api_1"] },
  { workspaceId: W, keySpaceIds: [] },
);

const canonical = (rows: Array<Record<string, unknown>>) => rows.map((r) => JSON.stringify(r)).sort();

describe("analytics queries, fuzzed", () => {
  const dir = mkdtempSync(join(tmpdir(), "keyguard-fuzz-"));
  const memory = memoryStorage();
  let sqlite: Storage;
  let pg: Storage | undefined;
  let dropPg: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    sqlite = await sqliteStorage(join(dir, "fuzz.db"));
    const all = events();
    await Promise.all([memory.appendVerifications(all), sqlite.appendVerifications(all)]);
    if ((await postgresRedisSkipReason("analytics fuzzing on PostgreSQL")) === undefined) {
      const ns = isolatedNamespace();
      pg = await postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, redisPrefix: ns.redisPrefix });
      dropPg = () => ns.drop();
      await pg.appendVerifications(all);
    }
  });
  afterAll(async () => {
    await sqlite?.close();
    await pg?.close();
    await dropPg?.();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`${RUNS} generated queries: refused with production's kinds, or the scope's rows only, the same on every store`, async () => {
    let accepted = 0;
    let ran = 0;
    await fc.assert(
      fc.asyncProperty(query, scope, async (sql, sc) => {
        ran++;
        let plan;
        try {
          plan = await parseAnalyticsQuery(sql, CTX);
        } catch (err) {
          expect(err).toBeInstanceOf(ServiceError);
          expect((err as ServiceError).kind).toMatch(
            /^bad_request\.(invalid_analytics_(query|table|function|query_type)|query_range_exceeds_retention)$/,
          );
          return;
        }
        accepted++;
        const expected = await memory.queryVerifications(plan, sc);
        const got = await sqlite.queryVerifications(plan, sc);
        const text = JSON.stringify(got);
        expect(text).not.toContain("OTHER");
        if (sc.keySpaceIds?.length === 0) expect(got.every((r) => Object.values(r).every((v) => typeof v !== "string"))).toBe(true);
        // With LIMIT (or ORDER BY ties) which rows come out may differ; their number may not.
        const exact = /LIMIT/.test(sql) === false && /ORDER BY/.test(sql) === false;
        expect(got.length).toBe(expected.length);
        if (exact) expect(canonical(got)).toEqual(canonical(expected));
        if (pg && ran % PG_EVERY === 0) {
          const fromPg = await pg.queryVerifications(plan, sc);
          expect(JSON.stringify(fromPg)).not.toContain("OTHER");
          expect(fromPg.length).toBe(expected.length);
          if (exact) expect(canonical(fromPg)).toEqual(canonical(expected));
        }
      }),
      { numRuns: RUNS, interruptAfterTimeLimit: 240_000, markInterruptAsFailure: true },
    );
    expect(ran).toBeGreaterThanOrEqual(RUNS);
    // The grammar must reach the stores, not only the refusals.
    expect(accepted).toBeGreaterThan(RUNS / 2);
    console.log(
      `analytics fuzzing: ${ran} queries, ${accepted} ran on the stores (${pg ? `memory, SQLite and every ${PG_EVERY}th on PostgreSQL` : "memory and SQLite"})`,
    );
  }, 300_000);
});
