// Every verification code → its documented status, challenge and headers, under the default table
// and the `forbidden` preset. Codes come from the real local key service (an unknown code from a stub).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import express from "express";
import request from "supertest";
import { createClient } from "keyguard/client";
import { apiKeyAuth, silentLogger, STATUS_PRESETS, type ApiKeyAuthOptions, type StatusPolicyOverrides } from "keyguard";
import { startService, startStub, verifyAnswer, type ServiceFixture } from "./helpers";

// The service clock starts at real time; EXPIRED moves it forward.
let clock = Date.now();
let fx: ServiceFixture;
let stub: Awaited<ReturnType<typeof startStub>>;

beforeAll(async () => {
  fx = await startService({ now: () => clock });
  stub = await startStub(verifyAnswer({ valid: false, code: "BRAND_NEW_CODE", keyId: "key_x" }));
});
afterAll(async () => {
  await fx.close();
  await stub.close();
});

interface Produced {
  key: string;
  options?: ApiKeyAuthOptions;
  /** Requests to send before the one under test (to use up a limit). */
  warmup?: number;
}

const PRODUCERS: Record<string, () => Promise<Produced>> = {
  NOT_FOUND: async () => ({ key: "sk_unknown_key_123" }),
  EXPIRED: async () => {
    const key = await fx.createKey({ expires: clock + 1000 });
    clock += 2000;
    return { key };
  },
  DISABLED: async () => ({ key: await fx.createKey({ enabled: false }) }),
  FORBIDDEN: async () => {
    const { apiId } = fx.svc.service.createApi({ name: "walled", ipWhitelist: ["10.9.9.9"] });
    const created = await fx.client.keys.createKey({ apiId });
    return { key: created.key };
  },
  INSUFFICIENT_PERMISSIONS: async () => ({
    key: await fx.createKey({ permissions: ["docs.read"] }),
    options: { permissions: "docs.read AND docs.write" },
  }),
  RATE_LIMITED: async () => ({
    key: await fx.createKey({ ratelimits: [{ name: "requests", limit: 1, duration: 60_000, autoApply: true }] }),
    warmup: 1,
  }),
  USAGE_EXCEEDED: async () => ({ key: await fx.createKey({ credits: { remaining: 1 } }), warmup: 1 }),
  BRAND_NEW_CODE: async () => ({
    key: "sk_anything",
    options: { client: createClient({ rootKey: "root", baseUrl: stub.baseUrl, logger: silentLogger }) },
  }),
};

interface Expected {
  status: number;
  challenge?: string;
}

const DEFAULT_EXPECTED: Record<string, Expected> = {
  NOT_FOUND: { status: 401, challenge: 'Bearer realm="api", error="invalid_token"' },
  EXPIRED: { status: 401, challenge: 'Bearer realm="api", error="invalid_token"' },
  DISABLED: { status: 401, challenge: 'Bearer realm="api", error="invalid_token"' },
  FORBIDDEN: { status: 403, challenge: 'Bearer realm="api", error="insufficient_scope"' },
  INSUFFICIENT_PERMISSIONS: {
    status: 403,
    challenge: 'Bearer realm="api", error="insufficient_scope", scope="docs.read AND docs.write"',
  },
  RATE_LIMITED: { status: 429 },
  USAGE_EXCEEDED: { status: 429 },
  BRAND_NEW_CODE: { status: 401, challenge: 'Bearer realm="api", error="invalid_token"' },
};

const PRESET_EXPECTED: Record<string, Expected> = {
  ...DEFAULT_EXPECTED,
  EXPIRED: { status: 403, challenge: 'Bearer realm="api", error="invalid_token"' },
  DISABLED: { status: 403, challenge: 'Bearer realm="api", error="invalid_token"' },
  RATE_LIMITED: { status: 403 },
  USAGE_EXCEEDED: { status: 403 },
  BRAND_NEW_CODE: { status: 403, challenge: 'Bearer realm="api", error="invalid_token"' },
};

const TABLES: Array<{ name: string; policy: StatusPolicyOverrides | undefined; expected: Record<string, Expected> }> = [
  { name: "default table", policy: undefined, expected: DEFAULT_EXPECTED },
  { name: "forbidden preset", policy: STATUS_PRESETS.forbidden, expected: PRESET_EXPECTED },
];

describe.each(TABLES)("$name", ({ policy, expected }) => {
  it.each(Object.keys(PRODUCERS))("%s", async (code) => {
    const produced = await PRODUCERS[code]!();
    const app = express();
    app.get(
      "/",
      apiKeyAuth({
        ...(produced.options?.client ? {} : { rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl }),
        logger: silentLogger,
        policy,
        ...produced.options,
      }),
      (_req, res) => res.send("ok"),
    );
    for (let i = 0; i < (produced.warmup ?? 0); i++) {
      expect((await request(app).get("/").set("X-API-Key", produced.key)).status).toBe(200);
    }
    const res = await request(app).get("/").set("Authorization", `Bearer ${produced.key}`);
    const want = expected[code]!;
    expect(res.status).toBe(want.status);
    expect(res.headers["www-authenticate"]).toBe(want.challenge);
    expect(res.body).toMatchObject({ code, status: want.status, title: expect.any(String), detail: expect.any(String) });
    if (code !== "NOT_FOUND" && code !== "BRAND_NEW_CODE") expect(res.body.requestId).toMatch(/^req_/);
    if (code === "RATE_LIMITED") {
      expect(res.headers["retry-after"]).toMatch(/^[1-9][0-9]*$/);
      // At most one window (60 s) past the service's clock.
      expect(Number(res.headers["retry-after"])).toBeLessThanOrEqual(Math.ceil((clock + 60_000 - Date.now()) / 1000));
      expect(res.headers["ratelimit-policy"]).toBe('"requests";q=1;w=60');
      expect(res.headers["ratelimit"]).toMatch(/^"requests";r=0;t=\d+$/);
    } else {
      expect(res.headers["retry-after"]).toBeUndefined();
    }
  });
});
