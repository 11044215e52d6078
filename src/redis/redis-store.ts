// `redisStore()`: a memory tier in front of a shared Redis tier, and the invalidation bus over
// Redis pub/sub. A fleet of apiKeyAuth() instances on one Redis asks the key service once per key
// per TTL (a short lease lets one instance ask while the others wait for its answer), and an
// invalidation on any instance (or from keyguard's client) reaches all of them.
//
// In Redis, under `prefix`: answers (`a:<epoch>:<keyHash>:<queryHash>`, JSON of the service's
// result, with a TTL), their indexes by key hash (`h:`) and keyId (`i:`), leases (`l:`), the
// invalidation sequence (`seq`), the epoch of the last clear (`epoch`), tombstones (`t:h:`,
// `t:i:`) that make Redis refuse an answer whose verification started before an invalidation,
// and counters (`n:<name>`, expiring with their window). Never a key: keys are named by their SHA-256.
//
// Redis trouble never fails a request: every command has a time limit; on failure the store
// answers from memory (or reports a miss), logs one throttled line, and when the subscription
// comes back it forgets the memory tier, since it may have missed invalidations. Invalidations
// that could not be sent are applied here at once and sent when Redis is back.

import { randomUUID } from "node:crypto";
import { ConfigError, optionNames } from "../config-error";
import { createLogThrottle, type Logger } from "../logger";
import { optionChecks, type OptionChecks } from "../option-checks";
import {
  encodeInvalidation,
  invalidateAll,
  INVALIDATION_CHANNEL_SUFFIX,
  parseInvalidation,
  redisChannel,
  type InvalidationMessage,
} from "../protocol/invalidation";
import { keyHash as sha256 } from "../protocol/key-hash";
import type { VerifyKeyResult } from "../protocol/types";
import {
  deepFreeze,
  memoryStore,
  type AnswerRef,
  type CounterState,
  type Lookup,
  type Store,
  type Ticket,
} from "../middleware/cache-store";
import { slotPrefix } from "../redis-connection";
import { openConnections, type RedisClientLike, type RedisClusterLike } from "./connections";

export type { RedisClientLike, RedisClusterLike };

export interface RedisStoreOptions {
  /**
   * An ioredis client (`Redis`, or `Cluster` for a Redis Cluster): its connection settings are used
   * for the store's own two connections.
   */
  client?: RedisClientLike | RedisClusterLike;
  /**
   * A Redis URL (`redis://host:6379/0`, or `rediss://…` for TLS), when no `client` is given. Needs
   * the ioredis package.
   */
  url?: string;
  /**
   * With a `rediss://` url: a PEM file of the CA certificates that signed the server's certificate,
   * trusted besides Node's own (read at once). Default: none.
   */
  caFile?: string;
  /** The url names one node of a Redis Cluster. Default: false. */
  cluster?: boolean;
  /**
   * Prefix of every Redis key and of the channel. Default `"keyguard:"`. On a Redis Cluster it is
   * put in braces (`{keyguard:}`) unless it holds a hash tag, so that every key is in one slot.
   */
  prefix?: string;
  /** Most answers kept in the memory tier. Default 1000. */
  max?: number;
  /** Time limit of one Redis command, ms. Default 250. */
  timeout?: number;
  /** How long one instance may hold the lease on asking the service for an answer, ms. Default 3000. */
  lease?: number;
  /** Receives one throttled warning while Redis is unreachable. Default `defaultLogger`. */
  logger?: Logger;
}

/** A store shared through Redis; also an invalidation publisher for `createClient({ invalidate })`. */
export interface RedisStore extends Store {
  readonly prefix: string;
  /**
   * The pub/sub channel of invalidations: `<prefix>invalidate`, with `:<db>` after it on a Redis
   * database other than 0 (publish/subscribe ignores the database: the number keeps deployments on
   * different databases of one Redis apart).
   */
  readonly channel: string;
  /**
   * Resolves once both connections are up and invalidations are subscribed to (optional to wait
   * for: until then the store answers from memory). Never rejects; stays pending while Redis is away.
   */
  readonly ready: Promise<void>;
  /** A counter in Redis, shared by every store on this prefix; this instance's own while Redis cannot answer. */
  count(name: string, add: number, window: number): Promise<CounterState>;
  /** Closes the store's Redis connections. */
  close(): Promise<void>;
}

const OPTION_NAMES = optionNames<RedisStoreOptions>()({
  client: true,
  url: true,
  caFile: true,
  cluster: true,
  prefix: true,
  max: true,
  timeout: true,
  lease: true,
  logger: true,
});

const DEFAULTS = Object.freeze({ prefix: "keyguard:", max: 1000, timeout: 250, lease: 3000 });
/** How long a tombstone lives in Redis; an answer asked longer ago than half of it is not shared. */
const TOMBSTONE_MS = 60_000;
/** How long other instances call the service themselves after an answer that could not be shared. */
const OPEN_MS = 1000;
const MAX_PENDING = 1000;

// Looks up an answer; on a miss takes the lease when free. Returns {1, seq, json, pttl} for a hit,
// {2, seq} lease taken, {3, seq} lease held by another instance, {4, seq} call the service yourself.
const LOOKUP = `
local p = ARGV[1]
local ep = redis.call('GET', p .. 'epoch') or '0'
local seq = redis.call('GET', p .. 'seq') or '0'
local ek = p .. 'a:' .. ep .. ':' .. ARGV[2] .. ':' .. ARGV[3]
local v = redis.call('GET', ek)
if v then return {1, seq, v, redis.call('PTTL', ek)} end
local lk = p .. 'l:' .. ARGV[2] .. ':' .. ARGV[3]
if redis.call('SET', lk, ARGV[4], 'NX', 'PX', ARGV[5]) then return {2, seq} end
if redis.call('GET', lk) == 'open' then return {4, seq} end
return {3, seq}
`;

// Stores an answer unless an invalidation of its key hash, its keyId or all came after `start`;
// releases the lease (marking it open for a while when nothing was stored).
const SETTLE = `
local p, h, q, kid, start, json, ttl, owner = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7]), ARGV[8]
local lk = p .. 'l:' .. h .. ':' .. q
local function release(stored)
  if owner ~= '' and redis.call('GET', lk) == owner then
    if stored then redis.call('DEL', lk) else redis.call('SET', lk, 'open', 'PX', ARGV[9]) end
  end
  return stored and 1 or 0
end
if json == '' or ttl <= 0 then return release(false) end
local ep = tonumber(redis.call('GET', p .. 'epoch') or '0')
if ep > start then return release(false) end
if tonumber(redis.call('GET', p .. 't:h:' .. h) or '0') > start then return release(false) end
if kid ~= '' and tonumber(redis.call('GET', p .. 't:i:' .. kid) or '0') > start then return release(false) end
local ek = p .. 'a:' .. ep .. ':' .. h .. ':' .. q
redis.call('SET', ek, json, 'PX', ttl)
local hk = p .. 'h:' .. h
redis.call('SADD', hk, ek)
if redis.call('PTTL', hk) < ttl then redis.call('PEXPIRE', hk, ttl) end
if kid ~= '' then
  local ik = p .. 'i:' .. kid
  redis.call('SADD', ik, h)
  if redis.call('PTTL', ik) < ttl then redis.call('PEXPIRE', ik, ttl) end
end
return release(true)
`;

// Records the invalidation (sequence number, tombstone or epoch), deletes what it names, publishes it.
const INVALIDATE = `
local p, kind, id, tomb = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local s = redis.call('INCR', p .. 'seq')
local function dropHash(h)
  local hk = p .. 'h:' .. h
  for _, k in ipairs(redis.call('SMEMBERS', hk)) do redis.call('DEL', k) end
  redis.call('DEL', hk)
end
if kind == 'all' then
  redis.call('SET', p .. 'epoch', s)
elseif kind == 'key' then
  redis.call('SET', p .. 't:h:' .. id, s, 'PX', tomb)
  dropHash(id)
else
  redis.call('SET', p .. 't:i:' .. id, s, 'PX', tomb)
  local ik = p .. 'i:' .. id
  for _, h in ipairs(redis.call('SMEMBERS', ik)) do dropHash(h) end
  redis.call('DEL', ik)
end
redis.call('PUBLISH', ARGV[5], ARGV[6])
return s
`;

// Adds ARGV[3] (0 only reads) to the counter ARGV[2], whose window of ARGV[4] ms the first
// addition opens. Returns {count, ms left of its window}; {0, 0} when none is open.
const COUNT = `
local k = ARGV[1] .. 'n:' .. ARGV[2]
local add, window = tonumber(ARGV[3]), tonumber(ARGV[4])
if add <= 0 then
  local c = tonumber(redis.call('GET', k) or '0')
  if c == 0 then return {0, 0} end
  return {c, math.max(0, redis.call('PTTL', k))}
end
local c = redis.call('INCRBY', k, add)
local t = redis.call('PTTL', k)
if t < 0 then
  redis.call('PEXPIRE', k, window)
  t = window
end
return {c, t}
`;

interface RedisTicket extends Ticket {
  readonly mark: number;
  /** Redis's invalidation sequence at the lookup; undefined when Redis did not answer. */
  readonly seq: string | undefined;
  /** Our lease token, when we hold the lease. */
  readonly owner: string | undefined;
  readonly at: number;
}

const check: OptionChecks = optionChecks("redisStore", ConfigError);

/** The database number a connection selected (ioredis keeps it in its options); 0 when it does not say. */
function databaseOf(connection: unknown): number {
  const db = (connection as { options?: { db?: unknown } }).options?.db;
  return typeof db === "number" && Number.isInteger(db) && db > 0 ? db : 0;
}

/**
 * A store shared by every apiKeyAuth() on the same Redis: one server (TCP or TLS) or a Redis
 * Cluster (all of the store's keys in one hash slot; invalidations over classic pub/sub, which
 * reaches every node).
 *
 * ```ts
 * const store = await redisStore({ url: process.env.REDIS_URL });
 * app.use(apiKeyAuth({ store }));
 * const client = createClient({ invalidate: store }); // deleteKey etc. invalidate the fleet
 * ```
 *
 * Throws `ConfigError` for a bad option; an unknown option name is warned about on `logger`.
 */
export async function redisStore(options: RedisStoreOptions): Promise<RedisStore> {
  if (options === undefined) check.fail("options", "pass { url } or { client }.");
  check.options(options, "Pass { url } or { client }.");
  const given = check.string("prefix", options.prefix, {
    pattern: /^[\x21-\x7e]{0,64}$/,
    default: DEFAULTS.prefix,
    fix: 'Use up to 64 printable ASCII characters without spaces, e.g. "keyguard:".',
  });
  const max = check.integer("max", options.max, { min: 1, default: DEFAULTS.max });
  const timeout = check.duration("timeout", options.timeout, { default: DEFAULTS.timeout });
  const leaseMs = check.duration("lease", options.lease, { default: DEFAULTS.lease });
  const logger = check.logger(options.logger);
  check.unknownNames(Object.keys(options), OPTION_NAMES);
  const { commands, subscriber, cluster } = await openConnections(check, options, timeout);
  const prefix = cluster ? slotPrefix(given) : given;
  /** Declared to Redis as the key of every script (the others it names share its slot). */
  const anchor = `${prefix}seq`;

  const channel = redisChannel(prefix, INVALIDATION_CHANNEL_SUFFIX, cluster ? 0 : databaseOf(commands));
  const memory = memoryStore({ max });
  const throttle = createLogThrottle();
  const pending: InvalidationMessage[] = [];
  let closed = false;
  let subscribedOnce = false;

  function trouble(err: unknown): void {
    const decision = throttle("redis");
    if (!decision.log) return;
    const code = (err as { code?: unknown } | null)?.code;
    logger.warn(
      {
        error: err instanceof Error ? err.name : typeof err,
        ...(typeof code === "string" ? { code } : {}),
        suppressedSinceLastLog: decision.suppressed,
      },
      "keyguard/redis: Redis is unreachable or slow; answering from memory (invalidations are applied here and sent when it is back)",
    );
  }
  for (const connection of [commands, subscriber]) connection.on("error", (err: never) => trouble(err));

  function withTimeout<T>(work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error("Redis command timed out"), { code: "REDIS_TIMEOUT" })), timeout);
    });
    return Promise.race([work, limit]).finally(() => clearTimeout(timer));
  }

  async function send(message: InvalidationMessage): Promise<void> {
    const [kind, id] = message.kind === "all" ? ["all", ""] : message.kind === "key" ? ["key", message.keyHash] : ["keyId", message.keyId];
    await withTimeout(commands.eval(INVALIDATE, 1, anchor, prefix, kind, id, TOMBSTONE_MS, channel, encodeInvalidation(message)));
  }

  async function flushPending(): Promise<void> {
    while (pending.length > 0 && !closed) {
      try {
        await send(pending[0]!);
        pending.shift();
      } catch (err) {
        trouble(err);
        return;
      }
    }
  }
  commands.on("ready", () => void flushPending());
  // Invalidations that failed while the connection stayed up (e.g. a slow Redis) are retried too.
  const retry = setInterval(() => {
    if (pending.length > 0 && commands.status === "ready") void flushPending();
  }, 1000);
  retry.unref();

  subscriber.on("message", (ch: never, text: never) => {
    if (ch !== channel) return;
    const message = parseInvalidation(text);
    if (message !== undefined) memory.apply(message);
  });
  subscriber.on("ready", () => {
    if (!subscribedOnce) {
      subscribedOnce = true;
      return;
    }
    // After a reconnect the memory tier may hold answers whose invalidation was missed: forgotten
    // now, and again once subscribed (answers kept until then could miss one too). The subscription
    // is made here, not by ioredis's own resubscription, whose failure (a connection closed before
    // it is answered) would be an unhandled rejection in the application.
    memory.apply(invalidateAll());
    subscriber.subscribe(channel).then(
      () => memory.apply(invalidateAll()),
      (err: unknown) => {
        if (!closed) trouble(err);
      },
    );
  });
  const ready = Promise.all([
    subscriber.subscribe(channel).catch((err: unknown) => {
      trouble(err);
      return new Promise<never>(() => {});
    }),
    new Promise<void>((resolve) => (commands.status === "ready" ? resolve() : commands.on("ready", () => resolve()))),
  ]).then(() => undefined);

  const queryHash = (query: string) => (query === "" ? "-" : sha256(query));

  function hitFrom(ref: AnswerRef, json: string, pttl: number, mark: number): Lookup | undefined {
    let result: Readonly<VerifyKeyResult>;
    try {
      result = deepFreeze(JSON.parse(json) as VerifyKeyResult);
    } catch {
      return undefined;
    }
    if (typeof result !== "object" || result === null || typeof result.valid !== "boolean") return undefined;
    memory.fill(ref, result, pttl, mark);
    return { hit: result };
  }

  const miss = (ref: AnswerRef, mark: number, seq: string | undefined, owner: string | undefined): Lookup => ({
    ticket: { ref, mark, seq, owner, at: Date.now() } as RedisTicket,
  });

  async function lookupShared(ref: AnswerRef, maxWait: number, mark: number): Promise<Lookup> {
    const owner = randomUUID();
    const until = Date.now() + Math.min(maxWait, leaseMs);
    let pause = 5;
    for (;;) {
      let reply: [number, string, string?, number?];
      try {
        reply = (await withTimeout(
          commands.eval(LOOKUP, 1, anchor, prefix, ref.keyHash, queryHash(ref.query), owner, leaseMs),
        )) as typeof reply;
      } catch (err) {
        trouble(err);
        return miss(ref, mark, undefined, undefined);
      }
      const [code, seq, json, pttl] = reply;
      if (code === 1) return hitFrom(ref, json!, Number(pttl), mark) ?? miss(ref, mark, seq, undefined);
      if (code === 2) return miss(ref, mark, seq, owner);
      if (code === 4 || Date.now() >= until) return miss(ref, mark, seq, undefined);
      // Another instance is asking the service: wait for its answer.
      await new Promise((r) => setTimeout(r, pause));
      pause = Math.min(pause * 2, 50);
    }
  }

  const store: RedisStore = {
    prefix,
    channel,
    ready,
    peek: (ref) => memory.peek(ref),
    lookup(ref, maxWait) {
      const mark = memory.mark();
      const local = memory.lookup(ref);
      if (local.hit !== undefined) return local;
      // Until the invalidations made while Redis was away are sent, Redis may hold what they name.
      if (pending.length > 0 || closed) return miss(ref, mark, undefined, undefined);
      return lookupShared(ref, maxWait, mark);
    },
    settle(ticket, result, ttl) {
      const t = ticket as RedisTicket;
      if (result !== undefined) memory.fill(t.ref, result, ttl, t.mark);
      if (t.seq === undefined || closed) return;
      // An answer asked too long ago could outlive the tombstones that guard it: not shared.
      const share = result !== undefined && ttl > 0 && Date.now() - t.at < TOMBSTONE_MS / 2;
      const keyId = result !== undefined && typeof result.keyId === "string" ? result.keyId : "";
      withTimeout(
        commands.eval(
          SETTLE,
          1,
          anchor,
          prefix,
          t.ref.keyHash,
          queryHash(t.ref.query),
          keyId,
          t.seq,
          share ? JSON.stringify(result) : "",
          share ? ttl : 0,
          t.owner ?? "",
          OPEN_MS,
        ),
      ).catch(trouble);
    },
    async invalidate(message) {
      memory.apply(message);
      if (pending.length === 0) {
        try {
          await send(message);
          return;
        } catch (err) {
          trouble(err);
        }
      }
      if (pending.length >= MAX_PENDING) pending.splice(0, pending.length, invalidateAll());
      else pending.push(message);
    },
    subscribe: (listener) => memory.subscribe(listener),
    async count(name, add, window) {
      // Counted here too: while Redis cannot answer, this instance's own count stands in.
      const own = memory.count(name, add, window);
      if (closed) return own;
      try {
        const [count, resetMs] = (await withTimeout(commands.eval(COUNT, 1, anchor, prefix, name, add, window))) as [number, number];
        return { count: Number(count), resetMs: Number(resetMs) };
      } catch (err) {
        trouble(err);
        return own;
      }
    },
    async close() {
      closed = true;
      clearInterval(retry);
      // QUIT only on a live connection: on a dead one it would wait for a reconnect.
      await Promise.allSettled([commands, subscriber].map((c) => (c.status === "ready" ? withTimeout(c.quit()) : undefined)));
      commands.disconnect();
      subscriber.disconnect();
    },
  };
  return Object.freeze(store);
}
