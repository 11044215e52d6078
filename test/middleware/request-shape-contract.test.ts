// apiKeyAuth() refuses at creation every cost, rate-limit or tag option the key service would
// refuse on each request (the checks come from the contract's keys.verifyKey request), and a
// per-request function returning such a value fails that request without calling the service.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import express from "express";
import request from "supertest";
import { apiKeyAuth, silentLogger, type ApiKeyAuthOptions } from "keyguard";
import { ConfigError } from "../../src/config-error";
import { startService, type ServiceFixture } from "./helpers";
import { GENEROUS } from "../support/time-limits";

let fx: ServiceFixture;
let key: string;
beforeAll(async () => {
  fx = await startService();
  key = await fx.createKey();
});
afterAll(() => fx.close());

const auth = (options: Partial<ApiKeyAuthOptions>) =>
  apiKeyAuth({
    rootKey: fx.svc.rootKey,
    baseUrl: fx.svc.baseUrl,
    logger: silentLogger,
    cache: false,
    ...GENEROUS,
    ...options,
  } as ApiKeyAuthOptions);

/** What the service answers to a verifyKey body carrying `part`: the first problem's location, or the status. */
async function serviceVerdict(part: Record<string, unknown>): Promise<string | number> {
  const res = await fetch(`${fx.svc.baseUrl}/v2/keys.verifyKey`, {
    method: "POST",
    headers: { authorization: `Bearer ${fx.svc.rootKey}`, "content-type": "application/json" },
    body: JSON.stringify({ key, ...part }),
  });
  const body = (await res.json()) as { error?: { errors?: Array<{ location: string }> } };
  return res.status === 400 ? body.error!.errors![0]!.location : res.status;
}

const RATELIMITS_FIX = 'Use an array like [{ name: "requests", limit: 100, duration: 60_000 }] (duration in ms).';
const requests = { name: "requests", limit: 100, duration: 60_000 };

// Each was accepted by apiKeyAuth() before, and refused by the service on every request.
const newlyRefused: Array<[string, Partial<ApiKeyAuthOptions>, Record<string, unknown>, string]> = [
  [
    "limit: 0",
    { ratelimits: [{ ...requests, limit: 0 }] },
    { ratelimits: [{ ...requests, limit: 0 }] },
    `apiKeyAuth: ratelimits[0].limit is 0 (a number), which the key service refuses: must be at least 1. ${RATELIMITS_FIX}`,
  ],
  [
    "duration: 0",
    { ratelimits: [{ ...requests, duration: 0 }] },
    { ratelimits: [{ ...requests, duration: 0 }] },
    `apiKeyAuth: ratelimits[0].duration is 0 (a number), which the key service refuses: must be at least 1000. ${RATELIMITS_FIX}`,
  ],
  [
    "a window under a second",
    { ratelimits: [{ ...requests, duration: 999 }] },
    { ratelimits: [{ ...requests, duration: 999 }] },
    "ratelimits[0].duration is 999 (a number), which the key service refuses: must be at least 1000.",
  ],
  [
    "a one-letter name",
    { ratelimits: [{ name: "r" }] },
    { ratelimits: [{ name: "r" }] },
    'ratelimits[0].name is "r" (a string), which the key service refuses: must be at least 3 characters long.',
  ],
  [
    "a name of 256 characters",
    { ratelimits: [{ name: "r".repeat(256) }] },
    { ratelimits: [{ name: "r".repeat(256) }] },
    'ratelimits[0].name is "rrrr',
  ],
  [
    "a field verifyKey does not know",
    { ratelimits: [{ ...requests, autoApply: true } as never] },
    { ratelimits: [{ ...requests, autoApply: true }] },
    "ratelimits[0].autoApply is true (a boolean), which the key service refuses: is not a known field. Remove it. Known fields: name, cost, limit, duration.",
  ],
  [
    "a name twice",
    { ratelimits: [requests, { name: "requests", cost: 2 }] },
    { ratelimits: [requests, { name: "requests", cost: 2 }] },
    'ratelimits[1].name is "requests" (a string), which the key service refuses: repeats an earlier rate limit\'s name.',
  ],
  [
    "51 rate limits",
    { ratelimits: Array.from({ length: 51 }, (_, i) => ({ name: `limit${i}` })) },
    { ratelimits: Array.from({ length: 51 }, (_, i) => ({ name: `limit${i}` })) },
    "ratelimits is an array, which the key service refuses: must have at most 50 items.",
  ],
  ["a tag of 513 characters", { tags: ["t".repeat(513)] }, { tags: ["t".repeat(513)] }, 'tags[0] is "ttt'],
];

describe("apiKeyAuth() refuses at creation what the key service refuses", () => {
  it.each(newlyRefused)("%s", async (_name, options, body, message) => {
    const option = Object.keys(options)[0]!;
    let thrown: unknown;
    try {
      auth(options);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).option).toBe(option);
    expect((thrown as Error).message).toContain(message);
    // The service refuses the same value, at the same place.
    const location = (thrown as Error).message.match(/^apiKeyAuth: (\S+) /)![1]!;
    expect(await serviceVerdict(body)).toBe(`body.${location}`);
  });

  it("accepts the limits themselves, and the service does too", async () => {
    const options = { ratelimits: [{ name: "req", limit: 1, duration: 1000, cost: 0 }], tags: ["t".repeat(512)], cost: 0 };
    const app = express().get("/", auth(options), (_q, r) => r.send("ok"));
    expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
  });
});

describe("a per-request function returning what the service would refuse", () => {
  it.each([
    // A computed value may come from the request: described, never quoted.
    ["ratelimits", { ratelimits: () => [{ name: "r" }] }, "computed ratelimits[0].name is a string of 1 character, "],
    ["ratelimits", { ratelimits: () => [{ ...requests, duration: 0 }] }, "computed ratelimits[0].duration is a number, "],
    ["tags", { tags: () => ["t".repeat(513)] }, "computed tags[0] is"],
  ] as Array<[string, Partial<ApiKeyAuthOptions>, string]>)(
    "%s: fails that request with a 500, without calling the service",
    async (_n, options, message) => {
      const errors: string[] = [];
      const logger = { warn: () => {}, error: (fields: unknown, msg: string) => errors.push(`${msg} ${JSON.stringify(fields)}`) };
      const app = express().get("/", auth({ ...options, logger }), (_q, r) => r.send("ok"));
      const res = await request(app).get("/").set("X-API-Key", key);
      expect(res.status).toBe(500);
      expect(res.body.code).toBe("VERIFICATION_FAILED");
      expect(errors.join("\n")).toContain(message);
    },
  );
});
