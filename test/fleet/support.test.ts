// The fleet suites find the test Redis where every other Redis suite does: env KEYGUARD_TEST_REDIS_URL
// (test/support/postgres-redis.ts), credentials and database included.
import { afterEach, describe, expect, it, vi } from "vitest";

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

describe("the fleet suites' Redis", () => {
  it("comes from KEYGUARD_TEST_REDIS_URL", async () => {
    vi.stubEnv("KEYGUARD_TEST_REDIS_URL", "redis://:pw@10.11.12.13:6390/2");
    vi.resetModules();
    const support = await import("./support");
    expect([support.REDIS_URL, support.REDIS_HOST, support.REDIS_PORT]).toEqual(["redis://:pw@10.11.12.13:6390/2", "10.11.12.13", 6390]);
  });

  it("defaults to 127.0.0.1:6379, database 0", async () => {
    vi.stubEnv("KEYGUARD_TEST_REDIS_URL", "");
    vi.resetModules();
    const support = await import("./support");
    expect([support.REDIS_URL, support.REDIS_HOST, support.REDIS_PORT]).toEqual(["redis://127.0.0.1:6379/0", "127.0.0.1", 6379]);
  });
});
