// Every verification code → its documented status, challenge and headers, under the default table
// and the `forbidden` preset, on Express 5 and 4. Codes come from the real local key service; odd
// answers (unknown codes, valid:true with another code) from a stub.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import request from "supertest";
import { createClient } from "keyguard/client";
import { apiKeyAuth, silentLogger, STATUS_PRESETS, type ApiKeyAuthOptions, type StatusPolicyOverrides } from "keyguard";
import { EXPRESS_VERSIONS, startService, startStub, type ServiceFixture } from "./helpers";
import { GENEROUS } from "../support/time-limits";

// The service clock runs with real time; EXPIRED moves it forward by an offset. The middleware
// reads the real clock, so a rate-limit reset can then look further away than one window: the
// middleware caps it at the window (see ratelimit-headers.ts), which the RATE_LIMITED case checks.
let offset = 0;
const serviceNow = () => Date.now() + offset;
let fx: ServiceFixture;
let stub: Awaited<ReturnType<typeof startStub>>;
/** What the stub answers verifyKey with (its `data`). */
let stubAnswer: unknown = { valid: false, code: "BRAND_NEW_CODE", keyId: "key_x" };
let stubCalls = 0;

beforeAll(async () => {
  fx = await startService({ now: serviceNow });
  stub = await startStub((_req, res) => {
    stubCalls++;
    res.setHeader("Content-Type", "application/json");
    res.end(JSON.stringify({ meta: { requestId: "req_stub" }, data: stubAnswer }));
  });
});
afterAll(async () => {
  await fx.close();
  await stub.close();
});

const stubClient = () => createClient({ rootKey: "root", baseUrl: stub.baseUrl, logger: silentLogger });

interface Produced {
  key: string;
  options?: ApiKeyAuthOptions;
  /** Requests to send before the one under test (to use up a limit). */
  warmup?: number;
}

const PRODUCERS: Record<string, () => Promise<Produced>> = {
  NOT_FOUND: async () => ({ key: "sk_unknown_key_123" }),
  EXPIRED: async () => {
    const key = await fx.createKey({ expires: serviceNow() + 1000 });
    offset += 2000;
    return { key };
  },
  DISABLED: async () => ({ key: await fx.createKey({ enabled: false }) }),
  FORBIDDEN: async () => {
    const { apiId } = await fx.svc.service.createApi({ name: "walled", ipWhitelist: ["10.9.9.9"] });
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
  BRAND_NEW_CODE: async () => {
    stubAnswer = { valid: false, code: "BRAND_NEW_CODE", keyId: "key_x" };
    return { key: "sk_anything", options: { client: stubClient() } };
  },
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
  // RFC 6750 scope: the space-separated permissions of a plain AND query.
  INSUFFICIENT_PERMISSIONS: { status: 403, challenge: 'Bearer realm="api", error="insufficient_scope", scope="docs.read docs.write"' },
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

describe.each(EXPRESS_VERSIONS)("$name", ({ express }) => {
  describe.each(TABLES)("$name", ({ policy, expected }) => {
    it.each(Object.keys(PRODUCERS))("%s", async (code) => {
      const produced = await PRODUCERS[code]!();
      const app = express();
      app.get(
        "/",
        apiKeyAuth({
          ...(produced.options?.client ? {} : { rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl }),
          logger: silentLogger,
          ...GENEROUS,
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
      if (code !== "NOT_FOUND") expect(res.body.requestId).toMatch(/^req_/);
      if (code === "RATE_LIMITED") {
        expect(res.headers["retry-after"]).toMatch(/^[1-9][0-9]*$/);
        expect(Number(res.headers["retry-after"])).toBeLessThanOrEqual(60); // at most one window
        expect(res.headers["ratelimit-policy"]).toBe('"requests";q=1;w=60');
        expect(res.headers["ratelimit"]).toMatch(/^"requests";r=0;t=\d+$/);
      } else {
        // USAGE_EXCEEDED included: the result does not say when credits refill.
        expect(res.headers["retry-after"]).toBeUndefined();
      }
    });
  });

  describe("odd answers from the service", () => {
    function stubApp(answer: unknown) {
      stubAnswer = answer;
      stubCalls = 0;
      let reached = 0;
      const app = express().get("/", apiKeyAuth({ client: stubClient(), logger: silentLogger }), (_q, r) => {
        reached++;
        r.send("reached");
      });
      return { app, reached: () => reached };
    }

    it.each([
      { answer: { valid: true, code: "RATE_LIMITED", keyId: "key_1" }, status: 429, code: "RATE_LIMITED" },
      { answer: { valid: true, code: "USAGE_EXCEEDED", keyId: "key_1" }, status: 429, code: "USAGE_EXCEEDED" },
      { answer: { valid: true, code: "DISABLED", keyId: "key_1" }, status: 401, code: "DISABLED" },
      { answer: { valid: true, code: "SOMETHING_NEW", keyId: "key_1" }, status: 401, code: "SOMETHING_NEW" },
      { answer: { valid: true, code: "", keyId: "key_1" }, status: 401, code: "UNKNOWN" },
    ])("valid: true with code $answer.code is a denial ($status $code), never a pass, cached or not", async ({ answer, status, code }) => {
      const { app, reached } = stubApp(answer);
      for (let i = 0; i < 2; i++) {
        const res = await request(app).get("/").set("X-API-Key", "sk_abc");
        expect(res.status).toBe(status);
        expect(res.body.code).toBe(code);
      }
      expect(reached()).toBe(0);
      expect(stubCalls).toBe(2); // never stored
    });

    it.each(["<script>alert(1)</script> internal db host 10.0.0.5", "not_found", "A".repeat(65), "EXPIRED\r\nX-Injected: 1", "1ABC"])(
      "a code that is not an UPPER_SNAKE identifier is not echoed: %j → UNKNOWN",
      async (odd) => {
        const { app } = stubApp({ valid: false, code: odd, keyId: "key_1" });
        const res = await request(app).get("/").set("X-API-Key", "sk_abc");
        expect(res.status).toBe(401);
        expect(res.body).toMatchObject({ code: "UNKNOWN", type: "urn:keyguard:problem:unknown" });
        expect(res.text).not.toContain(odd);
        expect(res.text).not.toContain("10.0.0.5");
      },
    );

    it("a 64-character UPPER_SNAKE code is echoed", async () => {
      const code = `X${"_".repeat(62)}Y`;
      const { app } = stubApp({ valid: false, code, keyId: "key_1" });
      const res = await request(app).get("/").set("X-API-Key", "sk_abc");
      expect(res.body.code).toBe(code);
    });
  });

  describe("the scope parameter (RFC 6750: space-separated tokens)", () => {
    it.each([
      { query: "docs.read", scope: 'scope="docs.read"' },
      { query: "docs.read AND (docs.write AND admin)", scope: 'scope="docs.read docs.write admin"' },
      { query: "(b OR c) AND d", scope: undefined },
      { query: "b OR c", scope: undefined },
    ])("permissions $query → $scope", async ({ query, scope }) => {
      const key = await fx.createKey({ permissions: ["other"] });
      const app = express().get(
        "/",
        apiKeyAuth({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, logger: silentLogger, ...GENEROUS, permissions: query }),
        (_q, r) => r.send("ok"),
      );
      const res = await request(app).get("/").set("X-API-Key", key);
      expect(res.status).toBe(403);
      const challenge = 'Bearer realm="api", error="insufficient_scope"';
      expect(res.headers["www-authenticate"]).toBe(scope === undefined ? challenge : `${challenge}, ${scope}`);
      expect(res.body.detail).toContain(query); // the query itself stays in the problem detail
    });
  });
});
