// The request shape (permission query, cost, rate limits, tags) when some options are functions
// and others fixed: the fixed ones are resolved once at factory time, and each request sends
// exactly what an all-fixed configuration with the same values would. Real local service.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import express from "express";
import request from "supertest";
import { createClient } from "keyguard/client";
import { apiKeyAuth, silentLogger, type ApiKeyAuthOptions } from "keyguard";
import { planShape, ShapeError, type ShapeOptions } from "../../src/middleware/request-shape";
import { startService, type ServiceFixture } from "./helpers";
import { GENEROUS } from "../support/time-limits";

let fx: ServiceFixture;
beforeAll(async () => {
  fx = await startService();
});
afterAll(() => fx.close());

/** An apiKeyAuth() on the real service whose client records each verifyKey body (without the key). */
function recordingApp(options: ApiKeyAuthOptions) {
  const bodies: Array<Record<string, unknown>> = [];
  const client = createClient({
    rootKey: fx.svc.rootKey,
    baseUrl: fx.svc.baseUrl,
    logger: silentLogger,
    retry: false,
    fetch: (input, init) => {
      const { key: _key, ...rest } = JSON.parse(String(init?.body)) as Record<string, unknown>;
      bodies.push(rest);
      return fetch(input, init);
    },
  });
  const app = express().get("/", apiKeyAuth({ client, logger: silentLogger, cache: false, ...GENEROUS, ...options }), (_q, r) =>
    r.send("ok"),
  );
  return { app, bodies };
}

describe("a fixed permission query with a computed cost", () => {
  const options: ApiKeyAuthOptions = { permissions: "docs.read AND docs.write", cost: () => 2 };

  it("sends the fixed query and the computed cost on every request, and charges it", async () => {
    const key = await fx.createKey({ permissions: ["docs.read", "docs.write"], credits: { remaining: 10 } });
    const { app, bodies } = recordingApp(options);
    for (let i = 0; i < 3; i++) expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
    expect(bodies).toEqual(Array(3).fill({ permissions: "docs.read AND docs.write", credits: { cost: 2 } }));
    const after = await fx.client.keys.verifyKey({ key, credits: { cost: 0 } });
    expect(after.credits).toBe(4);
  });

  it("denies a key without the permissions: 403 naming the query, with the query's scope", async () => {
    const key = await fx.createKey({ permissions: ["docs.read"] });
    const { app } = recordingApp(options);
    for (let i = 0; i < 2; i++) {
      const res = await request(app).get("/").set("X-API-Key", key);
      expect(res.status).toBe(403);
      expect(res.body.code).toBe("INSUFFICIENT_PERMISSIONS");
      expect(res.body.detail).toBe("The API key lacks the permissions this request requires: docs.read AND docs.write.");
      expect(res.headers["www-authenticate"]).toBe('Bearer realm="api", error="insufficient_scope", scope="docs.read docs.write"');
    }
  });
});

describe("fixed rate limits and tags with a computed permission query", () => {
  it("sends the same fixed parts with each computed query", async () => {
    const key = await fx.createKey({ permissions: ["docs.read"] });
    const ratelimits = [{ name: "requests", limit: 100, duration: 60_000 }];
    const tags = ["route=docs"];
    const { app, bodies } = recordingApp({
      permissions: (req) => (req.headers["x-need"] === "write" ? "docs.write" : "docs.read"),
      ratelimits,
      tags,
    });
    // Later changes to the caller's arrays change nothing.
    ratelimits[0]!.limit = 1;
    tags.push("changed");
    expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
    expect((await request(app).get("/").set("X-API-Key", key).set("X-Need", "write")).status).toBe(403);
    const fixed = { ratelimits: [{ name: "requests", limit: 100, duration: 60_000 }], tags: ["route=docs"] };
    expect(bodies).toEqual([
      { permissions: "docs.read", ...fixed },
      { permissions: "docs.write", ...fixed },
    ]);
  });

  it("a computed value the service would reject is still a 500 without a service call", async () => {
    const key = await fx.createKey({ permissions: ["docs.read"] });
    const { app, bodies } = recordingApp({ permissions: "docs.read", tags: ["fixed"], cost: () => -1 });
    const res = await request(app).get("/").set("X-API-Key", key);
    expect(res.status).toBe(500);
    expect(res.body.code).toBe("VERIFICATION_FAILED");
    expect(bodies).toEqual([]);
  });
});

describe("planShape", () => {
  const values = {
    permissions: "a AND (b AND c)",
    cost: 3,
    ratelimits: [{ name: "requests", cost: 1 }],
    tags: ["t1", "t2"],
  };
  const names = Object.keys(values) as Array<keyof typeof values>;
  // Every mix of fixed and computed (sync and async) options gives the all-fixed shape.
  const mixes = Array.from({ length: 2 ** names.length }, (_, mask) => mask).flatMap((mask) =>
    [false, true].map((async) => ({ mask, async })),
  );

  it.each(mixes)("options computed by mask $mask (async: $async) give the all-fixed shape", async ({ mask, async }) => {
    const fixed = planShape<object>(values).fixed!;
    const options: Record<string, unknown> = {};
    for (const [i, name] of names.entries()) {
      const value = values[name];
      options[name] = (mask & (1 << i)) === 0 ? value : () => (async ? Promise.resolve(value) : value);
    }
    const plan = planShape(options as unknown as ShapeOptions<object>);
    expect(plan.fixed === undefined).toBe(mask !== 0);
    const shape = await plan.resolve({});
    expect(shape).toEqual(fixed);
    expect(shape).toEqual({
      body: { permissions: "a AND (b AND c)", credits: { cost: 3 }, ratelimits: [{ name: "requests", cost: 1 }], tags: ["t1", "t2"] },
      cacheable: false,
      query: "a AND (b AND c)",
      scope: "a b c",
    });
    expect(Object.isFrozen(shape)).toBe(true);
  });

  it("checks what the functions return, naming the problem", async () => {
    const base = { permissions: "docs.read", cost: undefined, ratelimits: undefined, tags: ["t"] };
    await expect(planShape({ ...base, permissions: () => "docs.read AND (" }).resolve({})).rejects.toThrow(
      /^permissions returned an invalid query: /,
    );
    await expect(planShape({ ...base, permissions: () => 5 as never }).resolve({})).rejects.toThrow(
      "permissions returned number, not a query string",
    );
    await expect(planShape({ ...base, cost: () => 1.5 }).resolve({})).rejects.toThrow(ShapeError);
    await expect(planShape({ ...base, tags: () => [""] }).resolve({})).rejects.toThrow(
      "computed tags[0] is a string of 0 characters, which the key service refuses: must be at least 1 characters long. Use an array of short, non-empty strings",
    );
  });

  it("a computed empty query, undefined or an empty list sends nothing; the answer may be cached", async () => {
    const shape = await planShape({ permissions: () => "", cost: () => undefined, ratelimits: () => [], tags: () => [] }).resolve({});
    expect(shape).toEqual({ body: {}, cacheable: true, query: "", scope: undefined });
  });
});
