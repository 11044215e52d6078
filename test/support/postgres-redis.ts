// PostgreSQL and Redis for the tests of the PostgreSQL + Redis store: whether they are reachable
// (a suite skips, saying why, when they are not, unless CI is set: then it fails), and a schema
// and Redis key prefix of a test's own, so helpers running at the same time never share state.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { Redis } from "ioredis";

export const POSTGRES_URL = process.env.KEYGUARD_TEST_POSTGRES_URL || "postgres://postgres@127.0.0.1:5432/test";
export const REDIS_URL = process.env.KEYGUARD_TEST_REDIS_URL || "redis://127.0.0.1:6379/0";

async function probe(): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
  } catch (err) {
    return `PostgreSQL at ${POSTGRES_URL} is not reachable (${(err as Error).message})`;
  } finally {
    await client.end().catch(() => undefined);
  }
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000, retryStrategy: () => null });
  redis.on("error", () => undefined);
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    return `Redis at ${REDIS_URL} is not reachable (${(err as Error).message})`;
  } finally {
    redis.disconnect();
  }
  return undefined;
}

let probed: Promise<string | undefined> | undefined;

/**
 * Why the suite `name` cannot run here (printed), or undefined when both servers answer. With
 * env CI set, a missing server throws instead: CI must run these suites.
 */
export async function postgresRedisSkipReason(name: string): Promise<string | undefined> {
  probed ??= probe();
  const reason = await probed;
  if (reason === undefined) return undefined;
  if (process.env.CI) throw new Error(`${name}: ${reason}, and CI is set: PostgreSQL and Redis must run in CI.`);
  console.log(
    `[skipped] ${name} did not run: ${reason}. Start PostgreSQL (127.0.0.1:5432, database test) and Redis (127.0.0.1:6379) to run it.`,
  );
  return reason;
}

/**
 * A fresh schema name and Redis key prefix (the store's default prefix for that schema), and a
 * cleanup dropping both.
 */
export function isolatedNamespace(): { schema: string; redisPrefix: string; drop: () => Promise<void> } {
  const schema = `kg_test_${randomBytes(5).toString("hex")}`;
  const redisPrefix = `keyguard:${schema}:`;
  return {
    schema,
    redisPrefix,
    async drop() {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      try {
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await client.end().catch(() => undefined);
      }
      const redis = new Redis(REDIS_URL);
      try {
        let cursor = "0";
        do {
          const [next, keys] = await redis.scan(cursor, "MATCH", `${redisPrefix}*`, "COUNT", 1000);
          cursor = next;
          if (keys.length > 0) await redis.del(...keys);
        } while (cursor !== "0");
      } finally {
        redis.disconnect();
      }
    },
  };
}

/** Subscribed to the PostgreSQL stores' channel of cached records, as each store is. */
export interface RecordsChannel {
  /** Resolves on the next message. */
  nextMessage(): Promise<void>;
  /** Messages heard so far. */
  readonly heard: number;
  close(): void;
}

/** Listens on `<redisPrefix>records`. */
export async function listenToRecords(redisPrefix: string): Promise<RecordsChannel> {
  const listener = new Redis(REDIS_URL);
  await listener.subscribe(`${redisPrefix}records`);
  const waiting: Array<() => void> = [];
  let heard = 0;
  listener.on("message", () => {
    heard++;
    for (const resolve of waiting.splice(0)) resolve();
  });
  return {
    nextMessage: () => new Promise<void>((resolve) => waiting.push(resolve)),
    get heard() {
      return heard;
    },
    close: () => listener.disconnect(),
  };
}
