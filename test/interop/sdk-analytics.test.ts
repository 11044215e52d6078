// Interop: the official SDK's analytics.getVerifications (@unkey/api 2.x) against the local key
// service on SQLite and on PostgreSQL: after a scripted load over two hours, the counts by outcome
// and by hour it returns are the ones the load produced; its refusals are the SDK's typed errors.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Unkey } from "@unkey/api";
import * as errors from "@unkey/api/models/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import { startLocalKeyService, type LocalKeyServiceOptions, type RunningLocalKeyService } from "keyguard/server";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../support/postgres-redis";

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 23, 14, 0, 0);
const skipPg = await postgresRedisSkipReason("the SDK's analytics.getVerifications on PostgreSQL");

interface Backend {
  name: string;
  skip?: string;
  options(): { options: LocalKeyServiceOptions; drop(): Promise<void> };
}

const BACKENDS: Backend[] = [
  {
    name: "SQLite",
    options: () => {
      const dir = mkdtempSync(join(tmpdir(), "keyguard-sdk-analytics-"));
      return { options: { dataFile: join(dir, "keys.db") }, drop: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: "PostgreSQL",
    ...(skipPg !== undefined && { skip: skipPg }),
    options: () => {
      const ns = isolatedNamespace();
      return { options: { postgres: POSTGRES_URL, redis: REDIS_URL, postgresSchema: ns.schema }, drop: () => ns.drop() };
    },
  },
];

describe.each(BACKENDS)("the SDK's analytics.getVerifications on $name", (backend) => {
  let local: RunningLocalKeyService;
  let drop: () => Promise<void>;
  let unkey: Unkey;
  const clock = { t: T0 };
  /** What the load produced: hour → outcome → count. */
  const expected = new Map<number, Map<string, number>>();

  beforeAll(async () => {
    if (backend.skip) return;
    const setup = backend.options();
    drop = setup.drop;
    local = await startLocalKeyService({ ...setup.options, logger: silentLogger, now: () => clock.t });
    unkey = new Unkey({ rootKey: local.rootKey, serverURL: local.baseUrl, retryConfig: { strategy: "none" } });
    const plain = await unkey.keys.createKey({ apiId: local.apiId });
    const limited = await unkey.keys.createKey({
      apiId: local.apiId,
      ratelimits: [{ name: "per-hour", limit: 3, duration: HOUR, autoApply: true }],
    });
    const paid = await unkey.keys.createKey({ apiId: local.apiId, credits: { remaining: 4 } });
    const disabled = await unkey.keys.createKey({ apiId: local.apiId, enabled: false });
    const note = (hour: number, code: string) => {
      const byOutcome = expected.get(hour) ?? new Map<string, number>();
      byOutcome.set(code, (byOutcome.get(code) ?? 0) + 1);
      expected.set(hour, byOutcome);
    };
    // Two hours of load: each step verifies one of the keys and notes the code the SDK reports.
    for (const [h, steps] of [
      [0, 25],
      [1, 17],
    ] as const) {
      for (let i = 0; i < steps; i++) {
        clock.t = T0 + h * HOUR + i * 60_000;
        const key = [plain, limited, paid, disabled][i % 4]!.data.key;
        const res = await unkey.keys.verifyKey({ key, tags: [`step=${i}`] });
        note(T0 + h * HOUR, res.data.code);
      }
    }
    clock.t = T0 + 2 * HOUR;
    await local.service.flushVerifications();
  });
  afterAll(async () => {
    await local?.close();
    await drop?.();
  });

  it.skipIf(backend.skip !== undefined)("returns the load's counts by outcome", async () => {
    const res = await unkey.analytics.getVerifications({
      query:
        "SELECT outcome, count(*) AS total FROM key_verifications_v1 WHERE time >= now() - INTERVAL 1 DAY GROUP BY outcome ORDER BY outcome",
    });
    const totals = new Map<string, number>();
    for (const byOutcome of expected.values()) for (const [o, n] of byOutcome) totals.set(o, (totals.get(o) ?? 0) + n);
    expect(res.data).toEqual([...totals].sort(([a], [b]) => a.localeCompare(b)).map(([outcome, total]) => ({ outcome, total })));
    // The load made every kind it aimed at.
    expect([...totals.keys()].sort()).toEqual(["DISABLED", "RATE_LIMITED", "USAGE_EXCEEDED", "VALID"]);
  });

  it.skipIf(backend.skip !== undefined)("returns the load's counts by hour and outcome", async () => {
    const res = await unkey.analytics.getVerifications({
      query:
        "SELECT toStartOfHour(fromUnixTimestamp64Milli(time)) AS hour, outcome, count(*) AS total FROM key_verifications_v1 " +
        `WHERE time >= ${T0 - HOUR} GROUP BY hour, outcome ORDER BY hour, outcome`,
    });
    const want = [...expected]
      .sort(([a], [b]) => a - b)
      .flatMap(([hour, byOutcome]) =>
        [...byOutcome].sort(([a], [b]) => a.localeCompare(b)).map(([outcome, total]) => ({ hour, outcome, total })),
      );
    expect(res.data).toEqual(want);
  });

  it.skipIf(backend.skip !== undefined)("refusals are the SDK's typed 400 errors with production's types", async () => {
    for (const [query, kind] of [
      ["DELETE FROM key_verifications_v1", "invalid_analytics_query_type"],
      ["SELECT * FROM system.tables", "invalid_analytics_table"],
      ["SELECT uniq(key_id) FROM key_verifications_v1", "invalid_analytics_function"],
      ["SELECT nope FROM key_verifications_v1", "invalid_analytics_query"],
      ["SELECT count(*) FROM key_verifications_v1 WHERE time >= now() - INTERVAL 45 DAY", "query_range_exceeds_retention"],
    ] as const) {
      const err = await unkey.analytics.getVerifications({ query }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, query).toBeInstanceOf(errors.BadRequestErrorResponse);
      expect((err as errors.BadRequestErrorResponse).data$.error.type).toBe(
        `https://unkey.com/docs/api-reference/errors-v2/user/bad_request/${kind}`,
      );
    }
  });
});
