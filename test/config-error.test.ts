// The one ConfigError base class shared by apiKeyAuth(), createClient() and the local key service.
import { describe, expect, it } from "vitest";

describe("one ConfigError base for every entry point", () => {
  it("createClient's, apiKeyAuth's and the local service's configuration errors are all ConfigError", async () => {
    const { ConfigError, apiKeyAuth, silentLogger } = await import("keyguard");
    const { createClient, KeyServiceConfigError } = await import("keyguard/client");
    const { createLocalKeyService, LocalServiceConfigError } = await import("keyguard/local");
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
    expect([client, middleware, local].map((e) => [(e as InstanceType<typeof ConfigError>).code, (e as InstanceType<typeof ConfigError>).option])).toEqual([
      ["KEY_SERVICE_CONFIG_ERROR", "timeout"],
      ["KEYGUARD_CONFIG_ERROR", "realm"],
      ["LOCAL_SERVICE_CONFIG_ERROR", "port"],
    ]);
  });

  it("ERROR_CODES.config is the code of apiKeyAuth's ConfigError", async () => {
    const { ConfigError, ERROR_CODES } = await import("keyguard");
    expect(ERROR_CODES.config).toBe("KEYGUARD_CONFIG_ERROR");
    expect(new ConfigError("x", "x").code).toBe(ERROR_CODES.config);
  });
});
