// Sliding-window rate-limit counters in Redis: one Lua script checks and charges several limits
// all-or-nothing in one round trip; counters expire on their own; index sets (per owner and per
// limit id) let `dropCounters` find a key's or a limit's counters without scanning the keyspace.
import type { Cluster, Redis } from "ioredis";
import type { LimitCheck, LimitState } from "../../domain/sliding-window";
import { storeError } from "../store-errors";

/**
 * Extra lifetime of a counter past the end of the window after it (where it still counts as the
 * previous window): room for clocks of several instances that disagree, and for test clocks.
 */
const EXPIRY_GRACE_MS = 60_000;

/** How many index sets one `dropCounters` script call empties at most. */
const DROP_BATCH = 500;

// KEYS: the counters (1..n), then the index sets the checks name. ARGV: now, n, grace, then per
// check: limit, duration, cost, index of its owner set in KEYS (0: none), index of its limit-id
// set (0: none). A counter is a hash {d: duration, w: window, c: current, p: previous}. Returns
// {all passed, then per check: passed, remaining, reset}.
const LIMIT_LUA = `
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local grace = tonumber(ARGV[3])
local rows = {}
local all = true
for i = 1, n do
  local b = 3 + (i - 1) * 5
  local limit = tonumber(ARGV[b + 1])
  local duration = tonumber(ARGV[b + 2])
  local cost = tonumber(ARGV[b + 3])
  local window = math.floor(now / duration)
  local v = redis.call('HMGET', KEYS[i], 'd', 'w', 'c', 'p')
  local cur, prev = 0, 0
  if v[1] and tonumber(v[1]) == duration then
    local w = tonumber(v[2])
    if w == window then
      cur = tonumber(v[3])
      prev = tonumber(v[4])
    elseif w == window - 1 then
      prev = tonumber(v[3])
    end
  end
  local used = cur + prev * (1 - (now - window * duration) / duration)
  local ok = used + cost <= limit
  if not ok then all = false end
  rows[i] = { limit, duration, cost, window, cur, prev, used, ok, tonumber(ARGV[b + 4]), tonumber(ARGV[b + 5]) }
end
local out = { all and 1 or 0 }
for i = 1, n do
  local r = rows[i]
  local after = r[7]
  if all then
    after = after + r[3]
    local ttl = math.ceil((r[4] + 2) * r[2] - now + grace)
    redis.call('HSET', KEYS[i], 'd', r[2], 'w', r[4], 'c', r[5] + r[3], 'p', r[6])
    redis.call('PEXPIRE', KEYS[i], ttl)
    for _, s in ipairs({ r[9], r[10] }) do
      if s > 0 then
        redis.call('SADD', KEYS[s], KEYS[i])
        if redis.call('PTTL', KEYS[s]) < ttl then redis.call('PEXPIRE', KEYS[s], ttl) end
      end
    end
  end
  out[#out + 1] = r[8] and 1 or 0
  out[#out + 1] = math.max(0, math.floor(r[1] - after))
  out[#out + 1] = (r[4] + 1) * r[2]
end
return out
`;

// KEYS: index sets. Deletes every counter they name, then the sets.
const DROP_LUA = `
for _, set in ipairs(KEYS) do
  local members = redis.call('SMEMBERS', set)
  for _, counter in ipairs(members) do redis.call('DEL', counter) end
  redis.call('DEL', set)
end
return 0
`;

type ScriptRedis = (Redis | Cluster) & {
  keyguardLimit(numKeys: number, ...args: Array<string | number>): Promise<number[]>;
  keyguardDrop(numKeys: number, ...keys: string[]): Promise<number>;
};

/**
 * The limit id of a counter named `<limit id>/<duration>` (see `limitCounter`), else undefined
 * (a `ratelimit.limit` namespace counter belongs to no limit id).
 */
function limitIdOf(check: LimitCheck): string | undefined {
  const suffix = `/${check.duration}`;
  return check.counter.endsWith(suffix) && check.counter.length > suffix.length ? check.counter.slice(0, -suffix.length) : undefined;
}

export class RedisLimits {
  private readonly redis: ScriptRedis;
  private readonly prefix: string;
  private readonly where: string;

  /**
   * `prefix` starts every Redis key this store writes (tests and several services isolate with
   * it; on a Redis Cluster it holds a hash tag, so that every key of a script is in one slot);
   * `where` (host:port) names the server in errors.
   */
  constructor(redis: Redis | Cluster, prefix: string, where: string) {
    redis.defineCommand("keyguardLimit", { lua: LIMIT_LUA });
    redis.defineCommand("keyguardDrop", { lua: DROP_LUA });
    this.redis = redis as ScriptRedis;
    this.prefix = prefix;
    this.where = where;
  }

  private fail(err: unknown): never {
    throw storeError(err, "redis", this.where);
  }

  private counterKey(counter: string): string {
    return `${this.prefix}c:${counter}`;
  }

  private ownerSet(owner: string): string {
    return `${this.prefix}o:${owner}`;
  }

  private limitSet(limitId: string): string {
    return `${this.prefix}l:${limitId}`;
  }

  async limit(checks: readonly LimitCheck[], now: number): Promise<{ passed: boolean; states: LimitState[] }> {
    if (checks.length === 0) return { passed: true, states: [] };
    const keys = checks.map((c) => this.counterKey(c.counter));
    const setIndex = (set: string): number => {
      const at = keys.indexOf(set, checks.length);
      if (at >= 0) return at + 1;
      keys.push(set);
      return keys.length;
    };
    const args: Array<string | number> = [now, checks.length, EXPIRY_GRACE_MS];
    for (const c of checks) {
      const limitId = limitIdOf(c);
      args.push(c.limit, c.duration, c.cost);
      args.push(c.owner === undefined ? 0 : setIndex(this.ownerSet(c.owner)));
      args.push(limitId === undefined ? 0 : setIndex(this.limitSet(limitId)));
    }
    const out = await this.redis.keyguardLimit(keys.length, ...keys, ...args).catch((err: unknown) => this.fail(err));
    const states = checks.map((_, i) => ({
      passed: out[1 + i * 3] === 1,
      remaining: Number(out[2 + i * 3]),
      reset: Number(out[3 + i * 3]),
    }));
    return { passed: out[0] === 1, states };
  }

  async dropCounters(target: { limitIds: readonly string[] } | { owner: string } | { owners: readonly string[] }): Promise<void> {
    const sets =
      "limitIds" in target
        ? target.limitIds.map((id) => this.limitSet(id))
        : "owners" in target
          ? target.owners.map((o) => this.ownerSet(o))
          : [this.ownerSet(target.owner)];
    for (let i = 0; i < sets.length; i += DROP_BATCH) {
      const batch = sets.slice(i, i + DROP_BATCH);
      await this.redis.keyguardDrop(batch.length, ...batch).catch((err: unknown) => this.fail(err));
    }
  }
}
