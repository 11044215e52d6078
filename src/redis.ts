// keyguard/redis: a store shared through Redis for apiKeyAuth({ store }), with revocation across
// the fleet over Redis pub/sub. Needs the ioredis package (an optional peer dependency).
// Re-exports only.

export { redisStore } from "./redis/redis-store";
export type { RedisStore, RedisStoreOptions, RedisClientLike, RedisClusterLike } from "./redis/redis-store";
export type { InvalidationMessage } from "./protocol/invalidation";
