// redisStore()'s option names: an unknown one is refused before any connection, with the near
// name (as apiKeyAuth() does).
import { afterAll, describe, expect, it } from "vitest";
import { redisStore } from "keyguard/redis";
import { recordingLogger } from "../middleware/helpers";
import { REDIS_URL, removePrefixes, skipWithoutRedis, uniquePrefix } from "./support";

const skip = await skipWithoutRedis("test/fleet/redis-store-options.test.ts (redisStore option names)");
afterAll(() => (skip ? undefined : removePrefixes()));

describe.skipIf(skip)("redisStore option names", () => {
  it("refuses an unknown name, suggesting the near one, before connecting", async () => {
    const logger = recordingLogger();
    const err = await redisStore({ url: REDIS_URL, prefix: uniquePrefix("options"), logger, expiry: 5, timout: 100 } as never).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: "KEYGUARD_CONFIG_ERROR", option: "expiry" });
    expect((err as Error).message).toMatch(/^redisStore: unknown options expiry, timout \(did you mean timeout\?\)/);
    expect(logger.entries).toEqual([]);
  });

  it("says nothing when every name is known", async () => {
    const logger = recordingLogger();
    const store = await redisStore({ url: REDIS_URL, prefix: uniquePrefix("options"), logger, max: 10, timeout: 200, lease: 1000 });
    await store.close();
    expect(logger.entries).toEqual([]);
  });
});
