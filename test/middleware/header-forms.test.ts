// Header forms → exact status and WWW-Authenticate, against a real local key service, run on
// Express 5 and Express 4 from one scenario list.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import request from "supertest";
import { apiKeyAuth, getApiKey, silentLogger } from "keyguard";
import { countingClient, EXPRESS_VERSIONS, startService, type ServiceFixture } from "./helpers";
import { GENEROUS } from "../support/time-limits";

const BARE = 'Bearer realm="api"';
const INVALID_TOKEN = 'Bearer realm="api", error="invalid_token"';
const INVALID_REQUEST = 'Bearer realm="api", error="invalid_request"';

interface Form {
  name: string;
  /** Header pairs; `KEY` is replaced by a valid key, `OTHER` by another valid key. A value array sends the header twice. */
  headers: Array<[string, string | string[]]>;
  status: number;
  challenge: string | undefined;
}

const FORMS: Form[] = [
  { name: "no credentials", headers: [], status: 401, challenge: BARE },
  { name: "Bearer", headers: [["Authorization", "Bearer KEY"]], status: 200, challenge: undefined },
  { name: "bearer (lower-case scheme)", headers: [["Authorization", "bearer KEY"]], status: 200, challenge: undefined },
  { name: "BEARER (upper-case scheme)", headers: [["Authorization", "BEARER KEY"]], status: 200, challenge: undefined },
  { name: "lower-case header name", headers: [["authorization", "Bearer KEY"]], status: 200, challenge: undefined },
  { name: "several spaces after the scheme", headers: [["Authorization", "Bearer    KEY"]], status: 200, challenge: undefined },
  { name: "trailing whitespace (trimmed by HTTP)", headers: [["Authorization", "Bearer KEY   "]], status: 200, challenge: undefined },
  { name: "Bearer without a token", headers: [["Authorization", "Bearer"]], status: 400, challenge: INVALID_REQUEST },
  { name: "Bearer and a space only", headers: [["Authorization", "Bearer "]], status: 400, challenge: INVALID_REQUEST },
  { name: "empty Authorization", headers: [["Authorization", ""]], status: 400, challenge: INVALID_REQUEST },
  { name: "tab instead of space", headers: [["Authorization", "Bearer\tKEY"]], status: 400, challenge: INVALID_REQUEST },
  { name: "two tokens", headers: [["Authorization", "Bearer KEY OTHER"]], status: 400, challenge: INVALID_REQUEST },
  { name: "token with a comma", headers: [["Authorization", "Bearer KEY,"]], status: 400, challenge: INVALID_REQUEST },
  { name: "non-ASCII token", headers: [["Authorization", "Bearer KEYé"]], status: 400, challenge: INVALID_REQUEST },
  { name: "Basic scheme only", headers: [["Authorization", "Basic dXNlcjpwYXNz"]], status: 401, challenge: BARE },
  { name: "unknown scheme", headers: [["Authorization", "Token KEY"]], status: 401, challenge: BARE },
  {
    name: "Basic plus X-API-Key",
    headers: [
      ["Authorization", "Basic dXNlcjpwYXNz"],
      ["X-API-Key", "KEY"],
    ],
    status: 200,
    challenge: undefined,
  },
  { name: "X-API-Key", headers: [["X-API-Key", "KEY"]], status: 200, challenge: undefined },
  { name: "x-api-key (lower case)", headers: [["x-api-key", "KEY"]], status: 200, challenge: undefined },
  { name: "empty X-API-Key", headers: [["X-API-Key", ""]], status: 400, challenge: INVALID_REQUEST },
  { name: "X-API-Key with a space", headers: [["X-API-Key", "KEY OTHER"]], status: 400, challenge: INVALID_REQUEST },
  { name: "non-ASCII X-API-Key", headers: [["X-API-Key", "KEYü"]], status: 400, challenge: INVALID_REQUEST },
  { name: "X-API-Key sent twice (same key)", headers: [["X-API-Key", ["KEY", "KEY"]]], status: 400, challenge: INVALID_REQUEST },
  {
    name: "Authorization sent twice",
    headers: [["Authorization", ["Bearer KEY", "Bearer OTHER"]]],
    status: 400,
    challenge: INVALID_REQUEST,
  },
  {
    name: "same key in both headers",
    headers: [
      ["Authorization", "Bearer KEY"],
      ["X-API-Key", "KEY"],
    ],
    status: 200,
    challenge: undefined,
  },
  {
    name: "different keys in the two headers",
    headers: [
      ["Authorization", "Bearer KEY"],
      ["X-API-Key", "OTHER"],
    ],
    status: 400,
    challenge: INVALID_REQUEST,
  },
  {
    name: "malformed Bearer with a valid X-API-Key",
    headers: [
      ["Authorization", "Bearer"],
      ["X-API-Key", "KEY"],
    ],
    status: 400,
    challenge: INVALID_REQUEST,
  },
  { name: "unknown key", headers: [["Authorization", "Bearer sk_doesnotexist"]], status: 401, challenge: INVALID_TOKEN },
  { name: "key with padding appended (another key)", headers: [["Authorization", "Bearer KEY=="]], status: 401, challenge: INVALID_TOKEN },
  { name: "oversize key (513 chars)", headers: [["X-API-Key", "k".repeat(513)]], status: 401, challenge: INVALID_TOKEN },
  {
    name: "oversize Bearer token (513 chars)",
    headers: [["Authorization", `Bearer ${"k".repeat(513)}`]],
    status: 401,
    challenge: INVALID_TOKEN,
  },
  {
    name: "Bearer token of exactly 512 chars (unknown key)",
    headers: [["Authorization", `Bearer ${"k".repeat(512)}`]],
    status: 401,
    challenge: INVALID_TOKEN,
  },
];

let fx: ServiceFixture;
let key: string;
let other: string;

beforeAll(async () => {
  fx = await startService();
  key = await fx.createKey({ name: "forms" });
  other = await fx.createKey({ name: "other" });
});
afterAll(() => fx.close());

it("covers at least 20 header forms", () => {
  expect(FORMS.length).toBeGreaterThanOrEqual(20);
});

describe.each(EXPRESS_VERSIONS)("$name", ({ express }) => {
  it.each(FORMS)("$name → $status", async (form) => {
    const { client, calls } = countingClient(fx.svc, { retry: false });
    const app = express();
    app.get("/", apiKeyAuth({ client, logger: silentLogger, cache: false, ...GENEROUS }), (req, res) => {
      res.json({ keyId: getApiKey(req)?.keyId });
    });
    let r = request(app).get("/");
    for (const [name, value] of form.headers) {
      const fill = (v: string) => v.replace("KEY", key).replace("OTHER", other);
      r = r.set(name, (Array.isArray(value) ? value.map(fill) : fill(value)) as string);
    }
    const res = await r;
    expect(res.status).toBe(form.status);
    expect(res.headers["www-authenticate"]).toBe(form.challenge);
    if (form.status === 200) {
      expect(res.body.keyId).toMatch(/^key_/);
    } else {
      expect(res.headers["content-type"]).toBe("application/problem+json; charset=utf-8");
      expect(res.body).toMatchObject({ status: form.status, type: expect.stringMatching(/^urn:keyguard:problem:/) });
      expect(JSON.stringify(res.body)).not.toContain(key);
    }
    // Malformed and missing credentials, and oversize keys, never reach the service.
    const reachesService =
      form.status === 200 ||
      form.name.startsWith("unknown key") ||
      form.name.startsWith("key with padding") ||
      form.name.startsWith("Bearer token of exactly");
    expect(calls.count).toBe(reachesService ? 1 : 0);
  });
});
