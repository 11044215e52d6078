// The client against the production service's error answers (recorded in fixtures/): every kind
// it maps reads right from production's `type` URL shape as from the specification's, an unknown
// shape degrades to no kind, and permissions.ensure() survives production's 409.

import type { ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { isKeyServiceError, type KeyServiceHttpError } from "keyguard/client";
import { ERROR_CATALOG, parseErrorType } from "../../src/protocol/errors";
import { PRODUCTION_ERRORS, productionError, type ProductionError } from "./fixtures/production-errors";
import { ok, sendJson, startServer, testClient, type TestServer } from "./helpers/fault-server";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function answer(res: ServerResponse, e: ProductionError): void {
  res.writeHead(e.status, { "Content-Type": "application/json", ...e.headers });
  res.end(e.body);
}

async function callError(promise: Promise<unknown>): Promise<KeyServiceHttpError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isKeyServiceError(error) || error.code !== "KEY_SERVICE_HTTP_ERROR") throw new Error(`expected an HTTP error, got ${String(error)}`);
  return error;
}

describe("parseErrorType", () => {
  it.each([
    ["production's URL", "https://unkey.com/docs/errors/unkey/data/key_not_found", "err:unkey:data:key_not_found", "data.key_not_found"],
    [
      "production's URL, user system",
      "https://unkey.com/docs/errors/user/bad_request/permissions_query_syntax_error",
      "err:user:bad_request:permissions_query_syntax_error",
      "bad_request.permissions_query_syntax_error",
    ],
    [
      "the specification's URL",
      "https://unkey.com/docs/api-reference/errors-v2/unkey/data/key_not_found",
      "err:unkey:data:key_not_found",
      "data.key_not_found",
    ],
    [
      "the local service's URL",
      "https://unkey.com/docs/api-reference/errors-v2/svc/data/api_not_found",
      "err:svc:data:api_not_found",
      "data.api_not_found",
    ],
    [
      "a URN",
      "err:unkey:authorization:insufficient_permissions",
      "err:unkey:authorization:insufficient_permissions",
      "authorization.insufficient_permissions",
    ],
    [
      "a URL with a query and fragment",
      "https://unkey.com/docs/errors/unkey/data/role_not_found?x=1#top",
      "err:unkey:data:role_not_found",
      "data.role_not_found",
    ],
    [
      "a URL with a trailing slash",
      "https://unkey.com/docs/errors/unkey/data/role_not_found/",
      "err:unkey:data:role_not_found",
      "data.role_not_found",
    ],
    [
      "another host (a self-hosted service's docs)",
      "https://docs.example.com/errors/unkey/data/api_not_found",
      "err:unkey:data:api_not_found",
      "data.api_not_found",
    ],
  ])("reads %s", (_name, type, identifier, kind) => {
    expect(parseErrorType(type)).toEqual({ identifier, kind });
  });

  it.each([
    ["about:blank", "about:blank"],
    ["an unrelated URL", "https://example.com/problems/out-of-credit"],
    ["too few segments after /errors/", "https://unkey.com/docs/errors/unkey/data"],
    ["too many segments after /errors/", "https://unkey.com/docs/errors/unkey/data/key/not_found"],
    ["segments after the name", "https://unkey.com/docs/errors/unkey/data/key_not_found/extra/more"],
    ["the marker not right before the three segments", "https://unkey.com/errors/docs/unkey/data/key_not_found"],
    ["a segment with other characters", "https://unkey.com/docs/errors/unkey/data/key-not-found"],
    ["an empty segment", "https://unkey.com/docs/errors/unkey//key_not_found"],
    ["a URN with four parts", "err:unkey:data:key:not_found"],
    ["a URN with an empty part", "err:unkey::key_not_found"],
    ["an empty string", ""],
    ["a very long string", `https://unkey.com/docs/errors/unkey/data/${"a".repeat(3000)}`],
    ["a number", 404],
    ["null", null],
  ])("gives undefined for %s", (_name, type) => {
    expect(parseErrorType(type)).toBeUndefined();
  });
});

describe("production's error answers", () => {
  it("cover every kind of the catalog the production service answers with", () => {
    // The local service's own answers: routing.* for an unknown path or method, and the 429 of
    // rootKeyFailureLimit (production has no such limit).
    const catalog = Object.keys(ERROR_CATALOG).filter(
      (k) => !k.startsWith("routing.") && k !== "too_many_requests.authentication_failures",
    );
    const recorded = new Set(PRODUCTION_ERRORS.map((e) => e.kind));
    expect(catalog.filter((k) => !recorded.has(k))).toEqual([]);
  });

  it.each(PRODUCTION_ERRORS.map((e) => [e.kind, e] as const))(
    "%s: the client reads status, texts, type, identifier and kind",
    async (_kind, e) => {
      server = await startServer((_req, res) => answer(res, e));
      const error = await callError(testClient({ baseUrl: server.url, retry: false }).request("keys.getKey", { keyId: "key_123" }));
      const requestId = (JSON.parse(e.body) as { meta: { requestId: string } }).meta.requestId;
      expect(error).toMatchObject({
        status: e.status,
        title: e.title,
        detail: e.detail,
        type: `https://unkey.com/docs/errors/${e.identifier.split(":").slice(1).join("/")}`,
        identifier: e.identifier,
        kind: e.kind,
        requestId,
        retryable: false,
        attempts: 1,
      });
      expect(error.message).toBe(`keys.getKey: HTTP ${e.status} ${e.title}: ${e.detail}`);
    },
  );

  it("keeps production's validation details of a 400", async () => {
    server = await startServer((_req, res) => answer(res, productionError("application.invalid_input")));
    const error = await callError(testClient({ baseUrl: server.url }).apis.createApi({ name: "ab" }));
    expect(error.errors).toEqual([{ location: "/properties/name/minLength", message: "minLength: got 2, want 3" }]);
    expect(productionError("bad_request.permissions_query_syntax_error").body).toContain('"errors":[]');
  });

  it("reads production's 429 Retry-After and does not retry it", async () => {
    const e = productionError("too_many_requests.workspace_rate_limited");
    server = await startServer((_req, res) => answer(res, e));
    const error = await callError(testClient({ baseUrl: server.url }).keys.verifyKey({ key: "sk_abc" }));
    expect(error).toMatchObject({ status: 429, kind: "too_many_requests.workspace_rate_limited", retryAfter: 1000, attempts: 1 });
    expect(server.requests).toHaveLength(1);
  });

  it("does not retry production's service_unavailable, which it sends as a 500", async () => {
    server = await startServer((_req, res) => answer(res, productionError("application.service_unavailable")));
    const error = await callError(testClient({ baseUrl: server.url }).request("keys.getKey", { keyId: "key_123" }));
    expect(error).toMatchObject({ status: 500, kind: "application.service_unavailable", retryable: false });
    expect(server.requests).toHaveLength(1);
  });

  it("degrades an unknown type shape to no kind, keeping everything else", async () => {
    server = await startServer((_req, res) =>
      sendJson(res, 404, {
        error: { detail: "gone", status: 404, title: "Not Found", type: "https://unkey.com/docs/errors/not_found" },
        meta: { requestId: "req_1" },
      }),
    );
    const error = await callError(testClient({ baseUrl: server.url }).request("keys.getKey", { keyId: "key_123" }));
    expect(error).toMatchObject({
      status: 404,
      title: "Not Found",
      detail: "gone",
      type: "https://unkey.com/docs/errors/not_found",
      requestId: "req_1",
    });
    expect(error.kind).toBeUndefined();
    expect(error.identifier).toBeUndefined();
  });
});

describe("permissions.ensure() against production's 409", () => {
  const conflict = productionError("data.permission_already_exists");

  it("finds the permission a concurrent caller created", async () => {
    let lists = 0;
    server = await startServer((req, res) => {
      if (req.url.endsWith("/permissions.listPermissions")) {
        lists++;
        return ok(res, lists === 1 ? [] : [{ id: "perm_other", name: "docs.read" }]);
      }
      if (req.url.endsWith("/permissions.createPermission")) return answer(res, conflict);
      return sendJson(res, 500, "unexpected");
    });
    await expect(testClient({ baseUrl: server.url }).permissions.ensure({ name: "docs.read" })).resolves.toBe("perm_other");
    expect(server.requests.map((r) => r.url)).toEqual([
      "/v2/permissions.listPermissions",
      "/v2/permissions.createPermission",
      "/v2/permissions.listPermissions",
    ]);
  });

  it("finds it by slug when the listing does not show it yet", async () => {
    server = await startServer((req, res) => {
      if (req.url.endsWith("/permissions.listPermissions")) return ok(res, []);
      if (req.url.endsWith("/permissions.createPermission")) return answer(res, conflict);
      if (req.url.endsWith("/permissions.getPermission")) return ok(res, { id: "perm_slug", name: "docs.read", slug: "docs.read" });
      return sendJson(res, 500, "unexpected");
    });
    await expect(testClient({ baseUrl: server.url }).permissions.ensure({ name: "docs.read" })).resolves.toBe("perm_slug");
  });

  it("rejects with production's 409 fields when the slug belongs to a permission of another name", async () => {
    server = await startServer((req, res) => {
      if (req.url.endsWith("/permissions.listPermissions")) return ok(res, []);
      if (req.url.endsWith("/permissions.createPermission")) return answer(res, conflict);
      if (req.url.endsWith("/permissions.getPermission")) return ok(res, { id: "perm_x", name: "Docs reader", slug: "docs.read" });
      return sendJson(res, 500, "unexpected");
    });
    const error = await callError(testClient({ baseUrl: server.url }).permissions.ensure({ name: "docs.read" }));
    expect(error).toMatchObject({
      status: 409,
      kind: "data.permission_already_exists",
      identifier: "err:unkey:data:permission_already_exists",
      type: "https://unkey.com/docs/errors/unkey/data/permission_already_exists",
      requestId: (JSON.parse(conflict.body) as { meta: { requestId: string } }).meta.requestId,
    });
    expect(error.message).toContain("perm_x");
  });

  it("passes any other production error through", async () => {
    server = await startServer((req, res) => {
      if (req.url.endsWith("/permissions.listPermissions")) return ok(res, []);
      return answer(res, productionError("authorization.insufficient_permissions"));
    });
    await expect(testClient({ baseUrl: server.url }).permissions.ensure({ name: "docs.read" })).rejects.toMatchObject({
      status: 403,
      kind: "authorization.insufficient_permissions",
    });
  });
});
