// `keyguard serve --postgres … --redis …`: flag and env checks, and a banner that never shows a
// URL's password.
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { killChildren, run, serve } from "./cli-process";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../support/postgres-redis";

afterEach(killChildren);

describe("keyguard serve --postgres --redis: flags", () => {
  it("needs both servers, not --data too, and says so with exit code 2", async () => {
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [
        ["serve", "--postgres", "postgres://u:pw1@db/x"],
        {},
        /invalid --postgres = <a URL, hidden>\. Pass --redis \(or KEYGUARD_REDIS_URL\) too/,
      ],
      [["serve", "--redis", "redis://cache"], {}, /invalid --redis = <a URL, hidden>\. Pass --postgres \(or KEYGUARD_POSTGRES_URL\) too/],
      [
        ["serve"],
        { KEYGUARD_REDIS_URL: "redis://cache" },
        /invalid KEYGUARD_REDIS_URL = <a URL, hidden>\. Pass --postgres \(or KEYGUARD_POSTGRES_URL\) too/,
      ],
      [
        ["serve", "--data", "x.json"],
        { KEYGUARD_POSTGRES_URL: "postgres://u:pw1@db/x", KEYGUARD_REDIS_URL: "redis://cache" },
        /invalid --data = "x\.json"\. Pass either --data or KEYGUARD_POSTGRES_URL and KEYGUARD_REDIS_URL, not both/,
      ],
      [
        ["serve", "--postgres-schema", "other"],
        {},
        /invalid --postgres-schema = "other"\. It applies only with --postgres \(or KEYGUARD_POSTGRES_URL\) and --redis/,
      ],
      [
        ["serve", "--postgres", "mysql://u:pw1@db/x", "--redis", "redis://cache"],
        {},
        /invalid --postgres = <a mysql: URL>\. Use a postgres:\/\/ or postgresql:\/\/ URL/,
      ],
    ];
    const results = await Promise.all(cases.map(([args, env]) => run(args, env)));
    results.forEach((res, i) => {
      const [args, , message] = cases[i]!;
      expect(res.status, args.join(" ")).toBe(2);
      expect(res.stderr).toMatch(message);
      expect(res.stderr).not.toContain("pw1");
      expect(res.stderr).not.toMatch(/keyguard\/(local|server):|invalid option/);
    });
  });

  it("--help documents the flags and their env variables", async () => {
    const help = await run(["--help"]);
    for (const text of [
      "--postgres",
      "--redis",
      "--postgres-schema",
      "KEYGUARD_POSTGRES_URL",
      "KEYGUARD_REDIS_URL",
      "npm install pg ioredis",
    ]) {
      expect(help.stdout).toContain(text);
    }
  });
});

const skip = await postgresRedisSkipReason("keyguard serve on PostgreSQL + Redis");

describe.skipIf(skip !== undefined)("keyguard serve on PostgreSQL + Redis", () => {
  const ns = isolatedNamespace();
  afterAll(() => ns.drop());

  it("starts from env variables and names the servers without the password", async () => {
    const url = new URL(POSTGRES_URL);
    url.password = "pw-in-url-42";
    const { output } = await serve(["--port", "0"], {
      KEYGUARD_POSTGRES_URL: url.toString(),
      KEYGUARD_REDIS_URL: REDIS_URL,
      KEYGUARD_POSTGRES_SCHEMA: ns.schema,
    });
    expect(output).toContain(
      `state:        PostgreSQL at ${url.hostname}:${url.port || 5432} (schema ${ns.schema}), rate-limit counters in Redis at`,
    );
    expect(output).not.toContain("pw-in-url-42");
  });
});
