// Unit tests of denials (outcome → error with status and headers), problem+json bodies, and the
// classification of failed service calls.
import { describe, expect, it } from "vitest";
import { buildStatusPolicy, DEFAULT_STATUS_POLICY, STATUS_PRESETS } from "../../src/middleware/policy";
import {
  insufficientScopeDenial,
  invalidRequestDenial,
  missingKeyDenial,
  rejectedKeyDenial,
  serviceUnavailableDenial,
  verificationFailedDenial,
  type DenialContext,
} from "../../src/middleware/denials";
import { isKeyguardError, KeyRejectedError, MissingKeyError } from "../../src/middleware/errors";
import { problemBody } from "../../src/middleware/problem";
import { silentLogger } from "../../src/logger";
import { classifyServiceFailure } from "../../src/middleware/verify";

const ctx: DenialContext = { policy: DEFAULT_STATUS_POLICY, realm: "api", keyHint: "send it in X-API-Key", rateLimitHeaders: true };
const now = 1_700_000_000_000;

describe("denials", () => {
  it("missing key: 401 with a bare challenge", () => {
    const err = missingKeyDenial(ctx);
    expect(err).toBeInstanceOf(MissingKeyError);
    expect(err).toMatchObject({ status: 401, code: "MISSING_KEY", expose: true, headers: { "WWW-Authenticate": 'Bearer realm="api"' } });
    expect(isKeyguardError(err)).toBe(true);
  });

  it("invalid request: 400 invalid_request", () => {
    expect(invalidRequestDenial(ctx, "why")).toMatchObject({
      status: 400,
      code: "INVALID_REQUEST",
      detail: "why",
      headers: { "WWW-Authenticate": 'Bearer realm="api", error="invalid_request"' },
    });
  });

  it("FORBIDDEN (which the local service can also produce) → 403 insufficient_scope; 403 under the preset", () => {
    const result = { valid: false, code: "FORBIDDEN", keyId: "key_1" } as const;
    expect(rejectedKeyDenial(ctx, result, { now })).toMatchObject({
      status: 403,
      code: "FORBIDDEN",
      headers: { "WWW-Authenticate": 'Bearer realm="api", error="insufficient_scope"' },
    });
    const preset = { ...ctx, policy: buildStatusPolicy(STATUS_PRESETS.forbidden, silentLogger) };
    expect(rejectedKeyDenial(preset, result, { now }).status).toBe(403);
    expect(rejectedKeyDenial(preset, { valid: false, code: "NOT_FOUND" }, { now }).status).toBe(401);
  });

  it("RATE_LIMITED: 429 with Retry-After and RateLimit headers, no challenge", () => {
    const rl = {
      id: "rl_1",
      name: "requests",
      limit: 10,
      duration: 60_000,
      remaining: 0,
      reset: now + 42_000,
      exceeded: true,
      autoApply: true,
    };
    const err = rejectedKeyDenial(
      ctx,
      { valid: false, code: "RATE_LIMITED", keyId: "key_1", ratelimits: [rl] },
      { now, requestId: "req_1" },
    );
    expect(err).toBeInstanceOf(KeyRejectedError);
    expect(err.headers).toEqual({
      "Retry-After": "42",
      "RateLimit-Policy": '"requests";q=10;w=60',
      RateLimit: '"requests";r=0;t=42',
    });
    expect(err.result.keyId).toBe("key_1");
    expect(err.requestId).toBe("req_1");
  });

  it("an empty or VALID code on an invalid result counts as UNKNOWN", () => {
    expect(rejectedKeyDenial(ctx, { valid: false, code: "" }, { now }).code).toBe("UNKNOWN");
    expect(rejectedKeyDenial(ctx, { valid: false, code: "VALID" }, { now }).status).toBe(401);
  });

  it.each([
    ["NOT_FOUND", "NOT_FOUND"],
    ["A", "A"],
    [`A${"B".repeat(63)}`, `A${"B".repeat(63)}`],
    [`A${"B".repeat(64)}`, "UNKNOWN"],
    ["not_found", "UNKNOWN"],
    ["_X", "UNKNOWN"],
    ["X-Y", "UNKNOWN"],
    ["X Y", "UNKNOWN"],
    ["X\n", "UNKNOWN"],
  ])("echoes only UPPER_SNAKE codes of up to 64 characters: %j → %j", (code, shown) => {
    const err = rejectedKeyDenial(ctx, { valid: false, code }, { now });
    expect(err.code).toBe(shown);
    expect(problemBody(err).type).toBe(`urn:keyguard:problem:${shown.toLowerCase().replace(/_/g, "-")}`);
  });

  it("an unsafe code is replaced in the error's result too (a hostile service may echo the key there)", () => {
    const err = rejectedKeyDenial(ctx, { valid: false, code: "sk_callers_key_123", keyId: "k" }, { now });
    expect(err.code).toBe("UNKNOWN");
    expect(err.result).toEqual({ valid: false, code: "UNKNOWN", keyId: "k" });
    expect(Object.isFrozen(err.result)).toBe(true);
    const safe = { valid: false, code: "EXPIRED", keyId: "k" } as const;
    expect(rejectedKeyDenial(ctx, safe, { now }).result).toBe(safe);
  });

  it("INSUFFICIENT_PERMISSIONS names the query in the detail; scope only for a plain AND", () => {
    const result = { valid: false, code: "INSUFFICIENT_PERMISSIONS", keyId: "k" } as const;
    const and = rejectedKeyDenial(ctx, result, { now, query: "a.read AND b", scope: "a.read b" });
    expect(and.detail).toBe("The API key lacks the permissions this request requires: a.read AND b.");
    expect(and.headers["WWW-Authenticate"]).toBe('Bearer realm="api", error="insufficient_scope", scope="a.read b"');
    const or = rejectedKeyDenial(ctx, result, { now, query: "a.read OR b", scope: undefined });
    expect(or.headers["WWW-Authenticate"]).toBe('Bearer realm="api", error="insufficient_scope"');
  });

  it("insufficient scope (guards): 403 with scope", () => {
    expect(insufficientScopeDenial("api", "needs docs.read", "docs.read", "docs.read")).toMatchObject({
      status: 403,
      scope: "docs.read",
      headers: { "WWW-Authenticate": 'Bearer realm="api", error="insufficient_scope", scope="docs.read"' },
    });
  });

  it("service failures: 503 with Retry-After; 500 hidden from the caller", () => {
    expect(serviceUnavailableDenial(7, new Error("x"))).toMatchObject({
      status: 503,
      retryAfter: 7,
      headers: { "Retry-After": "7" },
      expose: true,
    });
    const failed = verificationFailedDenial("the key service rejected the root key", new Error("x"), "req_9");
    expect(failed).toMatchObject({ status: 500, expose: false, requestId: "req_9" });
    expect(problemBody(failed)).toEqual({
      type: "urn:keyguard:problem:verification-failed",
      title: "Internal Server Error",
      status: 500,
      detail: "The request could not be authenticated because of a server error.",
      code: "VERIFICATION_FAILED",
      requestId: "req_9",
    });
  });

  it("problem bodies show exposed details", () => {
    expect(problemBody(rejectedKeyDenial(ctx, { valid: false, code: "EXPIRED", keyId: "k" }, { now }))).toEqual({
      type: "urn:keyguard:problem:expired",
      title: "Unauthorized",
      status: 401,
      detail: "The API key has expired.",
      code: "EXPIRED",
    });
  });

  it("isKeyguardError recognises errors by brand, not by shape", () => {
    expect(isKeyguardError({ status: 401, code: "MISSING_KEY" })).toBe(false);
    expect(isKeyguardError(null)).toBe(false);
  });
});

describe("classifyServiceFailure", () => {
  const http = (status: number, extra: object = {}) => ({ code: "KEY_SERVICE_HTTP_ERROR", status, requestId: "req_1", ...extra });
  it.each([
    [{ code: "KEY_SERVICE_NETWORK_ERROR" }, "unavailable"],
    [{ code: "KEY_SERVICE_TIMEOUT", scope: "attempt" }, "unavailable"],
    [{ code: "KEY_SERVICE_INVALID_RESPONSE", status: 200 }, "unavailable"],
    [http(500), "unavailable"],
    [http(503), "unavailable"],
    [http(429), "unavailable"],
    [http(401), "misconfigured"],
    [http(403), "misconfigured"],
    [http(400), "misconfigured"],
    [http(404), "misconfigured"],
    [http(412), "misconfigured"],
    [new TypeError("bug"), "misconfigured"],
  ])("%j → %s", (err, kind) => {
    expect(classifyServiceFailure(err).kind).toBe(kind);
  });

  it("only the service's 429 may not fail open", () => {
    expect(classifyServiceFailure(http(429))).toMatchObject({ kind: "unavailable", mayFailOpen: false });
    expect(classifyServiceFailure(http(503))).toMatchObject({ kind: "unavailable", mayFailOpen: true });
    expect(classifyServiceFailure({ code: "KEY_SERVICE_NETWORK_ERROR" })).toMatchObject({ mayFailOpen: true });
  });

  it("takes Retry-After (ms) from the error, else 5 s", () => {
    expect(classifyServiceFailure(http(503, { retryAfter: 2500 }))).toMatchObject({ retryAfter: 3, requestId: "req_1" });
    expect(classifyServiceFailure(http(503))).toMatchObject({ retryAfter: 5 });
  });
});
