// The local service's postgres/redis/postgresSchema options: both servers or neither, not with
// another storage, and never a URL (it may hold a password) in a message.
import { describe, expect, it } from "vitest";
import { createLocalKeyService, memoryStorage } from "keyguard/server";
import { parseOptions, type LocalKeyServiceOptions } from "../../../src/server/options";
import { LocalServiceConfigError } from "../../../src/server/errors";

const PG = "postgres://kg:pw-secret@127.0.0.1:5432/kg";
const REDIS = "redis://:pw-secret@127.0.0.1:6379";

describe("postgres and redis options", () => {
  it.each<[string, LocalKeyServiceOptions, string]>([
    ["postgres alone", { postgres: PG }, "invalid option postgres = <a URL, hidden>. Pass redis too"],
    ["redis alone", { redis: REDIS }, "invalid option redis = <a URL, hidden>. Pass postgres too"],
    [
      "with dataFile",
      { postgres: PG, redis: REDIS, dataFile: "x.json" },
      'invalid option dataFile = "x.json". Pass either dataFile or postgres and redis, not both.',
    ],
    [
      "with storage",
      { postgres: PG, redis: REDIS, storage: memoryStorage() },
      "invalid option storage = <a Storage>. Pass either storage or postgres and redis, not both.",
    ],
    ["an empty URL", { postgres: " ", redis: REDIS }, "invalid option postgres = <a URL, hidden>. Pass a URL such as postgres://"],
    ["a schema alone", { postgresSchema: "other" }, 'invalid option postgresSchema = "other". It applies only with postgres and redis'],
  ])("%s: LocalServiceConfigError", (_, options, message) => {
    let err: unknown;
    try {
      parseOptions(options, {});
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LocalServiceConfigError);
    expect((err as Error).message).toContain(message);
    expect((err as Error).message).not.toContain("pw-secret");
  });

  it("both servers: parsed once, frozen, with the schema when given", () => {
    const config = parseOptions({ postgres: PG, redis: REDIS, postgresSchema: "tenant_a" }, {});
    expect(config.postgres).toEqual({ postgres: PG, redis: REDIS, schema: "tenant_a" });
    expect(Object.isFrozen(config.postgres)).toBe(true);
    expect(parseOptions({}, {}).postgres).toBeUndefined();
  });

  it("a URL of the wrong kind fails the start with LocalServiceConfigError, before any connection", async () => {
    await expect(createLocalKeyService({ postgres: "mysql://kg:pw-secret@db/kg", redis: REDIS })).rejects.toThrow(
      /^keyguard\/server: postgresStorage: invalid option postgres = <a mysql: URL>\. Use a postgres:\/\/ or postgresql:\/\/ URL/,
    );
  });
});
