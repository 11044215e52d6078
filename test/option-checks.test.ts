// The shared option checks: each check's accepted values and defaults, its one message form, the
// entry point's own error class and fields, and secrets never echoed.
import { describe, expect, it } from "vitest";
import { ConfigError } from "../src/config-error";
import { KeyServiceConfigError } from "../src/client/errors";
import { parseClientOptions } from "../src/client/options";
import type { LogFields } from "../src/logger";
import { parseOptions as parseMiddlewareOptions } from "../src/adapters/express/api-key-auth";
import { HIDDEN, MAX_TIMER_MS, optionChecks } from "../src/option-checks";
import { parseOptions as parseServiceOptions } from "../src/server/options";
import { LocalServiceConfigError } from "../src/server/errors";

const check = optionChecks("thing", ConfigError);

/** The error `f` throws. */
function thrown(f: () => unknown): ConfigError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error("did not throw");
}

/** What the error says and carries: [option, message, shown, fix]. */
const said = (f: () => unknown) => {
  const e = thrown(f);
  return [e.option, e.message, e.shown, e.fix];
};

describe("optionChecks: the entry point's error", () => {
  it("throws the class given, with the option, the value as shown and the fix apart", () => {
    const e = thrown(() => optionChecks("createClient", KeyServiceConfigError).integer("timeout", 0, { min: 1 }));
    expect(e).toBeInstanceOf(KeyServiceConfigError);
    expect(e).toMatchObject({
      name: "KeyServiceConfigError",
      code: "KEY_SERVICE_CONFIG_ERROR",
      option: "timeout",
      shown: "0",
      fix: "Use a whole number 1..2147483647.",
      message: "createClient: invalid option timeout = 0. Use a whole number 1..2147483647.",
    });
  });

  it("takes a function building the error when the class has other arguments", () => {
    const local = optionChecks(
      "keyguard/server",
      (option, message, details) => new LocalServiceConfigError(message, { ...details, option }),
    );
    const e = thrown(() => local.boolean("storeKeys", "yes", false));
    expect(e).toBeInstanceOf(LocalServiceConfigError);
    expect(e).toMatchObject({ code: "LOCAL_SERVICE_CONFIG_ERROR", option: "storeKeys", shown: '"yes"', fix: "Pass true or false." });
    expect(e.message).toBe('keyguard/server: invalid option storeKeys = "yes". Pass true or false.');
  });

  it("fail: a sentence of the entry point's own, prefixed by its name", () => {
    expect(said(() => check.fail("client", "pass either client or url, not both."))).toEqual([
      "client",
      "thing: pass either client or url, not both.",
      undefined,
      undefined,
    ]);
  });

  it("shows a value by kind, never an object's fields or a function's source", () => {
    expect(said(() => check.invalid("x", { secret: "s3cr3t" }, "Fix it."))[1]).toBe("thing: invalid option x = an object. Fix it.");
    expect(said(() => check.invalid("x", [1], "Fix it."))[2]).toBe("an array");
    expect(said(() => check.invalid("x", () => "s3cr3t", "Fix it."))[2]).toBe("a function");
    expect(said(() => check.invalid("x", "y".repeat(100), "Fix it."))[2]).toBe(`"${"y".repeat(80)}…"`);
    expect(said(() => check.invalid("x", HIDDEN, "Fix it.", "x (its content)"))).toEqual([
      "x",
      "thing: invalid option x (its content) = <hidden>. Fix it.",
      "<hidden>",
      "Fix it.",
    ]);
  });
});

describe("numbers", () => {
  it("integer: undefined gives the default; whole numbers in the range pass", () => {
    const rule = { min: 1, max: 20, default: 5 };
    expect(check.integer("attempts", undefined, rule)).toBe(5);
    expect([1, 20, 7].map((v) => check.integer("attempts", v, rule))).toEqual([1, 20, 7]);
  });

  it.each([0, 21, 1.5, "3", Number.NaN, Infinity, null])("integer refuses %s, saying the range and the default", (bad) => {
    const [option, message] = said(() => check.integer("retry.attempts", bad, { min: 1, max: 20, default: 5 }));
    expect(option).toBe("retry.attempts");
    expect(message).toMatch(/^thing: invalid option retry\.attempts = .+\. Use a whole number 1\.\.20 \(default 5\)\.$/);
  });

  it("integer without a default refuses undefined; unit and note are said", () => {
    expect(said(() => check.integer("days", undefined, { min: 1, max: 3650 }))[1]).toBe(
      "thing: invalid option days = undefined. Use a whole number 1..3650.",
    );
    expect(said(() => check.integer("days", 0, { min: 1, max: 3650, default: 30, unit: "days" }))[3]).toBe(
      "Use a whole number of days 1..3650 (default 30).",
    );
    expect(said(() => check.integer("port", 70000, { min: 0, max: 65535, note: "0 picks any free one" }))[3]).toBe(
      "Use a whole number 0..65535 (0 picks any free one).",
    );
  });

  it("number: fractions pass, anything not finite or out of range does not", () => {
    expect(check.number("jitter", 0.25, { min: 0, max: 1, default: 0.2 })).toBe(0.25);
    expect(check.number("jitter", undefined, { min: 0, max: 1, default: 0.2 })).toBe(0.2);
    for (const bad of [1.01, -0.1, Number.NaN, Infinity, "0.5"]) {
      expect(said(() => check.number("jitter", bad, { min: 0, max: 1 }))[3]).toBe("Use a number 0..1.");
    }
  });

  it("duration: whole milliseconds from 1 (or the given min) to the longest timer", () => {
    expect(check.duration("timeout", undefined, { default: 1000 })).toBe(1000);
    expect(check.duration("timeout", MAX_TIMER_MS, { default: 1000 })).toBe(MAX_TIMER_MS);
    expect(check.duration("ttl", 0, { min: 0, default: 30_000 })).toBe(0);
    expect(said(() => check.duration("timeout", 0, { default: 1000 }))[1]).toBe(
      "thing: invalid option timeout = 0. Use a whole number of milliseconds 1..2147483647 (default 1000).",
    );
    expect(said(() => check.duration("timeout", MAX_TIMER_MS + 1, { default: 1000 }))[2]).toBe("2147483648");
  });
});

describe("booleans, choices, strings, functions, objects", () => {
  it("boolean: undefined gives the fallback; anything else but true or false is refused", () => {
    expect(check.boolean("optional", undefined, true)).toBe(true);
    expect(check.boolean("optional", false, true)).toBe(false);
    expect(said(() => check.boolean("optional", "yes", false))[1]).toBe('thing: invalid option optional = "yes". Pass true or false.');
    expect(said(() => check.boolean("optional", 1, false))[2]).toBe("1");
  });

  it("oneOf: lists the choices; without a fallback undefined stays undefined", () => {
    expect(check.oneOf("mode", undefined, ["closed", "open"], "closed")).toBe("closed");
    expect(check.oneOf("mode", "open", ["closed", "open"], "closed")).toBe("open");
    expect(check.oneOf("driver", undefined, ["a", "b"])).toBeUndefined();
    expect(said(() => check.oneOf("mode", "fail", ["closed", "open"], "closed", "closed answers 503"))[3]).toBe(
      'Use "closed" or "open" (closed answers 503).',
    );
    expect(said(() => check.oneOf("sync", "off", ["normal", "full", "extra"]))[3]).toBe(
      'Use "normal", "full" or "extra", or leave it unset.',
    );
    expect(said(() => check.oneOf("mode", 1, ["one"], "one"))[3]).toBe('Use "one".');
  });

  it("string: the pattern, the default, optional; a secret is shown as <hidden>", () => {
    const rule = { pattern: /^[a-z]+$/, fix: "Use lower-case letters." };
    expect(check.string("name", "abc", rule)).toBe("abc");
    expect(check.string("name", undefined, { ...rule, default: "dflt" })).toBe("dflt");
    expect(check.string("name", undefined, { ...rule, optional: true })).toBeUndefined();
    expect(said(() => check.string("name", undefined, rule))[2]).toBe("undefined");
    expect(said(() => check.string("name", "ABC", rule))).toEqual([
      "name",
      'thing: invalid option name = "ABC". Use lower-case letters.',
      '"ABC"',
      "Use lower-case letters.",
    ]);
    const secret = thrown(() => check.string("rootKey", "root key s3cr3t", { ...rule, secret: true, label: "UNKEY_ROOT_KEY" }));
    expect(secret.message).toBe("thing: invalid option UNKEY_ROOT_KEY = <hidden>. Use lower-case letters.");
    expect(JSON.stringify({ ...secret, message: secret.message, stack: secret.stack })).not.toContain("s3cr3t");
    // A secret of the wrong type holds nothing to hide: its kind is said.
    expect(said(() => check.string("rootKey", 42, { ...rule, secret: true }))[2]).toBe("42");
  });

  it("func: a function or undefined, saying how it is called", () => {
    const f = () => 1;
    expect(check.func("getKey", f)).toBe(f);
    expect(check.func("getKey", undefined)).toBeUndefined();
    expect(said(() => check.func("getKey", "header", "(req) => key"))[1]).toBe(
      'thing: invalid option getKey = "header". Pass a function (req) => key.',
    );
  });

  it("object, withMethods and options: plain objects only, with the methods asked for", () => {
    expect(check.object("cache", { ttl: 1 }, "Use { ttl }.")).toEqual({ ttl: 1 });
    expect(check.object("cache", undefined, "Use { ttl }.")).toBeUndefined();
    for (const bad of [null, [], "x", 3]) expect(said(() => check.object("cache", bad, "Use { ttl }."))[0]).toBe("cache");
    const publisher = { invalidate: () => undefined };
    expect(check.withMethods("invalidate", publisher, ["invalidate"], "Pass a publisher.")).toBe(publisher);
    expect(said(() => check.withMethods("invalidate", { invalidate: 1 }, ["invalidate"], "Pass a publisher."))[1]).toBe(
      "thing: invalid option invalidate = an object. Pass a publisher.",
    );
    expect(check.options(undefined, "Pass an object.")).toEqual({});
    expect(said(() => check.options([], "Pass an object."))).toEqual([
      "options",
      "thing: invalid option options = an array. Pass an object.",
      "an array",
      "Pass an object.",
    ]);
  });
});

describe("loggers", () => {
  it("undefined gives the default logger; anything with warn and error functions passes", () => {
    expect(typeof check.logger(undefined).warn).toBe("function");
    const logger = { warn() {}, error() {} };
    expect(check.logger(logger)).toBe(logger);
  });

  it("one message for every entry point, whatever is missing", () => {
    const fix = "Pass an object with warn(fields, msg) and error(fields, msg) methods (pino works).";
    const bad = { warn() {} };
    const errors = [
      thrown(() => parseMiddlewareOptions({ rootKey: "root_key_for_tests", logger: bad as never })),
      thrown(() => parseClientOptions({ rootKey: "root_key_for_tests", logger: bad as never }, {})),
      thrown(() => parseServiceOptions({ logger: bad as never }, {})),
      thrown(() => check.logger("console")),
    ];
    expect(errors.map((e) => [e.constructor, e.option, e.fix])).toEqual([
      [ConfigError, "logger", fix],
      [KeyServiceConfigError, "logger", fix],
      [LocalServiceConfigError, "logger", fix],
      [ConfigError, "logger", fix],
    ]);
    expect(errors.map((e) => e.message)).toEqual([
      `apiKeyAuth: invalid option logger = an object. ${fix}`,
      `createClient: invalid option logger = an object. ${fix}`,
      `keyguard/server: invalid option logger = an object. ${fix}`,
      `thing: invalid option logger = "console". ${fix}`,
    ]);
  });
});

describe("URLs", () => {
  const connection = { protocols: ["postgres:", "postgresql:"], example: "postgres://127.0.0.1:5432/db" };

  it("returns the parsed URL", () => {
    expect(check.url("postgres", "postgres://u:pw@127.0.0.1:5432/db", connection).port).toBe("5432");
  });

  it.each([
    ["pw-s3cr3t-not-a-url", "<not a URL>", "It is not a valid URL; pass one such as postgres://127.0.0.1:5432/db."],
    ["mysql://u:pw-s3cr3t@db/x", "<a mysql: URL>", "Use a postgres:// or postgresql:// URL such as postgres://127.0.0.1:5432/db."],
    ["", '""', "Pass a URL such as postgres://127.0.0.1:5432/db."],
  ])("a connection URL is shown by its kind only: %j", (value, shown, fix) => {
    const e = thrown(() => check.url("postgres", value, connection));
    expect([e.option, e.shown, e.fix]).toEqual(["postgres", shown, fix]);
    expect(e.message).toBe(`thing: invalid option postgres = ${shown}. ${fix}`);
    expect(JSON.stringify({ ...e, message: e.message })).not.toContain("s3cr3t");
  });

  it("not a string: its kind", () => {
    expect(said(() => check.url("postgres", undefined, connection))[2]).toBe("undefined");
    expect(said(() => check.url("postgres", 5432, connection))[2]).toBe("5432");
  });

  const base = {
    protocols: ["http:", "https:"],
    example: "https://api.example",
    show: "origin",
    noCredentials: "pass the key apart.",
    noQuery: true,
  } as const;

  it.each([
    [
      "https://proxy.example/?token=s3cr3t",
      '"https://proxy.example/" (its query and fragment are left out of this message)',
      "Take the query and fragment out of it, e.g. https://api.example.",
    ],
    [
      "ftp://files.example/x#s3cr3t",
      '"ftp://files.example/x" (its query and fragment are left out of this message)',
      "Use an http:// or https:// URL such as https://api.example.",
    ],
    ["https://user:s3cr3t@api.example", "<a URL with credentials, hidden>", "Take user:password@ out of it; pass the key apart."],
    [
      "http://user:s3cr3t@exa mple",
      '<a value containing "@", hidden: it may hold credentials>',
      "It is not a valid URL; pass one such as https://api.example.",
    ],
    ["ftp://files.example", '"ftp://files.example"', "Use an http:// or https:// URL such as https://api.example."],
  ])("a base URL is shown up to its query, never with credentials: %j", (value, shown, fix) => {
    const e = thrown(() => check.url("baseUrl", value, { ...base, label: "BASE_URL" }));
    expect([e.option, e.shown, e.fix]).toEqual(["baseUrl", shown, fix]);
    expect(e.message).toBe(`thing: invalid option BASE_URL = ${shown}. ${fix}`);
    expect(JSON.stringify({ ...e, message: e.message })).not.toContain("s3cr3t");
  });

  it("a base URL with a path passes as it is", () => {
    expect(check.url("baseUrl", "http://127.0.0.1:8787/prefix/", base).pathname).toBe("/prefix/");
  });
});

describe("unknown option names", () => {
  const known = ["timeout", "deadline", "retry.attempts"];

  it("with a logger: one warning with the near misses, and nothing thrown", () => {
    const entries: Array<[LogFields, string]> = [];
    const logger = { warn: (fields: LogFields, message: string) => void entries.push([fields, message]), error() {} };
    check.unknownNames(["timout", "retry.attemps", "zzz", "deadline"], known, logger);
    expect(entries).toEqual([
      [
        { unknownOptions: ["timout", "retry.attemps", "zzz"], didYouMean: { timout: "timeout", "retry.attemps": "retry.attempts" } },
        "thing: ignoring unknown option(s) timout, retry.attemps, zzz",
      ],
    ]);
    check.unknownNames(["timeout"], known, logger);
    expect(entries).toHaveLength(1);
  });

  it("without a logger: refused, naming the first unknown name and the known ones", () => {
    expect(() => check.unknownNames(["deadline"], known)).not.toThrow();
    expect(said(() => check.unknownNames(["deadlin", "x"], known))).toEqual([
      "deadlin",
      "thing: unknown options deadlin (did you mean deadline?), x; the options are timeout, deadline, retry.attempts.",
      undefined,
      undefined,
    ]);
  });
});
