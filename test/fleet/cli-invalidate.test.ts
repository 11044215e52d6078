// `keyguard serve --invalidate-redis`: the running service announces key changes on Redis, on the
// channel an apiKeyAuth() fleet's redisStore() listens to, naming keys by keyId only.
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { makeCall } from "../server/helpers";
import { killChildren, run, serve } from "../cli/cli-process";
import { eventually, REDIS_HOST, REDIS_PORT, REDIS_URL, skipWithoutRedis, uniquePrefix } from "./support";

const skip = await skipWithoutRedis("test/fleet/cli-invalidate.test.ts (keyguard serve --invalidate-redis)");
afterEach(killChildren);

describe.skipIf(skip)("keyguard serve --invalidate-redis", () => {
  const subscriber = skip ? undefined : new Redis(REDIS_URL);
  afterAll(() => subscriber?.disconnect());

  it("publishes each key change on <prefix>invalidate, by keyId, and says so in the banner", async () => {
    const prefix = uniquePrefix("cli");
    const heard: string[] = [];
    await subscriber!.subscribe(`${prefix}invalidate`);
    subscriber!.on("message", (_channel: string, message: string) => heard.push(message));
    const served = await serve(["--port", "0", "--invalidate-redis", REDIS_URL, "--invalidate-prefix", prefix]);
    let output = served.output;
    served.child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const call = makeCall(served.baseUrl, served.rootKey!);
    const created = await call("keys.createKey", { apiId: served.apiId });
    const { key, keyId } = created.body.data as { key: string; keyId: string };
    expect((await call("keys.verifyKey", { key })).body.data.valid).toBe(true);
    expect(heard).toEqual([]);
    expect((await call("keys.updateKey", { keyId, enabled: false })).status).toBe(200);
    expect(await eventually(() => heard.length === 1)).toBe(true);
    expect(JSON.parse(heard[0]!)).toEqual({ v: 1, kind: "keyId", keyId });
    expect(heard[0]).not.toContain(key);
    expect(
      await eventually(() => output.includes(`key changes:  announced on Redis at ${REDIS_HOST}:${REDIS_PORT} (prefix ${prefix})`)),
    ).toBe(true);
  });

  it("refuses --invalidate-prefix without a Redis to announce on", async () => {
    const res = await run(["serve", "--invalidate-prefix", "x:"]);
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/--invalidate-prefix needs --invalidate-redis/);
  });
});
