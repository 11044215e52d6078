// The one ConfigError base class shared by apiKeyAuth(), createClient() and the local key service.
import { describe, expect, it } from "vitest";

describe("one ConfigError base for every entry point", () => {
  it("createClient's, apiKeyAuth's and the local service's configuration errors are all ConfigError", async () => {
    const { ConfigError, apiKeyAuth, silentLogger } = await import("keyguard");
    const { createClient, KeyServiceConfigError } = await import("keyguard/client");
    const { createLocalKeyService, LocalServiceConfigError } = await import("keyguard/server");
    const errorOf = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return e;
      }
      throw new Error("did not throw");
    };
    const client = errorOf(() => createClient({ rootKey: "root", timeout: -1, logger: silentLogger }));
    const middleware = errorOf(() => apiKeyAuth({ rootKey: "root", realm: '"', logger: silentLogger }));
    // The local service is created asynchronously: its error is a rejection.
    const local = await Promise.resolve()
      .then(() => createLocalKeyService({ port: -1, logger: silentLogger }))
      .then(
        () => new Error("did not throw"),
        (e: unknown) => e,
      );
    expect(client).toBeInstanceOf(KeyServiceConfigError);
    expect(local).toBeInstanceOf(LocalServiceConfigError);
    for (const e of [client, middleware, local]) expect(e).toBeInstanceOf(ConfigError);
    expect(
      [client, middleware, local].map((e) => [
        (e as InstanceType<typeof ConfigError>).code,
        (e as InstanceType<typeof ConfigError>).option,
      ]),
    ).toEqual([
      ["KEY_SERVICE_CONFIG_ERROR", "timeout"],
      ["KEYGUARD_CONFIG_ERROR", "realm"],
      ["LOCAL_SERVICE_CONFIG_ERROR", "port"],
    ]);
  });

  it("the local service's and redisStore's errors carry the value as shown and the advice apart, never a secret", async () => {
    const { parseOptions } = await import("../src/server/options");
    const { LocalServiceConfigError } = await import("../src/server/errors");
    const { redisStore } = await import("keyguard/redis");
    const { ConfigError } = await import("keyguard");
    const errorOf = async (f: () => unknown) =>
      Promise.resolve()
        .then(f)
        .then(
          () => new Error("did not throw"),
          (e: unknown) => e,
        );
    const cases = [
      [
        await errorOf(() => parseOptions({ verificationRetentionDays: 0 }, {})),
        "verificationRetentionDays",
        "0",
        "Use a whole number of days 1..3650 (default 30).",
      ],
      [
        await errorOf(() => parseOptions({ rootKey: "secret 1234" }, {})),
        "rootKey",
        "<hidden>",
        "Use 8..512 visible ASCII characters (no spaces, control or non-ASCII characters), or leave it unset to generate one.",
      ],
      [
        await errorOf(() => parseOptions({ redis: "redis://:secret@cache" }, {})),
        "redis",
        "<a URL, hidden>",
        "Pass postgres too: PostgreSQL holds the state, Redis only the rate-limit counters.",
      ],
      [
        await errorOf(() => redisStore({ url: "http://u:secret@cache" })),
        "url",
        "<a http: URL>",
        "Use a redis:// or rediss:// URL such as redis://127.0.0.1:6379.",
      ],
      [
        await errorOf(() => redisStore({ url: "redis://cache", prefix: "a b" })),
        "prefix",
        '"a b"',
        'Use up to 64 printable ASCII characters without spaces, e.g. "keyguard:".',
      ],
    ] as const;
    for (const [err, option, shown, fix] of cases) {
      expect(err, option).toBeInstanceOf(ConfigError);
      const e = err as InstanceType<typeof ConfigError>;
      expect([e.option, e.shown, e.fix]).toEqual([option, shown, fix]);
      // The message is made of the same parts, unquoted placeholders included.
      expect(e.message).toContain(shown);
      expect(e.message).toContain(fix.replace(/\.$/, ""));
      expect(e.message).not.toContain("secret");
    }
    expect(cases[0][0]).toBeInstanceOf(LocalServiceConfigError);
  });

  it("ERROR_CODES.config is the code of apiKeyAuth's ConfigError", async () => {
    const { ConfigError, ERROR_CODES } = await import("keyguard");
    expect(ERROR_CODES.config).toBe("KEYGUARD_CONFIG_ERROR");
    expect(new ConfigError("x", "x").code).toBe(ERROR_CODES.config);
  });
});
