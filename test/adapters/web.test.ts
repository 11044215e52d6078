// keyguard/web on Node (through @hono/node-server's Request and Response): the conformance suite,
// through `auth(request)` and through `auth.decide(request)`; and what `decide` answers at once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger, webApiKeyAuth, type WebAuthResult } from "../../src/web";
import { startService, type ServiceFixture } from "../middleware/helpers";
import { GENEROUS } from "../support/time-limits";
import { webScenario } from "./apps/web-app";
import { conformanceSuite } from "./conformance";
import { serveFetch } from "./serve-node";

conformanceSuite("Web handler on Node", { redis: true, start: (env) => serveFetch(webScenario(env, "auth")) });
conformanceSuite("Web handler on Node, auth.decide", { redis: true, start: (env) => serveFetch(webScenario(env, "decide")) });

describe("auth.decide", () => {
  let fx: ServiceFixture;
  beforeAll(async () => {
    fx = await startService();
  });
  afterAll(() => fx.close());

  it("answers a cached key's request and a keyless one at once, the first verification as a promise; as auth() answers", async () => {
    const { key, keyId } = await fx.createKeyWithId({ name: "decide" });
    const auth = webApiKeyAuth({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, logger: silentLogger, ...GENEROUS });
    const withKey = () => new Request("http://app.test/r", { headers: { authorization: `Bearer ${key}` } });
    const first = auth.decide(withKey());
    expect(first).toBeInstanceOf(Promise);
    const verified = (await first) as WebAuthResult;
    expect(verified.apiKey?.keyId).toBe(keyId);
    const again = auth.decide(withKey());
    expect(again).not.toBeInstanceOf(Promise);
    // The same kept answer auth() hands out, as the same frozen object.
    expect((again as WebAuthResult).apiKey).toBe(((await auth(withKey())) as WebAuthResult).apiKey);
    const keyless = auth.decide(new Request("http://app.test/r"));
    expect(keyless).toBeInstanceOf(Response);
    expect((keyless as Response).status).toBe(401);
  });

  it("throws what a getKey throws, where auth() rejects with it", async () => {
    const boom = new Error("getKey failed");
    const auth = webApiKeyAuth({
      rootKey: fx.svc.rootKey,
      baseUrl: fx.svc.baseUrl,
      logger: silentLogger,
      getKey: () => {
        throw boom;
      },
    });
    const request = new Request("http://app.test/r");
    expect(() => auth.decide(request)).toThrow(boom);
    await expect(auth(request)).rejects.toBe(boom);
  });
});
