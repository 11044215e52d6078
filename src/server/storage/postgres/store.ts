// The PostgreSQL + Redis storage backend, for several service instances sharing one state:
// records in PostgreSQL (one transaction per operation, rows read there locked), rate-limit
// counters in Redis (one script per check; a single server, over TLS or not, or a Redis Cluster).
// The records a verification reads (root keys, APIs, permissions, roles, keys, identities) are kept
// in the process for reads outside transactions, and every instance forgets them when one changes,
// before the change is answered (record-cache.ts); credit balances and counters are never kept.
import type * as PgModule from "pg";
import type { Pool, PoolClient } from "pg";
import type * as IoredisModule from "ioredis";
import type { Cluster, Redis } from "ioredis";
import { optionNames } from "../../../config-error";
import { parseRedisTarget, redisConnection, slotPrefix, type RedisTarget } from "../../../redis-connection";
import { serviceChecks, StoreUnavailableError } from "../../errors";
import type { AnalyticsPlan, AnalyticsScope } from "../../analytics/plan";
import {
  RunAgain,
  type AuditChainCursor,
  type RatelimitCountQuery,
  type Storage,
  type StorageTx,
  type TransactionOptions,
  type WebhookQuery,
} from "../seam";
import { type AuditEvent, type RatelimitCount, type VerificationEvent, type WebhookMessage } from "../../records";
import { auditHeads, deleteAuditBefore, readAuditChain } from "./audit";
import type { ChainHead } from "../../domain/audit-chain";
import * as outbox from "./outbox";
import { appendEvents, deleteEventsBefore, queryEvents } from "./events";
import { loadPeer } from "../../peer-module";
import { addCounts, readCounts } from "./ratelimit-counts";
import { migrate, quoteIdent } from "./schema";
import { PgTx } from "./tx";
import { CHANGED_SQLSTATE, optimisticTx } from "./optimistic";
import { CHAIN_TURNS, Turns } from "./chain-turns";
import type { Query } from "./query";
import { RedisLimits } from "./redis-limits";
import { RecordCache } from "./record-cache";
import { describeServer, storeError } from "../store-errors";
import { AnalyticsTimeoutError, DEFAULT_ANALYTICS_TIMEOUT_MS } from "../../analytics/time-limit";

export interface PostgresStorageOptions {
  /** PostgreSQL connection URL, e.g. `postgres://user:password@127.0.0.1:5432/keyguard`. Required. */
  postgres: string;
  /** Redis connection URL, e.g. `redis://127.0.0.1:6379/0`, or `rediss://…` for TLS. Required. */
  redis: string;
  /**
   * PEM file of the CA certificates that signed a `rediss://` server's certificate, trusted besides
   * Node's own (a managed Redis with a private CA). Read when the store opens. Default: none.
   */
  redisCaFile?: string;
  /**
   * The `redis` URL names one node of a Redis Cluster: the counters live on the cluster, all in one
   * hash slot (`{…}` around the prefix unless it holds a hash tag). Default: false.
   */
  redisCluster?: boolean;
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
  /**
   * How long the records a verification reads (root keys, APIs, permissions, roles; keys and
   * identities with `cacheKeys`) are kept in the process once read outside a transaction, ms; `0`
   * keeps nothing. A change through any instance empties every instance's cache
   * before it is answered (through Redis); the TTL bounds how long an instance that missed the
   * message could serve an old record. Default: `10000`.
   */
  recordCacheTtlMs?: number;
  /** Most records kept by that cache. Default: `10000`. */
  recordCacheSize?: number;
  /**
   * Keep keys (found by their hash) and identities in that cache too: a keys.verifyKey then makes no
   * PostgreSQL round trip for a key without credits, and one (the charge, a single `UPDATE`) for a
   * key with credits, whose balance is always charged and read in PostgreSQL. A key deleted,
   * disabled or changed through one instance is refused by the others once the message reaches them
   * through Redis (on loopback, about a millisecond), not at once; `recordCacheTtlMs` bounds it when
   * a message is lost. `false`: every verification reads its key from PostgreSQL. Default: `true`.
   */
  cacheKeys?: boolean;
  /**
   * Run the statements of records as named prepared statements (parsed and planned once per
   * connection). Turn off behind a pooler that cannot keep them, such as PgBouncer in transaction
   * mode before 1.21. Default: `true`.
   */
  preparedStatements?: boolean;
  /**
   * Run a write that reads a few records by id before it writes (keys.createKey without
   * permissions, roles or an external id) optimistically: the records read as outside a
   * transaction (through the record cache), then one statement that checks they are unchanged and
   * makes every write, one round trip where a transaction takes five. Where one changed meanwhile,
   * the write runs again as a transaction.
   * `false`: every write is a transaction with locks. Default: `true`.
   */
  optimisticWrites?: boolean;
  /**
   * Time limit of one analytics query, ms, waiting for a connection included; past it
   * getVerifications answers 422 `query_execution_timeout`. The queries run on a pool of their
   * own (two connections), so they never hold the connections verifications need. Default 10000.
   */
  analyticsTimeoutMs?: number;
}

/** Connections of the analytics queries' own pool. */
const ANALYTICS_POOL_SIZE = 2;

/** Most prepared statements per connection (see `statementName`). */
const MAX_STATEMENTS = 500;

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
  redis: RedisTarget;
  schema: string;
  redisPrefix: string;
  poolSize: number;
  timeoutMs: number;
  recordCacheTtlMs: number;
  recordCacheSize: number;
  cacheKeys: boolean;
  preparedStatements: boolean;
  optimisticWrites: boolean;
  analyticsTimeoutMs: number;
}

const OPTION_NAMES = optionNames<PostgresStorageOptions>()({
  postgres: true,
  redis: true,
  redisCaFile: true,
  redisCluster: true,
  schema: true,
  redisPrefix: true,
  poolSize: true,
  timeoutMs: true,
  recordCacheTtlMs: true,
  recordCacheSize: true,
  cacheKeys: true,
  preparedStatements: true,
  optimisticWrites: true,
  analyticsTimeoutMs: true,
});
const check = serviceChecks("keyguard/server: postgresStorage");

function parseConfig(input: PostgresStorageOptions): Config & { pgWhere: string } {
  if (input === undefined) check.fail("options", "pass { postgres, redis }.");
  const options = check.options(input, "Pass { postgres, redis }.") as unknown as PostgresStorageOptions;
  check.unknownNames(Object.keys(options), OPTION_NAMES);
  // Connection URLs hold passwords: only their kind is shown.
  const pgUrl = check.url("postgres", options.postgres, {
    protocols: ["postgres:", "postgresql:"],
    example: "postgres://user:password@127.0.0.1:5432/keyguard",
  });
  const redis = parseRedisTarget(
    check,
    { url: "redis", caFile: "redisCaFile", cluster: "redisCluster" },
    { url: options.redis, caFile: options.redisCaFile, cluster: options.redisCluster },
  );
  const schema = check.string("schema", options.schema, {
    pattern: /^[A-Za-z_][A-Za-z0-9_]{0,62}$/,
    default: "keyguard",
    fix: "Use 1..63 letters, digits or _, not starting with a digit.",
  });
  const prefix = check.string("redisPrefix", options.redisPrefix, {
    pattern: /./,
    default: `keyguard:${schema}:`,
    fix: 'Use a non-empty string such as "keyguard:".',
  });
  // On a cluster every key of a script must hash to one slot.
  const redisPrefix = redis.cluster ? slotPrefix(prefix) : prefix;
  const poolSize = check.integer("poolSize", options.poolSize, { min: 1, max: 1000, default: 10 });
  const timeoutMs = check.duration("timeoutMs", options.timeoutMs, { min: 100, default: 5000 });
  const recordCacheTtlMs = check.integer("recordCacheTtlMs", options.recordCacheTtlMs, { min: 0, max: 3_600_000, default: 10_000 });
  const recordCacheSize = check.integer("recordCacheSize", options.recordCacheSize, { min: 1, max: 10_000_000, default: 10_000 });
  const cacheKeys = check.boolean("cacheKeys", options.cacheKeys, true);
  const preparedStatements = check.boolean("preparedStatements", options.preparedStatements, true);
  const optimisticWrites = check.boolean("optimisticWrites", options.optimisticWrites, true);
  const analyticsTimeoutMs = check.duration("analyticsTimeoutMs", options.analyticsTimeoutMs, {
    min: 1,
    default: DEFAULT_ANALYTICS_TIMEOUT_MS,
  });
  return {
    postgres: options.postgres,
    redis,
    schema,
    redisPrefix,
    poolSize,
    timeoutMs,
    recordCacheTtlMs,
    recordCacheSize,
    cacheKeys,
    preparedStatements,
    optimisticWrites,
    analyticsTimeoutMs,
    pgWhere: describeServer(pgUrl, 5432),
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
  const connect = (subscriber = false) =>
    redisConnection(
      ioredis,
      config.redis,
      {
        // The record cache subscribes again itself on each reconnect: ioredis's own resubscription
        // leaves its failure (a connection lost before the answer) an unhandled rejection.
        ...(subscriber && { autoResubscribe: false }),
        lazyConnect: true,
        // Fail a call at once while Redis is away (503), instead of queueing it or retrying it.
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        connectTimeout: config.timeoutMs,
        commandTimeout: config.timeoutMs,
        // Reconnect forever, backing off to one attempt every 2 s.
        retryStrategy: (times) => Math.min(times * 100, 2000),
      },
      {
        clusterRetryStrategy: (times) => Math.min(times * 100, 2000),
        // After a failover the new master is learnt from a MOVED answer or from this refresh.
        slotsRefreshInterval: 2000,
        slotsRefreshTimeout: Math.min(config.timeoutMs, 2000),
      },
    );
  const redis = connect();
  // connect() rejects with "Connection is closed" once ioredis gives up; why it could not connect
  // (refused, host not found, …) is in the last error it emitted.
  let lastRedisError: unknown;
  redis.on("error", (err: unknown) => (lastRedisError = err));
  const cacheOn = config.recordCacheTtlMs > 0;
  // The record cache's subscriber: on a cluster, ioredis subscribes on one node and moves when it ends.
  const subscriber = cacheOn ? connect(true) : undefined;
  subscriber?.on("error", () => undefined);
  const cache = new RecordCache(
    { ttlMs: config.recordCacheTtlMs, size: config.recordCacheSize, keys: config.cacheKeys },
    subscriber,
    redis,
    config.redisPrefix,
    config.redis.cluster ? 0 : ((redis as { options?: { db?: number } }).options?.db ?? 0),
  );
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
      throw storeError(lastRedisError ?? err, "redis", config.redis.where);
    });
    await cache.start().catch((err: unknown) => {
      throw storeError(err, "redis", config.redis.where);
    });
  } catch (err) {
    redis.disconnect();
    cache.close();
    await pool.end().catch(() => undefined);
    throw err;
  }
  // The analytics queries' pool: PostgreSQL cancels a statement past the limit (statement_timeout).
  const analyticsPool = new pg.Pool({
    connectionString: config.postgres,
    max: ANALYTICS_POOL_SIZE,
    connectionTimeoutMillis: config.analyticsTimeoutMs,
    statement_timeout: config.analyticsTimeoutMs,
    query_timeout: config.analyticsTimeoutMs + config.timeoutMs,
    idleTimeoutMillis: 30_000,
    application_name: "keyguard-analytics",
    // One core per query at most: a parallel plan would take the cores the verifications need.
    options: "-c max_parallel_workers_per_gather=0",
  });
  analyticsPool.on("error", () => undefined);
  return new PostgresStore(pool, analyticsPool, redis, cache, config);
}

class PostgresStore implements Storage {
  readonly kind = "postgres";
  readonly direct: StorageTx;
  private readonly limits: RedisLimits;
  /** Statements on the pool, each alone. */
  private readonly pooled: Query;
  /** The same as named prepared statements: the records' statements. */
  private readonly prepared: Query;
  /** The schema's name, quoted. */
  private readonly quotedSchema: string;
  private readonly t: (table: string) => string;
  private closing: Promise<void> | undefined;
  /** Names of the records' statements: each connection parses and plans one of them once, not at every call. */
  private readonly statements = new Map<string, string>();
  /** Turns of the workspaces' audit chains for one-statement writes (chain-turns.ts). */
  private readonly chainTurns = new Turns(CHAIN_TURNS);

  constructor(
    private readonly pool: Pool,
    private readonly analyticsPool: Pool,
    private readonly redis: Redis | Cluster,
    private readonly cache: RecordCache,
    private readonly config: Config & { pgWhere: string },
  ) {
    this.limits = new RedisLimits(redis, config.redisPrefix, config.redis.where);
    const pooled: Query = async <R>(text: string, params?: readonly unknown[]) => {
      try {
        return (await pool.query(text, params as unknown[])).rows as R[];
      } catch (err) {
        throw storeError(err, "postgres", config.pgWhere);
      }
    };
    const direct: Query = async <R>(text: string, params?: readonly unknown[]) => {
      try {
        return (await pool.query({ name: this.statementName(text), text, values: params as unknown[] })).rows as R[];
      } catch (err) {
        throw storeError(err, "postgres", config.pgWhere);
      }
    };
    this.direct = new PgTx(
      direct,
      config.schema,
      this.limits,
      false,
      () => cache.changed(),
      (table) => cache.announces(table),
      (fn) => this.transaction(fn),
      cache,
    );
    this.pooled = pooled;
    this.prepared = direct;
    const s = quoteIdent(config.schema);
    this.quotedSchema = s;
    this.t = (table) => `${s}.${table}`;
  }

  /**
   * The prepared statement's name for `text` (none with `preparedStatements: false`). The
   * statements of records are a few dozen texts; past a bound (never reached by this store's
   * statements) a text runs unnamed.
   */
  private statementName(text: string): string | undefined {
    let name = this.statements.get(text);
    if (name === undefined && this.config.preparedStatements && this.statements.size < MAX_STATEMENTS) {
      name = `keyguard_${this.statements.size}`;
      this.statements.set(text, name);
    }
    return name;
  }

  appendVerifications(events: readonly VerificationEvent[]): Promise<void> {
    return appendEvents(this.pooled, this.t, events);
  }

  deleteVerificationsBefore(before: number, signal?: AbortSignal): Promise<number> {
    return deleteEventsBefore(this.pooled, this.t, before, signal);
  }

  addRatelimitCounts(counts: readonly RatelimitCount[]): Promise<void> {
    return addCounts(this.pooled, this.t, counts);
  }

  ratelimitCounts(query: RatelimitCountQuery): Promise<RatelimitCount[]> {
    return readCounts(this.pooled, this.t, query);
  }

  queryVerifications(plan: AnalyticsPlan, scope: AnalyticsScope): Promise<Array<Record<string, unknown>>> {
    const { analyticsTimeoutMs: limit, pgWhere } = this.config;
    const started = Date.now();
    const query: Query = async <R>(text: string, params?: readonly unknown[]) => {
      try {
        return (await this.analyticsPool.query(text, params as unknown[])).rows as R[];
      } catch (err) {
        // Cancelled by statement_timeout (57014), or no connection or answer in time: the query's limit.
        if ((err as { code?: string }).code === "57014" || Date.now() - started >= limit) throw new AnalyticsTimeoutError(limit);
        throw storeError(err, "postgres", pgWhere);
      }
    };
    return queryEvents(query, this.t, plan, scope);
  }

  claimWebhooks(now: number, limit: number, leaseMs: number): Promise<WebhookMessage[]> {
    return outbox.claimWebhooks(this.pooled, this.t, now, limit, leaseMs);
  }

  settleWebhook(message: WebhookMessage): Promise<void> {
    return outbox.settleWebhook(this.pooled, this.t, message);
  }

  getWebhook(messageId: string): Promise<WebhookMessage | undefined> {
    return outbox.getWebhook(this.pooled, this.t, messageId);
  }

  listWebhooks(query: WebhookQuery): Promise<WebhookMessage[]> {
    return outbox.listWebhooks(this.pooled, this.t, query);
  }

  deleteAuditBefore(before: number): Promise<number> {
    return deleteAuditBefore(this.pooled, this.t, before);
  }

  auditHeads(): Promise<Map<string, ChainHead>> {
    return auditHeads(this.pooled, this.t);
  }

  readAuditChain(workspaceId: string, after: AuditChainCursor | undefined, limit: number): Promise<AuditEvent[]> {
    return readAuditChain(this.pooled, this.t, workspaceId, after, limit);
  }

  async transaction<T>(fn: (tx: StorageTx) => Promise<T>, options?: TransactionOptions): Promise<T> {
    if (options?.optimistic && this.config.optimisticWrites) {
      const done = await this.optimistically(fn);
      if (done) return done.value;
    }
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

  /**
   * One optimistic attempt (optimistic.ts): its value, or undefined when it was given up (a record
   * read changed, a race PostgreSQL broke, or `fn` called what cannot wait) and nothing was written.
   */
  private async optimistically<T>(fn: (tx: StorageTx) => Promise<T>): Promise<{ value: T } | undefined> {
    const tx = optimisticTx(this.direct, this.prepared, this.quotedSchema, this.t, (table) => this.cache.announces(table), this.chainTurns);
    try {
      const value = await fn(tx);
      // Before the caller answers, as a transaction's: every instance forgets the records changed.
      if (await tx.commit()) await this.cache.changed();
      return { value };
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (
        err instanceof RunAgain ||
        tx.abandoned() ||
        code === CHANGED_SQLSTATE ||
        (typeof code === "string" && RETRY_SQLSTATE.has(code))
      ) {
        return undefined;
      }
      throw err;
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
        return (await client.query({ name: this.statementName(text), text, values: params as unknown[] })).rows as R[];
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
    let changed = false;
    const noteChange = () => {
      changed = true;
    };
    try {
      await query("BEGIN");
      const out = await fn(new PgTx(query, this.config.schema, this.limits, true, noteChange, (table) => this.cache.announces(table)));
      await query("COMMIT");
      // Before the caller answers: every instance forgets the records this transaction changed.
      if (changed) await this.cache.changed();
      return out;
    } catch (err) {
      if (broken === undefined) await client.query("ROLLBACK").catch((e: unknown) => (broken = e));
      throw err;
    } finally {
      client.off("error", onError);
      client.release(broken === undefined ? undefined : broken instanceof Error ? broken : true);
    }
  }

  async ping(): Promise<void> {
    await this.pooled("SELECT 1");
    const redis = this.redis;
    // On a cluster every master answers (each holds some slots).
    const nodes: Array<Redis | Cluster> = "isCluster" in redis && redis.isCluster ? (redis as Cluster).nodes("master") : [redis];
    const { where } = this.config.redis;
    try {
      if (nodes.length === 0) throw new Error("no master of the cluster is known");
      await Promise.all(nodes.map((node) => node.ping()));
    } catch (err) {
      // Whatever the failure, Redis does not answer now.
      const mapped = storeError(err, "redis", where);
      throw mapped instanceof StoreUnavailableError
        ? mapped
        : new StoreUnavailableError(`Redis at ${where} is unavailable: ${(err as Error).message}`, { cause: err });
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.redis.disconnect();
      this.cache.close();
      await this.analyticsPool.end().catch(() => undefined);
      await this.pool.end().catch(() => undefined);
    })();
    return this.closing;
  }
}
