// createClient's options: the root key and base URL from options or env, defaults, and
// misconfiguration failing fast with the option named.

import { afterEach, describe, expect, it, vi } from "vitest";
import { apiKeyAuth } from "keyguard";
import { KeyServiceConfigError, createClient } from "keyguard/client";
import { parseClientOptions, resolveCallOptions } from "../../src/client/options";
import { silentLogger } from "../../src/logger";
import { ok, recordingLogger, startServer, type TestServer } from "./helpers/fault-server";

let server: TestServer | undefined;
afterEach(async () => {
  vi.unstubAllEnvs();
  await server?.close();
  server = undefined;
});

function configError(fn: () => unknown): KeyServiceConfigError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(KeyServiceConfigError);
    expect((e as KeyServiceConfigError).code).toBe("KEY_SERVICE_CONFIG_ERROR");
    return e as KeyServiceConfigError;
  }
  throw new Error("expected a KeyServiceConfigError");
}

describe("the root key", () => {
  it("is required: the error names UNKEY_ROOT_KEY and rootKey", () => {
    vi.stubEnv("UNKEY_ROOT_KEY", "");
    const err = configError(() => createClient({ logger: silentLogger }));
    expect(err.option).toBe("rootKey");
    expect(err.message).toContain("UNKEY_ROOT_KEY");
    expect(err.message).toContain("rootKey");
    expect(configError(() => parseClientOptions({ rootKey: "   " }, {})).option).toBe("rootKey");
  });

  it("is refused, without being quoted, when it holds a newline or a space", () => {
    const err = configError(() => parseClientOptions({ rootKey: "secret_with_newline\n" }, {}));
    expect(err.option).toBe("rootKey");
    expect(err.message).not.toContain("secret_with_newline");
  });

  it("and the base URL are read from UNKEY_ROOT_KEY and UNKEY_BASE_URL", async () => {
    server = await startServer((_req, res) => ok(res, { valid: false, code: "NOT_FOUND" }));
    vi.stubEnv("UNKEY_ROOT_KEY", "root_from_env");
    vi.stubEnv("UNKEY_BASE_URL", `${server.url}/envprefix`);
    await createClient({ logger: silentLogger }).keys.verifyKey({ key: "k" });
    expect(server.requests[0]).toMatchObject({ url: "/envprefix/v2/keys.verifyKey", headers: { authorization: "Bearer root_from_env" } });
  });

  it("options win over the environment and are not enumerable on the config", () => {
    const config = parseClientOptions(
      { rootKey: "root_opt", baseUrl: "http://127.0.0.1:9/x/" },
      { UNKEY_ROOT_KEY: "root_env", UNKEY_BASE_URL: "http://127.0.0.1:8" },
    );
    expect(config.rootKey).toBe("root_opt");
    expect(config.baseUrl).toBe("http://127.0.0.1:9/x");
    expect(JSON.stringify(config)).not.toContain("root_opt");
    expect(Object.isFrozen(config)).toBe(true);
  });
});

describe("defaults", () => {
  it("fills every default", () => {
    const config = parseClientOptions({ rootKey: "r" }, {});
    expect(config).toMatchObject({
      baseUrl: "https://api.unkey.com",
      timeout: 5000,
      deadline: 31_000,
      retry: { attempts: 5, initialDelay: 1000, factor: 2, maxDelay: 16_000, jitter: 0.2 },
      userAgent: "keyguard",
      maxResponseBytes: 1024 * 1024,
      fetch: undefined, // undici's pool, not a fetch
    });
    expect(parseClientOptions({ rootKey: "r", retry: false }, {}).retry).toBeNull();
  });

  it("does not change the caller's object", () => {
    const options = Object.freeze({ rootKey: "r", retry: Object.freeze({ attempts: 2 }) });
    expect(parseClientOptions(options, {}).retry).toMatchObject({ attempts: 2, initialDelay: 1000 });
  });
});

describe("misconfiguration", () => {
  it.each([
    ["baseUrl", { baseUrl: "not a url" }, "not a url"],
    ["baseUrl", { baseUrl: "ftp://example.com" }, "Use an http:// or https:// URL"],
    ["baseUrl", { baseUrl: "http://example.com/?x=1" }, "query"],
    ["timeout", { timeout: 0 }, "timeout"],
    ["timeout", { timeout: "5000" }, "timeout"],
    ["deadline", { deadline: -1 }, "deadline"],
    ["retry.attempts", { retry: { attempts: 0 } }, "retry.attempts"],
    ["retry.attempts", { retry: { attempts: 1.5 } }, "retry.attempts"],
    ["retry.factor", { retry: { factor: 0.5 } }, "retry.factor"],
    ["retry.jitter", { retry: { jitter: 2 } }, "retry.jitter"],
    ["retry", { retry: true }, "retry"],
    ["retry", { retry: [] }, "invalid option retry = an array. Pass { attempts, initialDelay, factor, maxDelay, jitter } or false."],
    ["fetch", { fetch: "fetch" }, "fetch"],
    ["logger", { logger: {} }, "logger"],
    ["maxResponseBytes", { maxResponseBytes: 0 }, "maxResponseBytes"],
  ])("%s: %j", (option, bad, text) => {
    const err = configError(() => parseClientOptions({ rootKey: "r", ...(bad as object) }, {}));
    expect(err.option).toBe(option);
    expect(err.message).toContain(text);
  });

  it("names UNKEY_BASE_URL when the bad base URL came from the environment", () => {
    expect(configError(() => parseClientOptions({ rootKey: "r" }, { UNKEY_BASE_URL: "nope" })).message).toContain("UNKEY_BASE_URL");
  });

  it("refuses credentials in the base URL without echoing them", () => {
    const err = configError(() => parseClientOptions({ rootKey: "r", baseUrl: "https://user:hunter2@example.com" }, {}));
    expect(err.message).not.toContain("hunter2");
  });

  it("refuses a base URL ending in /v2 (every request would go to …/v2/v2/…), naming the URL to use", () => {
    for (const [baseUrl, use] of [
      ["http://127.0.0.1:8787/v2", "http://127.0.0.1:8787"],
      ["https://api.unkey.com/v2/", "https://api.unkey.com"],
      ["http://h:8787/keys/V2//", "http://h:8787/keys"],
    ]) {
      const err = configError(() => parseClientOptions({ rootKey: "r", baseUrl }, {}));
      expect(err.option).toBe("baseUrl");
      expect(err.message).toContain(`Leave /v2 off: the client adds /v2/<operation> itself. Use ${use}.`);
    }
    expect(configError(() => parseClientOptions({ rootKey: "r" }, { UNKEY_BASE_URL: "http://h/v2" })).message).toMatch(
      /^createClient: invalid option UNKEY_BASE_URL = "http:\/\/h\/v2"\. Leave \/v2 off/,
    );
    // A prefix that merely contains v2 is a prefix like any other.
    expect(parseClientOptions({ rootKey: "r", baseUrl: "http://h/v2x" }, {}).baseUrl).toBe("http://h/v2x");
    expect(parseClientOptions({ rootKey: "r", baseUrl: "http://h/v2/keys" }, {}).baseUrl).toBe("http://h/v2/keys");
    expect(() => apiKeyAuth({ rootKey: "r", baseUrl: "http://127.0.0.1:8787/v2" })).toThrow(
      /^apiKeyAuth: invalid option baseUrl = "http:\/\/127\.0\.0\.1:8787\/v2"\. Leave \/v2 off/,
    );
  });

  it("refuses unknown option names, with a suggestion, before anything else", () => {
    const logger = recordingLogger();
    const err = configError(() => parseClientOptions({ rootKey: "r", logger, retries: 3, retry: { attemps: 2 } } as never, {}));
    expect(err.option).toBe("retries");
    expect(err.message).toMatch(
      /^createClient: unknown options retries, retry\.attemps \(did you mean retry\.attempts\?\); the options are rootKey, baseUrl, .*retry\.jitter, tls\.ca, tls\.cert, tls\.key\.$/,
    );
    expect(logger.calls).toEqual([]);
    expect(() => createClient({ rootKey: "r", baseURL: "http://127.0.0.1:9" } as never)).toThrow(
      /^createClient: unknown option baseURL \(did you mean baseUrl\?\);/,
    );
  });

  it("per-call options are checked too", () => {
    const config = parseClientOptions({ rootKey: "r" }, {});
    expect(() => resolveCallOptions(config, { timeout: -5 }, "keys.verifyKey")).toThrow(/keys\.verifyKey: invalid option timeout = -5\./);
    expect(() => resolveCallOptions(config, { tiemout: 5 } as never, "keys.verifyKey")).toThrow(
      "keys.verifyKey: unknown option tiemout (did you mean timeout?); the options are timeout, deadline, retry, signal.",
    );
    expect(() => resolveCallOptions(config, { signal: {} } as never, "keys.verifyKey")).toThrow(/signal/);
    expect(resolveCallOptions(config, { timeout: 10, retry: { attempts: 2 } }, "op")).toMatchObject({
      timeout: 10,
      deadline: 31_000,
      retry: { attempts: 2, factor: 2 },
    });
  });
});
