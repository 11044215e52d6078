// Factory-time option parsing: defaults, fail-fast messages naming the option, unknown options refused,
// the compiler-checked option list, retry and timeout normalised once by the client's own function.
import type { IncomingMessage } from "node:http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createClient } from "keyguard/client";
import { apiKeyAuth, ConfigError, memoryStore, silentLogger, type ApiKeyAuthOptions } from "keyguard";
import { parseClientOptions, resolveCallOptions } from "../../src/client/options";
import { parseOptions } from "../../src/adapters/express/api-key-auth";
import { OPTION_NAMES } from "../../src/middleware/auth-options";
import { recordingLogger } from "./helpers";

const ok: ApiKeyAuthOptions = { rootKey: "root_key_for_tests", baseUrl: "http://127.0.0.1:9", logger: silentLogger };

afterEach(() => {
  vi.unstubAllEnvs();
});

function configError(build: () => unknown): ConfigError {
  try {
    build();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  return expect.unreachable("no ConfigError thrown");
}

describe("parseOptions", () => {
  it("fills every default and freezes the config", () => {
    const config = parseOptions(ok);
    expect(config).toMatchObject({
      extract: { bearer: true, header: "x-api-key", headerLabel: "X-API-Key" },
      optional: false,
      passErrors: false,
      hideCredentials: false,
      allowPreflight: true,
      onServiceError: "closed",
      staleIfError: 0,
      call: { settings: { timeout: 1000, deadline: 2500, retry: { attempts: 2, initialDelay: 100 } } },
      cache: { ttl: 30_000, negativeTtl: 5_000 },
      denial: { realm: "api", rateLimitHeaders: true },
    });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.denial)).toBe(true);
  });

  it("does not change the caller's object", () => {
    const options = { ...ok, cache: { ttl: 10 } };
    const copy = structuredClone({ ...options, logger: undefined });
    parseOptions(options);
    expect({ ...options, logger: undefined }).toEqual(copy);
  });

  it("reads the root key from UNKEY_ROOT_KEY, and names it when missing", () => {
    vi.stubEnv("UNKEY_ROOT_KEY", "root_from_env_123");
    expect(() => parseOptions({ baseUrl: "http://127.0.0.1:9", logger: silentLogger })).not.toThrow();
    vi.stubEnv("UNKEY_ROOT_KEY", "");
    const err = (() => {
      try {
        apiKeyAuth({ logger: silentLogger });
      } catch (e) {
        return e as ConfigError;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err?.option).toBe("rootKey");
    expect(err?.message).toBe("apiKeyAuth: no root key. Set UNKEY_ROOT_KEY or pass { rootKey } (or a prebuilt { client }).");
  });

  it("accepts a prebuilt client, but not together with rootKey", () => {
    const client = createClient({ rootKey: "root_key_for_tests", baseUrl: "http://127.0.0.1:9", logger: silentLogger });
    expect(parseOptions({ client, logger: silentLogger }).client).toBe(client);
    expect(() => parseOptions({ client, rootKey: "x", logger: silentLogger })).toThrow(/either client or rootKey/);
    expect(() => parseOptions({ client: {} as never, logger: silentLogger })).toThrow(
      /invalid option client = an object\. Pass createClient/,
    );
  });

  it.each([
    [{ baseUrl: "ftp://example" }, "baseUrl"],
    [{ timeout: 0 }, "apiKeyAuth: invalid option timeout = 0. Use a whole number of milliseconds 1..2147483647 (default 1000)."],
    [{ deadline: 1.5 }, /invalid option deadline = 1\.5\. Use a whole number of milliseconds .*\(default 2500\)/],
    [{ cache: { ttl: -1 } }, /invalid option cache\.ttl = -1/],
    [{ cache: "yes" }, /invalid option cache = "yes"/],
    [{ cache: [] }, "apiKeyAuth: invalid option cache = an array. Use false or { ttl, negativeTtl, max }."],
    [{ retry: [] }, "apiKeyAuth: invalid option retry = an array. Pass { attempts, initialDelay, factor, maxDelay, jitter } or false."],
    [{ staleIfError: "1m" }, /invalid option staleIfError = "1m"/],
    [{ header: "X API Key" }, /invalid option header = "X API Key"/],
    [{ header: "authorization" }, /bearer` already reads/],
    [{ bearer: false, header: false }, /no key could ever be read/],
    [{ realm: 'a"b' }, /invalid option realm = /],
    [{ permissions: "docs.read AND" }, /permissions "docs.read AND" is not a valid query/],
    [{ cost: -1 }, /cost is -1/],
    [{ ratelimits: [{ limit: 1 }] }, 'apiKeyAuth: ratelimits[0].name is required. Add the "name" field.'],
    [{ tags: Array(21).fill("t") }, /tags is/],
    [{ onServiceError: "fail" }, /invalid option onServiceError = "fail"\. Use "closed" or "open"/],
    [{ onDenied: () => {}, passErrors: true }, /either onDenied or passErrors/],
    [{ optional: "yes" }, /invalid option optional = "yes"\. Pass true or false\./],
    [{ policy: { EXPIRED: 99 } }, /invalid option policy\.EXPIRED\.status = 99\./],
    [{ policy: { SERVICE_UNAVAILABLE: 500 } }, /policy\.SERVICE_UNAVAILABLE cannot be set/],
    [{ policy: { VERIFICATION_FAILED: 503 } }, /policy\.VERIFICATION_FAILED cannot be set/],
    [{ policy: { INSUFFICIENT_SCOPE: 401 } }, /policy\.INSUFFICIENT_SCOPE cannot be set/],
    [{ retry: 3 }, "apiKeyAuth: invalid option retry = 3. Pass { attempts, initialDelay, factor, maxDelay, jitter } or false."],
    [{ retry: { attempts: 0 } }, "apiKeyAuth: invalid option retry.attempts = 0. Use a whole number 1..20 (default 2)."],
    [{ retry: { jitter: 2 } }, /invalid option retry\.jitter = 2\. Use a number 0\.\.1/],
    [{ store: {} }, /invalid option store = an object\. Pass memoryStore\(\) or redisStore\(\)/],
    [{ store: memoryStore(), cache: false }, /store has no effect with cache: false/],
    [{ store: memoryStore(), cache: { max: 5 } }, /cache\.max is set by the store/],
    [{ getKey: "header" }, /invalid option getKey = "header"\. Pass a function/],
    [{ rotationHeaders: "yes" }, /invalid option rotationHeaders = "yes"\. Use true, false or \{ window \}/],
    [{ rotationHeaders: { window: 0 } }, /invalid option rotationHeaders\.window = 0\./],
    [{ getKey: () => "k", hideCredentials: true }, /hideCredentials: true has no effect with getKey/],
  ] as Array<[Record<string, unknown>, string | RegExp]>)("rejects %j", (bad, message) => {
    expect(() => parseOptions({ ...ok, ...bad } as ApiKeyAuthOptions)).toThrow(ConfigError);
    expect(() => parseOptions({ ...ok, ...bad } as ApiKeyAuthOptions)).toThrow(message);
  });

  it("leaves a base URL's query and fragment out of the error, where a token may be", () => {
    for (const baseUrl of ["https://proxy.example/?token=SECRET123", "http://127.0.0.1:9/prefix#SECRET123"]) {
      let err: unknown;
      try {
        apiKeyAuth({ ...ok, baseUrl });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect(err).toMatchObject({ option: "baseUrl" });
      expect((err as Error).message).toMatch(
        /invalid option baseUrl = "[^"?#]+" \(its query and fragment are left out of this message\)\. Take the query and fragment out/,
      );
      expect(JSON.stringify({ message: (err as Error).message, ...(err as object) })).not.toContain("SECRET123");
    }
  });

  it("never puts the root key in an error message", () => {
    try {
      parseOptions({ rootKey: "root_secret_value", baseUrl: "not a url", logger: silentLogger });
      expect.unreachable();
    } catch (e) {
      expect((e as Error).message).not.toContain("root_secret_value");
    }
  });

  it("refuses unknown options at factory time, with a suggestion: a misspelled check is never dropped", () => {
    const logger = recordingLogger();
    const err = configError(() => parseOptions({ ...ok, logger, premissions: "docs.read" } as ApiKeyAuthOptions));
    expect(err.option).toBe("premissions");
    expect(err.message).toMatch(
      /^apiKeyAuth: unknown option premissions \(did you mean permissions\?\); the options are rootKey, baseUrl, /,
    );
    expect(() => apiKeyAuth({ ...ok, optinal: true, realmm: "x", whatever: 1 } as ApiKeyAuthOptions)).toThrow(
      /^apiKeyAuth: unknown options optinal \(did you mean optional\?\), realmm \(did you mean realm\?\), whatever; the options are /,
    );
    expect(logger.entries).toEqual([]);
  });

  it("refuses unknown names inside cache and retry too, in the same one error", () => {
    expect(() => parseOptions({ ...ok, optinal: true, cache: { ttll: 5, max: 10 }, retry: { attemps: 3 } } as ApiKeyAuthOptions)).toThrow(
      /^apiKeyAuth: unknown options optinal \(did you mean optional\?\), cache\.ttll \(did you mean cache\.ttl\?\), retry\.attemps \(did you mean retry\.attempts\?\); /,
    );
  });

  it("says nothing when every name inside cache and retry is known", () => {
    const logger = recordingLogger();
    parseOptions({
      ...ok,
      logger,
      cache: { ttl: 1, negativeTtl: 2, max: 3 },
      retry: { attempts: 1, initialDelay: 1, factor: 1, maxDelay: 1, jitter: 0 },
    });
    parseOptions({ ...ok, logger, cache: false, retry: false });
    expect(logger.entries).toEqual([]);
  });

  it("warns through the configured logger about a policy code nobody sends (a typo), and keeps it", () => {
    const logger = recordingLogger();
    const config = parseOptions({ ...ok, logger, policy: { EXPIRD: 403 } });
    expect(logger.entries).toHaveLength(1);
    expect(logger.entries[0]).toMatchObject({ level: "warn", fields: { unknownCodes: ["EXPIRD"], didYouMean: { EXPIRD: "EXPIRED" } } });
    expect(config.denial.policy.EXPIRD).toEqual({ status: 403, error: "insufficient_scope" });
  });

  it("merges a partial retry over the middleware's defaults", () => {
    expect(parseOptions({ ...ok, retry: { attempts: 3 } }).call.settings.retry).toEqual({
      attempts: 3,
      initialDelay: 100,
      factor: 2,
      maxDelay: 500,
      jitter: 0.2,
    });
    expect(parseOptions({ ...ok, retry: false }).call.settings.retry).toBeNull();
    expect(parseOptions({ ...ok, retry: false }).call.options.retry).toBe(false);
  });

  it("refuses retry: { attempts: 0 } with a prebuilt client when it is built, naming the middleware's default (2)", () => {
    const client = createClient({ rootKey: "root_key_for_tests", baseUrl: "http://127.0.0.1:9", logger: silentLogger });
    expect(() => apiKeyAuth({ client, logger: silentLogger, retry: { attempts: 0 } })).toThrow(
      "apiKeyAuth: invalid option retry.attempts = 0. Use a whole number 1..20 (default 2).",
    );
  });

  it("hands the client call options it uses as they are: nothing is checked again per request", () => {
    const { call } = parseOptions({ ...ok, timeout: 700, retry: { attempts: 3 } });
    const clientConfig = parseClientOptions({ rootKey: "root_key_for_tests", logger: silentLogger });
    const first = resolveCallOptions(clientConfig, call.options, "keys.verifyKey");
    expect(resolveCallOptions(clientConfig, call.options, "keys.verifyKey")).toBe(first);
    expect(first).toEqual({
      timeout: 700,
      deadline: 2500,
      retry: { attempts: 3, initialDelay: 100, factor: 2, maxDelay: 500, jitter: 0.2 },
      signal: undefined,
    });
    expect(Object.isFrozen(call.options)).toBe(true);
    // Any other object is checked as before.
    expect(() => resolveCallOptions(clientConfig, { ...call.options, timeout: 0 }, "keys.verifyKey")).toThrow(/timeout/);
  });

  it("lists every option name (the list is checked by the compiler against ApiKeyAuthOptions)", () => {
    expect(OPTION_NAMES).toContain("store");
    expect(OPTION_NAMES).toContain("onDecision");
    expect(OPTION_NAMES).toContain("telemetry");
    expect(OPTION_NAMES).toContain("rejectBadChecksums");
    expect(OPTION_NAMES).toContain("unknownKeyLimit");
    expect(OPTION_NAMES).toContain("tls");
    expect(OPTION_NAMES).toContain("migrateFrom");
    expect(OPTION_NAMES).toContain("shadow");
    expect(OPTION_NAMES).toHaveLength(34);
    expect(Object.isFrozen(OPTION_NAMES)).toBe(true);
  });

  it("rejectBadChecksums: on by default, a boolean, named in its error", () => {
    expect(parseOptions(ok).rejectBadChecksums).toBe(true);
    expect(parseOptions({ ...ok, rejectBadChecksums: false }).rejectBadChecksums).toBe(false);
    expect(() => parseOptions({ ...ok, rejectBadChecksums: "yes" as unknown as boolean })).toThrow(/rejectBadChecksums/);
  });

  it("hideCredentials with getKey names both options and the fix", () => {
    try {
      parseOptions({ ...ok, getKey: () => "k", hideCredentials: true });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).option).toBe("hideCredentials");
      expect((e as Error).message).toMatch(/getKey/);
      expect((e as Error).message).toMatch(/remove .*yourself/);
    }
  });

  it("plans the shape from copies of the caller's ratelimits and tags: later changes to them change nothing", async () => {
    const ratelimits = [{ name: "requests", cost: 1 }];
    const tags = ["a", "b"];
    const fixed = parseOptions({ ...ok, ratelimits, tags });
    // With another option computed per request, the static ones are still resolved at creation.
    const mixed = parseOptions({ ...ok, ratelimits, tags, permissions: () => "docs.read" });
    ratelimits[0]!.name = "changed";
    ratelimits.push({ name: "more", cost: 2 });
    tags.push("c");
    const planned = { ratelimits: [{ name: "requests", cost: 1 }], tags: ["a", "b"] };
    expect(fixed.fixedShape?.body).toEqual(planned);
    expect(mixed.fixedShape).toBeUndefined();
    expect((await mixed.resolveShape({} as IncomingMessage)).body).toEqual({ permissions: "docs.read", ...planned });
    expect(Object.isFrozen(ratelimits)).toBe(false);
    expect(Object.isFrozen(tags)).toBe(false);
  });

  it("warns at factory time when timeout is longer than deadline", () => {
    const logger = recordingLogger();
    parseOptions({ ...ok, logger, timeout: 3000, deadline: 2000 });
    expect(logger.entries).toEqual([
      {
        level: "warn",
        message: "apiKeyAuth: timeout (3000 ms) is longer than deadline (2000 ms); each attempt is cut to the time left of the deadline",
        fields: { timeout: 3000, deadline: 2000 },
      },
    ]);
    const quiet = recordingLogger();
    parseOptions({ ...ok, logger: quiet, timeout: 1000, deadline: 2000 });
    expect(quiet.entries).toEqual([]);
  });

  it("accepts cache: false and staleIfError", () => {
    expect(parseOptions({ ...ok, cache: false, staleIfError: 60_000 })).toMatchObject({
      cache: undefined,
      store: undefined,
      staleIfError: 60_000,
    });
  });
});

describe("apiKeyAuth misuse", () => {
  it("throws when called with a request outside a chain", () => {
    expect(() => (apiKeyAuth as (...a: unknown[]) => unknown)({ headers: {}, method: "GET" })).toThrow(/app\.use\(apiKeyAuth\(\)\)/);
  });

  it("returns a handler with invalidate and clear", () => {
    const handler = apiKeyAuth(ok);
    expect(handler).toBeTypeOf("function");
    expect(handler.length).toBe(3);
    expect(handler.invalidate).toBeTypeOf("function");
    expect(handler.clear).toBeTypeOf("function");
  });
});
