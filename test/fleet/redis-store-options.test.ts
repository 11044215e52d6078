// redisStore()'s option names: an unknown one is warned about once on the store's logger, with the
// near name, and the store still starts with the options it knows (as apiKeyAuth() does).
import { afterAll, describe, expect, it } from "vitest";
import { redisStore } from "keyguard/redis";
import { recordingLogger } from "../middleware/helpers";
import { REDIS_URL, removePrefixes, skipWithoutRedis, uniquePrefix } from "./support";

const skip = await skipWithoutRedis("test/fleet/redis-store-options.test.ts (redisStore option names)");
afterAll(() => (skip ? undefined : removePrefixes()));

describe.skipIf(skip)("redisStore option names", () => {
  it("warns once about an unknown name, suggesting the near one, and uses the known ones", async () => {
    const logger = recordingLogger();
    const prefix = uniquePrefix("options");
    const store = await redisStore({ url: REDIS_URL, prefix, logger, expiry: 5, timout: 100 } as never);
    try {
      expect(logger.entries).toEqual([
        {
          level: "warn",
          fields: { unknownOptions: ["expiry", "timout"], didYouMean: { timout: "timeout" } },
          message: "redisStore: ignoring unknown option(s) expiry, timout",
        },
      ]);
      expect(store.prefix).toBe(prefix);
      await store.ready;
    } finally {
      await store.close();
    }
  });

  it("says nothing when every name is known", async () => {
    const logger = recordingLogger();
    const store = await redisStore({ url: REDIS_URL, prefix: uniquePrefix("options"), logger, max: 10, timeout: 200, lease: 1000 });
    await store.close();
    expect(logger.entries).toEqual([]);
  });
});
