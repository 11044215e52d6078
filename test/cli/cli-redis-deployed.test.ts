// `keyguard serve` on Redis as deployed: --redis-ca-file, --redis-cluster and --drain-timeout
// checked with exit code 2 naming the flag; a real start on a TLS redis-server and on a 3-master
// cluster (both started here and stopped after), where a rate-limited key verifies and the service
// is ready.
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { killChildren, run, serve } from "./cli-process";
import { makeCall } from "../server/helpers";
import { POSTGRES_URL, isolatedNamespace, postgresRedisSkipReason } from "../support/postgres-redis";
import { redisServersSkipReason, startRedisCluster, startTlsRedis } from "../support/redis-servers";

afterEach(killChildren);
const PG = "postgres://u:pw1@db/x";

describe("keyguard serve: flags of Redis as deployed", () => {
  it("refuses a bad CA file, a CA file without TLS, a bad cluster variable, a bad drain timeout (exit 2)", async () => {
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [
        ["serve", "--postgres", PG, "--redis", "rediss://cache", "--redis-ca-file", "/nonexistent/ca.pem"],
        {},
        /invalid --redis-ca-file = "\/nonexistent\/ca\.pem"\. The file cannot be read \(ENOENT\)/,
      ],
      [
        ["serve", "--postgres", PG, "--redis", "redis://cache"],
        { KEYGUARD_REDIS_CA_FILE: "/etc/hostname" },
        /invalid KEYGUARD_REDIS_CA_FILE = "\/etc\/hostname"\. It applies to TLS only: use a rediss:\/\/ URL in --redis/,
      ],
      [
        ["serve", "--postgres", PG, "--redis", "redis://cache"],
        { KEYGUARD_REDIS_CLUSTER: "maybe" },
        /KEYGUARD_REDIS_CLUSTER must be true or false/,
      ],
      [["serve", "--redis-cluster"], {}, /invalid --redis-cluster = true\. It applies only with --postgres/],
      [["serve", "--drain-timeout", "soon"], {}, /invalid --drain-timeout = "soon"\. Use a whole number of seconds 0\.\.600\./],
      [["serve", "--drain-timeout", "601"], {}, /invalid --drain-timeout = 601\. Use a whole number of seconds 0\.\.600\./],
    ];
    const results = await Promise.all(cases.map(([args, env]) => run(args, env)));
    results.forEach((res, i) => {
      const [args, , message] = cases[i]!;
      expect(res.status, args.join(" ")).toBe(2);
      expect(res.stderr).toMatch(message);
      expect(res.stderr).not.toContain("pw1");
    });
  });

  it("--help documents the flags", async () => {
    const help = await run(["--help"]);
    for (const text of ["--redis-ca-file", "KEYGUARD_REDIS_CA_FILE", "--redis-cluster", "KEYGUARD_REDIS_CLUSTER", "--drain-timeout"]) {
      expect(help.stdout).toContain(text);
    }
  });
});

const SUITE = "keyguard serve on a TLS Redis and on a Redis Cluster";
const skip = (await postgresRedisSkipReason(SUITE)) ?? (await redisServersSkipReason(SUITE));

describe.skipIf(skip !== undefined)(SUITE, () => {
  const ns = isolatedNamespace();
  const stops: Array<() => void> = [];
  afterAll(async () => {
    for (const stop of stops) stop();
    await ns.drop();
  });

  const check = async (args: string[], env: Record<string, string> = {}) => {
    const served = await serve(["--port", "0", "--postgres", POSTGRES_URL, "--postgres-schema", ns.schema, ...args], {
      UNKEY_ROOT_KEY: "root_deployedRedis01_4f1c9e27b8a35d60e2b7c41f9a0d8e36",
      ...env,
    });
    const call = makeCall(served.baseUrl, "root_deployedRedis01_4f1c9e27b8a35d60e2b7c41f9a0d8e36");
    const created = await call("keys.createKey", {
      apiId: served.apiId,
      ratelimits: [{ name: "rps", limit: 2, duration: 60_000, autoApply: true }],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const { key } = created.body.data;
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await call("keys.verifyKey", { key })).body.data.code);
    expect(codes).toEqual(["VALID", "VALID", "RATE_LIMITED"]);
    expect((await fetch(`${served.baseUrl}/v2/readiness`)).status).toBe(200);
    return served;
  };

  it("serves on a TLS Redis with --redis-ca-file", { timeout: 60_000 }, async () => {
    const tls = await startTlsRedis();
    stops.push(() => tls.stop());
    await check(["--redis", tls.url, "--redis-ca-file", tls.caFile]);
  });

  it("serves on a Redis Cluster with KEYGUARD_REDIS_CLUSTER=true", { timeout: 60_000 }, async () => {
    const cluster = await startRedisCluster({ replicas: 0 });
    stops.push(() => cluster.stop());
    await check(["--redis", cluster.url], { KEYGUARD_REDIS_CLUSTER: "true" });
  });
});
