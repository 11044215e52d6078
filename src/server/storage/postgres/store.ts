// The PostgreSQL + Redis storage backend, for several service instances sharing one state:
// records in PostgreSQL (one transaction per operation, rows read there locked), rate-limit
// counters in Redis (one script per check). Nothing is cached in the process, so a change made
// through one instance is seen by every other at once.
import type * as PgModule from "pg";
import type { Pool, PoolClient } from "pg";
import type * as IoredisModule from "ioredis";
import type { Redis, RedisOptions } from "ioredis";
import { optionNames } from "../../../config-error";
import { serviceChecks } from "../../options";
import type { AnalyticsPlan, AnalyticsScope } from "../../analytics/plan";
import type { Storage, StorageTx, VerificationEvent } from "../seam";
import { appendEvents, deleteEventsBefore, queryEvents } from "./events";
import { loadPeer } from "../peer-module";
import { migrate, quoteIdent } from "./schema";
import { PgTx, type Query } from "./tx";
import { RedisLimits } from "./redis-limits";
import { describeServer, storeError } from "../store-errors";

export interface PostgresStorageOptions {
  /** PostgreSQL connection URL, e.g. `postgres://user:password@127.0.0.1:5432/keyguard`. Required. */
  postgres: string;
  /** Redis connection URL, e.g. `redis://127.0.0.1:6379/0`. Required. */
  redis: string;
  /** PostgreSQL schema holding the tables (created when missing). Default: `"keyguard"`. */
  schema?: string;
  /** Start of every Redis key written. Default: `"keyguard:<schema>:"`. */
  redisPrefix?: string;
  /** Most PostgreSQL connections this store opens. Default: `10`. */
  poolSize?: number;
  /**
   * How long one PostgreSQL statement or Redis command (or making a connection) may take before
   * the call fails with `StoreUnavailableError`, ms. Default: `5000`.
   */
  timeoutMs?: number;
}

/** Attempts of a transaction that PostgreSQL aborted for a deadlock or a unique-key race. */
const TRANSACTION_ATTEMPTS = 5;

/**
 * SQLSTATEs after which running the transaction again is right: serialization failure, deadlock
 * (two transactions locking rows in different orders), unique violation (two transactions
 * inserting the same hash; the retry sees the committed row).
 */
const RETRY_SQLSTATE = new Set(["40001", "40P01", "23505"]);

interface Config {
  postgres: string;
  redis: string;
  schema: string;
  redisPrefix: string;
  poolSize: number;
  timeoutMs: number;
}

const OPTION_NAMES = optionNames<PostgresStorageOptions>()({
  postgres: true,
  redis: true,
  schema: true,
  redisPrefix: true,
  poolSize: true,
  timeoutMs: true,
});
const check = serviceChecks("keyguard/server: postgresStorage");

function parseConfig(input: PostgresStorageOptions): Config & { pgWhere: string; redisWhere: string } {
  if (input === undefined) check.fail("options", "pass { postgres, redis }.");
  const options = check.options(input, "Pass { postgres, redis }.") as unknown as PostgresStorageOptions;
  check.unknownNames(Object.keys(options), OPTION_NAMES);
  // Connection URLs hold passwords: only their kind is shown.
  const pgUrl = check.url("postgres", options.postgres, {
    protocols: ["postgres:", "postgresql:"],
    example: "postgres://user:password@127.0.0.1:5432/keyguard",
  });
  const redisUrl = check.url("redis", options.redis, { protocols: ["redis:", "rediss:"], example: "redis://127.0.0.1:6379" });
  const schema = check.string("schema", options.schema, {
    pattern: /^[A-Za-z_][A-Za-z0-9_]{0,62}$/,
    default: "keyguard",
    fix: "Use 1..63 letters, digits or _, not starting with a digit.",
  });
  const redisPrefix = check.string("redisPrefix", options.redisPrefix, {
    pattern: /./,
    default: `keyguard:${schema}:`,
    fix: 'Use a non-empty string such as "keyguard:".',
  });
  const poolSize = check.integer("poolSize", options.poolSize, { min: 1, max: 1000, default: 10 });
  const timeoutMs = check.duration("timeoutMs", options.timeoutMs, { min: 100, default: 5000 });
  return {
    postgres: options.postgres,
    redis: options.redis,
    schema,
    redisPrefix,
    poolSize,
    timeoutMs,
    pgWhere: describeServer(pgUrl, 5432),
    redisWhere: describeServer(redisUrl, 6379),
  };
}

/**
 * Opens the PostgreSQL + Redis store: connects to both (failing with `StoreUnavailableError`
 * when either cannot be reached), and brings the schema up to date under an advisory lock.
 * Needs the packages `pg` and `ioredis` (optional peer dependencies). Throws
 * `LocalServiceConfigError` for a bad option, and for an unknown option name.
 */
export async function postgresStorage(options: PostgresStorageOptions): Promise<Storage> {
  const config = parseConfig(options);
  const pg = await loadPeer<typeof PgModule>("pg", "the PostgreSQL store (postgres option, --postgres)", () => import("pg"));
  const ioredis = await loadPeer<typeof IoredisModule>(
    "ioredis",
    "the PostgreSQL store's rate limits (redis option, --redis)",
    () => import("ioredis"),
  );
  const pool = new pg.Pool({
    connectionString: config.postgres,
    max: config.poolSize,
    connectionTimeoutMillis: config.timeoutMs,
    query_timeout: config.timeoutMs,
    idleTimeoutMillis: 30_000,
    application_name: "keyguard",
  });
  // A pooled connection that breaks while idle (a server restart) is dropped by the pool; the
  // next call reconnects. Without a listener the error would end the process.
  pool.on("error", () => undefined);
  const RedisClass = (ioredis as unknown as { Redis?: typeof Redis }).Redis ?? (ioredis as unknown as typeof Redis);
  const redisOptions: RedisOptions = {
    lazyConnect: true,
    // Fail a call at once while Redis is away (503), instead of queueing it or retrying it.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: config.timeoutMs,
    commandTimeout: config.timeoutMs,
    // Reconnect forever, backing off to one attempt every 2 s.
    retryStrategy: (times) => Math.min(times * 100, 2000),
  };
  const redis = new RedisClass(config.redis, redisOptions);
  redis.on("error", () => undefined);
  try {
    const client = await pool.connect().catch((err: unknown) => {
      throw storeError(err, "postgres", config.pgWhere);
    });
    try {
      await migrate(client, config.schema).catch((err: unknown) => {
        throw storeError(err, "postgres", config.pgWhere);
      });
    } finally {
      client.release();
    }
    await redis.connect().catch((err: unknown) => {
      throw storeError(err, "redis", config.redisWhere);
    });
  } catch (err) {
    redis.disconnect();
    await pool.end().catch(() => undefined);
    throw err;
  }
  return new PostgresStore(pool, redis, config);
}

class PostgresStore implements Storage {
  readonly kind = "postgres";
  readonly direct: StorageTx;
  private readonly limits: RedisLimits;
  /** Statements on the pool, each alone. */
  private readonly pooled: Query;
  private readonly t: (table: string) => string;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly redis: Redis,
    private readonly config: Config & { pgWhere: string; redisWhere: string },
  ) {
    this.limits = new RedisLimits(redis, config.redisPrefix, config.redisWhere);
    const direct: Query = async <R>(text: string, params?: readonly unknown[]) => {
      try {
        return (await pool.query(text, params as unknown[])).rows as R[];
      } catch (err) {
        throw storeError(err, "postgres", config.pgWhere);
      }
    };
    this.direct = new PgTx(direct, config.schema, this.limits, false, (fn) => this.transaction(fn));
    this.pooled = direct;
    const s = quoteIdent(config.schema);
    this.t = (table) => `${s}.${table}`;
  }

  appendVerifications(events: readonly VerificationEvent[]): Promise<void> {
    return appendEvents(this.pooled, this.t, events);
  }

  deleteVerificationsBefore(before: number): Promise<number> {
    return deleteEventsBefore(this.pooled, this.t, before);
  }

  queryVerifications(plan: AnalyticsPlan, scope: AnalyticsScope): Promise<Array<Record<string, unknown>>> {
    return queryEvents(this.pooled, this.t, plan, scope);
  }

  async transaction<T>(fn: (tx: StorageTx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.attempt(fn);
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        if (attempt >= TRANSACTION_ATTEMPTS || typeof code !== "string" || !RETRY_SQLSTATE.has(code)) throw err;
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
      }
    }
  }

  private async attempt<T>(fn: (tx: StorageTx) => Promise<T>): Promise<T> {
    const { pgWhere } = this.config;
    const client: PoolClient = await this.pool.connect().catch((err: unknown) => {
      throw storeError(err, "postgres", pgWhere);
    });
    // A connection that breaks between two statements emits "error" on the client: handled here,
    // the statement in flight (or the next one) fails and the client is dropped on release.
    let broken: unknown;
    const onError = (err: unknown) => {
      broken = err;
    };
    client.on("error", onError);
    // One connection runs one statement at a time: statements the operation issues together
    // (Promise.all) wait their turn here rather than queue inside the driver.
    let turn: Promise<unknown> = Promise.resolve();
    const run = async <R>(text: string, params?: readonly unknown[]): Promise<R[]> => {
      try {
        return (await client.query(text, params as unknown[])).rows as R[];
      } catch (err) {
        const mapped = storeError(err, "postgres", pgWhere);
        // An outage leaves the connection unusable: it is dropped, not given back to the pool.
        if (mapped !== err) broken ??= err;
        throw mapped;
      }
    };
    const query: Query = <R>(text: string, params?: readonly unknown[]) => {
      const result = turn.then(() => run<R>(text, params));
      turn = result.catch(() => undefined);
      return result;
    };
    try {
      await query("BEGIN");
      const out = await fn(new PgTx(query, this.config.schema, this.limits, true));
      await query("COMMIT");
      return out;
    } catch (err) {
      if (broken === undefined) await client.query("ROLLBACK").catch((e: unknown) => (broken = e));
      throw err;
    } finally {
      client.off("error", onError);
      client.release(broken === undefined ? undefined : broken instanceof Error ? broken : true);
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.redis.disconnect();
      await this.pool.end().catch(() => undefined);
    })();
    return this.closing;
  }
}
