// Every adapter's entry refuses an unknown option when it is created, with the suggestion: in plain
// JavaScript a misspelled `permissions` would otherwise admit any valid key.
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { apiKeyAuth as expressAuth, ConfigError } from "keyguard";
import { keyguard as fastifyPlugin } from "keyguard/fastify";
import { apiKeyAuth as honoAuth } from "keyguard/hono";
import { apiKeyAuth as koaAuth } from "keyguard/koa";
import { ApiKeyGuard } from "keyguard/nest";
import { webApiKeyAuth } from "keyguard/web";
import { silentLogger } from "../../src/logger";

const TYPO = { rootKey: "root_key_for_tests", baseUrl: "http://127.0.0.1:9", logger: silentLogger, premissions: "docs.read" } as never;
const SUGGESTION = /unknown option premissions \(did you mean permissions\?\); the options are /;

const ENTRIES: Array<[string, () => unknown]> = [
  ["keyguard: apiKeyAuth()", () => expressAuth(TYPO)],
  ["keyguard/web: webApiKeyAuth()", () => webApiKeyAuth(TYPO)],
  ["keyguard/hono: apiKeyAuth()", () => honoAuth(TYPO)],
  ["keyguard/koa: apiKeyAuth()", () => koaAuth(TYPO)],
  ["keyguard/nest: new ApiKeyGuard()", () => new ApiKeyGuard(TYPO)],
];

describe("an unknown option is refused when the middleware is created", () => {
  it.each(ENTRIES)("%s", (_name, create) => {
    let thrown: unknown;
    try {
      create();
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).option).toBe("premissions");
    expect((thrown as Error).message).toMatch(SUGGESTION);
  });

  it("keyguard/fastify: the plugin, and a route's config.keyguard when the route is added", async () => {
    const app = Fastify();
    await expect(app.register(fastifyPlugin, TYPO).ready()).rejects.toThrow(SUGGESTION);
    await app.close();

    const other = Fastify();
    await other.register(fastifyPlugin, { rootKey: "root_key_for_tests", baseUrl: "http://127.0.0.1:9", logger: silentLogger });
    await expect(
      (async () => {
        other.get("/docs", { config: { keyguard: { premissions: "docs.read" } as never } }, async () => "ok");
        await other.ready();
      })(),
    ).rejects.toThrow(SUGGESTION);
    await other.close();
  });
});
