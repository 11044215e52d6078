// Unit tests of the status table, its overrides and presets, and the Bearer challenge.
import { describe, expect, it } from "vitest";
import { bearerChallenge, scopeOf } from "../../src/middleware/denials";
import { parsePermissionQuery } from "../../src/protocol/permission-query";
import { ConfigError } from "../../src/middleware/errors";
import { buildStatusPolicy, DEFAULT_STATUS_POLICY, ruleFor, STATUS_PRESETS } from "../../src/middleware/policy";
import { silentLogger } from "../../src/logger";
import { recordingLogger } from "./helpers";

describe("status policy", () => {
  it("has the documented defaults and is frozen", () => {
    expect(DEFAULT_STATUS_POLICY).toEqual({
      MISSING_KEY: { status: 401 },
      INVALID_REQUEST: { status: 400, error: "invalid_request" },
      INVALID_CHECKSUM: { status: 401, error: "invalid_token" },
      NOT_FOUND: { status: 401, error: "invalid_token" },
      EXPIRED: { status: 401, error: "invalid_token" },
      DISABLED: { status: 401, error: "invalid_token" },
      FORBIDDEN: { status: 403, error: "insufficient_scope" },
      INSUFFICIENT_PERMISSIONS: { status: 403, error: "insufficient_scope" },
      RATE_LIMITED: { status: 429 },
      USAGE_EXCEEDED: { status: 429 },
      UNKNOWN: { status: 401, error: "invalid_token" },
    });
    expect(Object.isFrozen(DEFAULT_STATUS_POLICY)).toBe(true);
    expect(Object.isFrozen(DEFAULT_STATUS_POLICY.NOT_FOUND)).toBe(true);
  });

  it("sends unknown codes (and VALID) to UNKNOWN", () => {
    expect(ruleFor(DEFAULT_STATUS_POLICY, "SOMETHING_NEW")).toEqual({ status: 401, error: "invalid_token" });
    expect(ruleFor(DEFAULT_STATUS_POLICY, "toString")).toEqual({ status: 401, error: "invalid_token" });
    expect(ruleFor(DEFAULT_STATUS_POLICY, "VALID")).toEqual({ status: 401, error: "invalid_token" });
  });

  it("merges overrides entry by entry, with number shorthand", () => {
    const policy = buildStatusPolicy({ EXPIRED: 403, RATE_LIMITED: { status: 503 }, MISSING_KEY: 401, NEW_CODE: 402 }, silentLogger);
    expect(policy.EXPIRED).toEqual({ status: 403, error: "insufficient_scope" });
    expect(policy.RATE_LIMITED).toEqual({ status: 503 });
    expect(policy.MISSING_KEY).toEqual({ status: 401 });
    expect(ruleFor(policy, "NEW_CODE")).toEqual({ status: 402 });
    expect(policy.NOT_FOUND).toBe(DEFAULT_STATUS_POLICY.NOT_FOUND);
    expect(DEFAULT_STATUS_POLICY.EXPIRED.status).toBe(401);
  });

  it("rejects bad overrides naming the entry", () => {
    expect(() => buildStatusPolicy({ EXPIRED: 200 }, silentLogger)).toThrow(
      "apiKeyAuth: invalid option policy.EXPIRED.status = 200. Use a whole number 400..599 (a denial's status).",
    );
    expect(() => buildStatusPolicy({ EXPIRED: { status: 401, error: "nope" as never } }, silentLogger)).toThrow(
      'apiKeyAuth: invalid option policy.EXPIRED.error = "nope". Use "invalid_request", "invalid_token" or "insufficient_scope", or leave it unset.',
    );
    expect(() => buildStatusPolicy({ VALID: 401 } as never, silentLogger)).toThrow(ConfigError);
    expect(() => buildStatusPolicy({ expired: 401 }, silentLogger)).toThrow(/not a code/);
    expect(() => buildStatusPolicy("forbidden" as never, silentLogger)).toThrow(/object of overrides/);
  });

  it.each([
    [
      "SERVICE_UNAVAILABLE",
      500,
      /policy\.SERVICE_UNAVAILABLE cannot be set; a key service that cannot answer is always 503 with Retry-After\. To answer it differently, use onDenied \(err\.code === "SERVICE_UNAVAILABLE"\)\. Remove it\./,
    ],
    [
      "VERIFICATION_FAILED",
      503,
      /policy\.VERIFICATION_FAILED cannot be set; a verification that fails by misconfiguration is always 500\./,
    ],
    ["INSUFFICIENT_SCOPE", 401, /policy\.INSUFFICIENT_SCOPE cannot be set; a guard's refusal is always 403/],
    ["VALID", 401, /policy\.VALID cannot be set; a valid key always passes\. Remove it\./],
  ])("refuses %s, whose status the table does not decide", (code, status, message) => {
    for (const value of [status, { status }]) {
      const attempt = () => buildStatusPolicy({ [code]: value } as never, silentLogger);
      expect(attempt).toThrow(ConfigError);
      expect(attempt).toThrow(message);
    }
  });

  it("warns once about codes neither the table nor the protocol knows, suggesting the near miss, and keeps them", () => {
    const logger = recordingLogger();
    const policy = buildStatusPolicy({ EXPIRD: 403, DISABLED: 403, NEW_CODE: 402, UNKNOWN: 403 }, logger);
    expect(logger.entries).toEqual([
      {
        level: "warn",
        message:
          "apiKeyAuth: policy names unknown code(s) EXPIRD, NEW_CODE (neither a row of the status table nor a code the key service is known to send); each applies only if the service answers it",
        fields: { unknownCodes: ["EXPIRD", "NEW_CODE"], didYouMean: { EXPIRD: "EXPIRED" } },
      },
    ]);
    expect(ruleFor(policy, "EXPIRD").status).toBe(403);
    expect(ruleFor(policy, "EXPIRED").status).toBe(401);
  });

  it("says nothing about the codes it knows, the presets included", () => {
    const logger = recordingLogger();
    buildStatusPolicy({ ...STATUS_PRESETS.forbidden, MISSING_KEY: 401, INVALID_REQUEST: 400, NOT_FOUND: 404 }, logger);
    expect(logger.entries).toEqual([]);
  });

  it("forbidden preset: 403 for every rejection except NOT_FOUND", () => {
    const policy = buildStatusPolicy(STATUS_PRESETS.forbidden, silentLogger);
    for (const code of ["EXPIRED", "DISABLED", "FORBIDDEN", "INSUFFICIENT_PERMISSIONS", "RATE_LIMITED", "USAGE_EXCEEDED", "WHATEVER"]) {
      expect(ruleFor(policy, code).status, code).toBe(403);
    }
    expect(ruleFor(policy, "NOT_FOUND").status).toBe(401);
    expect(ruleFor(policy, "MISSING_KEY").status).toBe(401);
  });
});

describe("bearerChallenge", () => {
  it("builds RFC 6750 challenges", () => {
    expect(bearerChallenge({ realm: "api" })).toBe('Bearer realm="api"');
    expect(bearerChallenge({ realm: "api", error: "invalid_token" })).toBe('Bearer realm="api", error="invalid_token"');
    expect(bearerChallenge({ realm: "api", error: "insufficient_scope", scope: "a.read AND b" })).toBe(
      'Bearer realm="api", error="insufficient_scope", scope="a.read AND b"',
    );
    expect(bearerChallenge({ realm: "api", error: "invalid_token", scope: "ignored" })).toBe('Bearer realm="api", error="invalid_token"');
    expect(bearerChallenge({ realm: 'a"b\\c' })).toBe('Bearer realm="a\\"b\\\\c"');
  });
});

/** The scope of a query as the middleware computes it: once, from the parsed query. */
function scopeForQuery(query: string): string | undefined {
  try {
    return scopeOf(parsePermissionQuery(query));
  } catch {
    return undefined;
  }
}

describe("scopeOf", () => {
  it.each([
    ["docs.read", "docs.read"],
    ["docs.read AND docs.write", "docs.read docs.write"],
    ["(a AND b) AND (c AND a)", "a b c"],
    ["  a   and  b ", "a b"],
    ["a OR b", undefined],
    ["(a OR b) AND c", undefined],
    ["a AND (", undefined],
    ["", undefined],
  ])("%j → %j", (query, scope) => {
    expect(scopeForQuery(query)).toBe(scope);
  });
});
