// `keyguard serve --postgres … --redis …`: flag and env checks, and a banner that never shows a
// URL's password.
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { killChildren, run, serve } from "./cli-process";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../support/postgres-redis";

afterEach(killChildren);

describe("keyguard serve --postgres --redis: flags", () => {
  it("needs both servers, not --data too, and says so with exit code 2", async () => {
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [["serve", "--postgres", "postgres://u:pw1@db/x"], {}, /--postgres needs --redis too/],
      [["serve", "--redis", "redis://cache"], {}, /--redis needs --postgres too/],
      [["serve", "--data", "x.json"], { KEYGUARD_POSTGRES_URL: "postgres://u:pw1@db/x", KEYGUARD_REDIS_URL: "redis://cache" }, /--data cannot be combined/],
      [["serve", "--postgres-schema", "other"], {}, /--postgres-schema needs --postgres and --redis/],
      [["serve", "--postgres", "mysql://u:pw1@db/x", "--redis", "redis://cache"], {}, /invalid option postgres = <a mysql: URL>/],
    ];
    const results = await Promise.all(cases.map(([args, env]) => run(args, env)));
    results.forEach((res, i) => {
      const [args, , message] = cases[i]!;
      expect(res.status, args.join(" ")).toBe(2);
      expect(res.stderr).toMatch(message);
      expect(res.stderr).not.toContain("pw1");
    });
  });

  it("--help documents the flags and their env variables", async () => {
    const help = await run(["--help"]);
    for (const text of ["--postgres", "--redis", "--postgres-schema", "KEYGUARD_POSTGRES_URL", "KEYGUARD_REDIS_URL", "npm install pg ioredis"]) {
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
    const { output } = await serve(["--port", "0"], { KEYGUARD_POSTGRES_URL: url.toString(), KEYGUARD_REDIS_URL: REDIS_URL, KEYGUARD_POSTGRES_SCHEMA: ns.schema });
    expect(output).toContain(`state:        PostgreSQL at ${url.hostname}:${url.port || 5432} (schema ${ns.schema}), rate-limit counters in Redis at`);
    expect(output).not.toContain("pw-in-url-42");
  });
});
