// Strict envelope parsing (pure): success envelopes, error envelopes and non-envelope error bodies.

import { describe, expect, it } from "vitest";
import { parseErrorEnvelope, parseSuccessEnvelope } from "../../src/client/envelope";

const ok = (body: unknown) => JSON.stringify(body);

describe("parseSuccessEnvelope", () => {
  it("returns data and requestId", () => {
    expect(parseSuccessEnvelope("keys.getKey", ok({ meta: { requestId: "req_1" }, data: { keyId: "key_1" } }))).toEqual({
      ok: true,
      data: { keyId: "key_1" },
      requestId: "req_1",
    });
  });

  it("returns pagination of list operations; absent pagination is a last page", () => {
    expect(
      parseSuccessEnvelope(
        "permissions.listPermissions",
        ok({ meta: { requestId: "r" }, data: [], pagination: { cursor: "perm_2", hasMore: true } }),
      ),
    ).toMatchObject({
      ok: true,
      pagination: { cursor: "perm_2", hasMore: true },
    });
    expect(parseSuccessEnvelope("permissions.listRoles", ok({ meta: { requestId: "r" }, data: [] }))).toMatchObject({
      ok: true,
      pagination: { hasMore: false },
    });
  });

  it.each([
    ["keys.getKey", "", "not JSON"],
    ["keys.getKey", "null", "not a JSON object"],
    ["keys.getKey", ok({ meta: {}, data: {} }), "meta.requestId"],
    ["keys.getKey", ok({ meta: { requestId: 5 }, data: {} }), "meta.requestId"],
    ["keys.getKey", ok({ meta: { requestId: "r" } }), "data is missing"],
    ["keys.getKey", ok({ meta: { requestId: "r" }, data: "text" }), "not an object"],
    ["apis.listKeys", ok({ meta: { requestId: "r" }, data: {} }), "not an array"],
    ["apis.listKeys", ok({ meta: { requestId: "r" }, data: [], pagination: { hasMore: "yes" } }), "pagination"],
    ["apis.listKeys", ok({ meta: { requestId: "r" }, data: [], pagination: { hasMore: true, cursor: 3 } }), "pagination"],
    ["keys.verifyKey", ok({ meta: { requestId: "r" }, data: { valid: "true", code: "VALID" } }), "shape"],
    ["keys.createKey", ok({ meta: { requestId: "r" }, data: { keyId: "key_1" } }), "shape"],
    ["permissions.createPermission", ok({ meta: { requestId: "r" }, data: [] }), "shape"],
    ["ratelimit.limit", ok({ meta: { requestId: "r" }, data: { limit: 10, reset: 1, success: true } }), "shape"],
    ["ratelimit.multiLimit", ok({ meta: { requestId: "r" }, data: { passed: true, limits: {} } }), "shape"],
  ])("%s: rejects %s", (operation, text, reason) => {
    const parsed = parseSuccessEnvelope(operation, text);
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? "" : parsed.reason).toContain(reason);
  });

  it("accepts fields it does not know, and checks only what the answer's schema requires", () => {
    const data = { valid: false, code: "SOMETHING_NEW", keyId: 5, extra: { nested: true } };
    expect(parseSuccessEnvelope("keys.verifyKey", ok({ meta: { requestId: "r" }, data }))).toMatchObject({ ok: true, data });
    const limit = { limit: 10, remaining: 9, reset: 1, success: true, overrideId: 7, more: "x" };
    expect(parseSuccessEnvelope("ratelimit.limit", ok({ meta: { requestId: "r" }, data: limit }))).toMatchObject({ ok: true });
  });
});

describe("parseErrorEnvelope", () => {
  it("reads the envelope, its kind and its validation errors", () => {
    const text = ok({
      meta: { requestId: "req_e" },
      error: {
        title: "Not Found",
        detail: "no such permission",
        status: 404,
        type: "https://unkey.com/docs/api-reference/errors-v2/unkey/data/permission_not_found",
        errors: [{ location: "body.permission", message: "m" }, { bogus: true }],
      },
    });
    expect(parseErrorEnvelope(404, text, "Not Found")).toEqual({
      requestId: "req_e",
      title: "Not Found",
      detail: "no such permission",
      type: "https://unkey.com/docs/api-reference/errors-v2/unkey/data/permission_not_found",
      identifier: "err:unkey:data:permission_not_found",
      kind: "data.permission_not_found",
      errors: [{ location: "body.permission", message: "m" }],
    });
  });

  it("keeps an envelope with an unknown type URL, without kind", () => {
    const parsed = parseErrorEnvelope(
      418,
      ok({ meta: { requestId: "r" }, error: { title: "T", detail: "D", status: 418, type: "https://example.com/x" } }),
      "I'm a Teapot",
    );
    expect(parsed).toMatchObject({ title: "T", type: "https://example.com/x" });
    expect(parsed.kind).toBeUndefined();
  });

  it.each([
    ["HTML", "<html>502 Bad Gateway</html>"],
    ["truncated JSON", '{"error":{"title":"Ser'],
    ["an error without detail", ok({ error: { title: "x", status: 503, type: "t" } })],
    ["no body", undefined],
  ])("synthesizes an error for %s", (_name, text) => {
    expect(parseErrorEnvelope(502, text, "Bad Gateway")).toEqual({
      title: "Bad Gateway",
      detail: "The key service answered HTTP 502 without an error envelope.",
      type: "about:blank",
    });
  });

  it("uses HTTP <status> when the status has no reason phrase, and keeps a requestId it can read", () => {
    expect(parseErrorEnvelope(599, ok({ meta: { requestId: "req_x" } }), "")).toMatchObject({
      title: "HTTP 599",
      requestId: "req_x",
      type: "about:blank",
    });
  });

  it("redacts the given secrets from every text field and derives kind from the redacted type", () => {
    const secret = "sk_secret_key_123";
    const parsed = parseErrorEnvelope(
      404,
      ok({
        meta: { requestId: secret },
        error: {
          title: `T ${secret}`,
          detail: `D ${secret}`,
          status: 404,
          type: `err:svc:data:${secret}`,
          errors: [{ location: secret, message: secret, fix: secret }],
        },
      }),
      "Not Found",
      [secret],
    );
    expect(parsed).toEqual({
      requestId: "unknown",
      title: "T [redacted]",
      detail: "D [redacted]",
      type: "err:svc:data:[redacted]",
      errors: [{ location: "[redacted]", message: "[redacted]", fix: "[redacted]" }],
    });
  });
});

describe("request ids", () => {
  it.each([
    ["with spaces", "req 1"],
    ["over 128 characters", "r".repeat(129)],
    ["holding a secret", "req_sk_secret_key_123"],
  ])("one %s reads as unknown, in a success and an error", (_name, requestId) => {
    expect(parseSuccessEnvelope("keys.getKey", ok({ meta: { requestId }, data: {} }), ["sk_secret_key_123"])).toMatchObject({
      ok: true,
      requestId: "unknown",
    });
    expect(parseErrorEnvelope(500, ok({ meta: { requestId } }), "", ["sk_secret_key_123"])).toMatchObject({ requestId: "unknown" });
  });
});
