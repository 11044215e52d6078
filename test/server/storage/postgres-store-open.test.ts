// Opening the PostgreSQL + Redis store: options checked with clear messages (never echoing a
// URL), migrations applied once even when several instances start together, and a schema written
// by a newer version refused.
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { LocalServiceConfigError } from "../../../src/server/errors";
import { StoreUnavailableError } from "../../../src/server/errors";
import { postgresStorage, type PostgresStorageOptions } from "../../../src/server/storage/postgres/store";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";
import { keyRecord } from "../../support/records";
import type { AuditEvent, KeyRecord } from "../../../src/server/records";
import { newId } from "../../../src/server/domain/ids";
import { verifyStoredAudit } from "../../../src/server/storage/audit-verify";

describe("postgresStorage options", () => {
  it.each<[string, Partial<PostgresStorageOptions>, string]>([
    ["no postgres URL", { postgres: undefined }, "invalid option postgres = undefined. Pass a URL such as postgres://"],
    ["not a URL", { postgres: "pw-secret-but-no-url" }, "invalid option postgres = <not a URL>."],
    [
      "another database",
      { postgres: "mysql://u:pw-secret@db/x" },
      "invalid option postgres = <a mysql: URL>. Use a postgres:// or postgresql:// URL",
    ],
    [
      "a Redis URL that is not Redis",
      { redis: "http://u:pw-secret@cache" },
      "invalid option redis = <a http: URL>. Use a redis:// or rediss:// URL",
    ],
    ["a bad schema name", { schema: "drop table;" }, 'invalid option schema = "drop table;". Use 1..63 letters, digits or _'],
    ["an empty Redis prefix", { redisPrefix: "" }, 'invalid option redisPrefix = "".'],
    ["a zero pool", { poolSize: 0 }, "invalid option poolSize = 0. Use a whole number 1..1000 (default 10)."],
    ["a tiny timeout", { timeoutMs: 5 }, "invalid option timeoutMs = 5."],
    ["a negative cache TTL", { recordCacheTtlMs: -1 }, "invalid option recordCacheTtlMs = -1."],
    ["an empty cache", { recordCacheSize: 0 }, "invalid option recordCacheSize = 0."],
    ["prepared statements not a boolean", { preparedStatements: "no" as never }, 'invalid option preparedStatements = "no".'],
    ["cacheKeys not a boolean", { cacheKeys: 1 as never }, "invalid option cacheKeys = 1."],
    ["optimisticWrites not a boolean", { optimisticWrites: "yes" as never }, 'invalid option optimisticWrites = "yes".'],
  ])("%s: LocalServiceConfigError, before any connection", async (_, over, message) => {
    const err = await postgresStorage({ postgres: "postgres://u:pw-secret@127.0.0.1:1/x", redis: "redis://127.0.0.1:1", ...over }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(LocalServiceConfigError);
    expect((err as Error).message).toContain(message);
    expect((err as Error).message).not.toContain("pw-secret");
  });

  it("an unknown option name: LocalServiceConfigError naming it and the near one, before any connection", async () => {
    const err = await postgresStorage({
      postgres: "postgres://u:pw-secret@127.0.0.1:1/x",
      redis: "redis://127.0.0.1:1",
      poolsize: 3,
    } as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(LocalServiceConfigError);
    expect((err as LocalServiceConfigError).option).toBe("poolsize");
    expect((err as Error).message).toBe(
      "keyguard/server: postgresStorage: unknown option poolsize (did you mean poolSize?); the options are postgres, redis, redisCaFile, redisCluster, schema, redisPrefix, poolSize, timeoutMs, recordCacheTtlMs, recordCacheSize, cacheKeys, preparedStatements, optimisticWrites, analyticsTimeoutMs.",
    );
  });
});

const skip = await postgresRedisSkipReason("postgres store: opening and migrations");

describe.skipIf(skip !== undefined)("postgres store: opening and migrations", () => {
  const namespaces: Array<ReturnType<typeof isolatedNamespace>> = [];
  const fresh = () => {
    const ns = isolatedNamespace();
    namespaces.push(ns);
    return ns;
  };
  afterAll(() => Promise.all(namespaces.map((ns) => ns.drop())));

  async function sql<R extends pg.QueryResultRow>(text: string): Promise<R[]> {
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      return (await client.query<R>(text)).rows;
    } finally {
      await client.end();
    }
  }

  it("instances opening a new schema together apply each migration once", async () => {
    const ns = fresh();
    const stores = await Promise.all(
      Array.from({ length: 4 }, () =>
        postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, redisPrefix: ns.redisPrefix }),
      ),
    );
    await Promise.all(stores.map((s) => s.close()));
    const rows = await sql<{ version: number }>(`SELECT version FROM "${ns.schema}".schema_migrations ORDER BY version`);
    expect(rows.map((r) => r.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    // Reopening an up-to-date schema changes nothing.
    const again = await postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, redisPrefix: ns.redisPrefix });
    await again.close();
    await again.close(); // twice is fine
    expect((await sql(`SELECT version FROM "${ns.schema}".schema_migrations`)).length).toBe(13);
  });

  it("a schema at version 1 (before rate-limit namespaces) is brought to the latest version, keeping its records", async () => {
    const ns = fresh();
    const open = () => postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, redisPrefix: ns.redisPrefix });
    const first = await open();
    await first.transaction((tx) => tx.put("workspaces", { id: "ws_v1", name: "kept", createdAt: 1 }));
    await first.close();
    // As version 1 left it.
    await sql(
      `DROP TABLE "${ns.schema}".ratelimit_overrides, "${ns.schema}".ratelimit_namespaces, "${ns.schema}".key_verifications, "${ns.schema}".key_last_used, ` +
        [
          "key_verifications_per_hour",
          "key_verifications_per_day",
          "key_verifications_outcomes_per_hour",
          "key_verifications_outcomes_per_day",
          "audit_events",
          "webhook_outbox",
          "audit_chain",
          "portals",
          "portal_sessions",
          "ratelimit_counts",
        ]
          .map((t) => `"${ns.schema}".${t}`)
          .join(", "),
    );
    await sql(`DROP INDEX "${ns.schema}".keys_by_expiry`);
    await sql(`DELETE FROM "${ns.schema}".schema_migrations WHERE version >= 2`);
    const upgraded = await open();
    try {
      expect(await upgraded.direct.get("workspaces", "ws_v1")).toEqual({ id: "ws_v1", name: "kept", createdAt: 1 });
      await upgraded.transaction((tx) => tx.put("ratelimitNamespaces", { id: "rlns_1", workspaceId: "ws_v1", name: "api", createdAt: 2 }));
      expect(await upgraded.direct.find("ratelimitNamespaces", "ws_v1", "name", "api")).toHaveLength(1);
      // Version 3: verification events and the keys' last use.
      const event = {
        time: 5,
        workspaceId: "ws_v1",
        keySpaceId: "api_1",
        keyId: "key_1",
        identityId: "",
        externalId: "",
        outcome: "VALID",
        tags: [],
        spentCredits: 0,
        requestId: "req_1",
        region: "local",
      };
      await upgraded.appendVerifications([event]);
      expect(await upgraded.direct.lastUsed(["key_1"])).toEqual(new Map([["key_1", 5]]));
      // Version 4: the rollups, kept with the events.
      expect(await sql(`SELECT bucket, outcome, n FROM "${ns.schema}".key_verifications_outcomes_per_hour`)).toEqual([
        { bucket: "0", outcome: "VALID", n: "1" },
      ]);
    } finally {
      await upgraded.close();
    }
    expect(
      (await sql<{ version: number }>(`SELECT version FROM "${ns.schema}".schema_migrations ORDER BY version`)).map((r) => r.version),
    ).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
  });

  it("a schema at version 7 loses the rows a deletion racing writes left (version 8), and keeps the rest", async () => {
    const ns = fresh();
    const open = () => postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, redisPrefix: ns.redisPrefix });
    const w = "ws_v7";
    const key = (id: string, apiId: string, over: Partial<KeyRecord> = {}) =>
      keyRecord({ id, workspaceId: w, apiId, hash: `hash_${id}`, createdAt: 1, ...over });
    const first = await open();
    await first.transaction(async (tx) => {
      await tx.put("apis", { id: "api_kept", workspaceId: w, name: "kept", createdAt: 1 });
      await tx.put("apis", { id: "api_gone", workspaceId: w, name: "gone", createdAt: 1 });
      await tx.put("permissions", { id: "perm_kept", workspaceId: w, name: "k", slug: "k", createdAt: 1 });
      await tx.put("permissions", { id: "perm_gone", workspaceId: w, name: "g", slug: "g", createdAt: 1 });
      await tx.put("roles", { id: "role_kept", workspaceId: w, name: "k", permissionIds: ["perm_kept", "perm_gone"], createdAt: 1 });
      await tx.put("roles", { id: "role_gone", workspaceId: w, name: "g", permissionIds: ["perm_kept"], createdAt: 1 });
      await tx.put("identities", { id: "id_kept", workspaceId: w, externalId: "k", ratelimits: [], createdAt: 1 });
      await tx.put("identities", { id: "id_gone", workspaceId: w, externalId: "g", ratelimits: [], createdAt: 1 });
      await tx.put("keys", key("key_kept", "api_kept", { identityId: "id_kept", permissionIds: ["perm_kept"], roleIds: ["role_kept"] }));
      await tx.put("keys", key("key_linked", "api_kept", { identityId: "id_gone", permissionIds: ["perm_gone"], roleIds: ["role_gone"] }));
      await tx.put("keys", key("key_orphan", "api_gone", { permissionIds: ["perm_kept"], roleIds: ["role_kept"] }));
    });
    await first.close();
    // As a deletion racing writes left them: the rows deleted without what pointed at them.
    for (const [table, id] of [
      ["apis", "api_gone"],
      ["permissions", "perm_gone"],
      ["roles", "role_gone"],
      ["identities", "id_gone"],
    ]) {
      await sql(`DELETE FROM "${ns.schema}".${table} WHERE id = '${id}'`);
    }
    // And as version 7 was: before the audit chain (version 9).
    await sql(
      `DROP TABLE "${ns.schema}".audit_chain, "${ns.schema}".portals, "${ns.schema}".portal_sessions, "${ns.schema}".ratelimit_counts`,
    );
    await sql(`ALTER TABLE "${ns.schema}".audit_events DROP COLUMN chain_seq`);
    await sql(`DELETE FROM "${ns.schema}".schema_migrations WHERE version >= 8`);
    const upgraded = await open();
    try {
      expect(await upgraded.direct.get("keys", "key_orphan")).toBeUndefined();
      expect(await upgraded.direct.keyByHash("hash_key_orphan")).toBeUndefined();
      expect(await upgraded.direct.get("keys", "key_kept")).toEqual(
        key("key_kept", "api_kept", { identityId: "id_kept", permissionIds: ["perm_kept"], roleIds: ["role_kept"] }),
      );
      expect(await upgraded.direct.get("keys", "key_linked")).toEqual(key("key_linked", "api_kept"));
      expect((await upgraded.direct.get("roles", "role_kept"))?.permissionIds).toEqual(["perm_kept"]);
      const links = await sql<{ n: string }>(
        `SELECT (SELECT count(*) FROM "${ns.schema}".key_permissions) + (SELECT count(*) FROM "${ns.schema}".key_roles) AS n`,
      );
      expect(links).toEqual([{ n: "2" }]);
    } finally {
      await upgraded.close();
    }
  });

  it("a workspace's audit chain begun at version 11 goes on after version 12, one line", async () => {
    const ns = fresh();
    const open = () => postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, redisPrefix: ns.redisPrefix });
    const w = "ws_v11";
    const record = (time: number): AuditEvent => ({
      id: newId("aud"),
      time,
      workspaceId: w,
      actorId: "rk_a",
      operation: "keys.updateKey",
      targets: ["key_1"],
      outcome: "success",
      requestId: newId("req"),
      ip: "127.0.0.1",
      change: { name: "n" },
    });
    const first = await open();
    await first.direct.appendAudit(record(1));
    await first.direct.appendAudit(record(2));
    await first.close();
    // As version 11 left the head: no previous hash kept.
    await sql(`ALTER TABLE "${ns.schema}".audit_chain DROP COLUMN prev_hash`);
    await sql(`DELETE FROM "${ns.schema}".schema_migrations WHERE version >= 12`);
    const upgraded = await open();
    try {
      await upgraded.direct.appendAudit(record(3));
      const chain = (await upgraded.direct.listAudit({ workspaceId: w, limit: 10 })).reverse();
      expect(chain.map((e) => e.seq)).toEqual([1, 2, 3]);
      expect(chain[2]!.prevHash).toBe(chain[1]!.hash);
      const verdict = (await verifyStoredAudit(upgraded)).find((v) => v.workspaceId === w);
      expect(verdict).toEqual({
        workspaceId: w,
        summary: { records: 3, unchained: 0, firstSeq: 1, head: { seq: 3, hash: chain[2]!.hash } },
      });
    } finally {
      await upgraded.close();
    }
  });

  it("a database that does not exist: StoreUnavailableError naming it, not the URL", async () => {
    const url = new URL(POSTGRES_URL);
    url.pathname = "/kg_no_such_database";
    url.password = "pw-secret";
    const err = await postgresStorage({ postgres: url.toString(), redis: REDIS_URL }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as Error).message).toMatch(/^PostgreSQL at .+ is unavailable: database "kg_no_such_database" does not exist$/);
    expect((err as Error).message).not.toContain("pw-secret");
  });

  it("refuses a schema written by a newer keyguard", async () => {
    const ns = fresh();
    const store = await postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, redisPrefix: ns.redisPrefix });
    await store.close();
    await sql(`INSERT INTO "${ns.schema}".schema_migrations (version, name) VALUES (999, 'from the future')`);
    await expect(
      postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, redisPrefix: ns.redisPrefix }),
    ).rejects.toThrow(
      `keyguard/server: the PostgreSQL schema ${ns.schema} is at version 999, newer than this keyguard (13). Upgrade keyguard.`,
    );
  });
});
