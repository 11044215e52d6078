// The store conformance suite on the PostgreSQL + Redis backend (real servers, own schema and
// Redis prefix).
import { afterAll } from "vitest";
import { postgresStorage } from "../../../src/server/storage/postgres/store";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";
import { describeStoreConformance } from "./store-conformance";

const skip = await postgresRedisSkipReason("store conformance: postgres + redis");
const ns = isolatedNamespace();
afterAll(async () => {
  if (skip === undefined) await ns.drop();
});

describeStoreConformance(
  "postgres + redis",
  () => postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, redisPrefix: ns.redisPrefix }),
  skip === undefined ? {} : { skip },
);
