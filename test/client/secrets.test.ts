// The root key (and a caller's key) never appear in any error the client throws, nor in anything
// its logger receives, whatever the failure, even when a server echoes them back.

import { inspect } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "keyguard/client";
import { parseClientOptions } from "../../src/client/options";
import { ROOT_KEY, fail, recordingLogger, sendJson, startServer, testClient, type Handler, type TestServer } from "./helpers/fault-server";
import { refusedUrl } from "../support/loopback-ports";

const CALLER_KEY = "sk_callerSECRETcallerSECRET";
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function expectNoSecrets(value: unknown): void {
  const texts = [inspect(value, { depth: 10, showHidden: true }), JSON.stringify(value)];
  if (value instanceof Error) texts.push(value.message, value.stack ?? "");
  for (const text of texts) {
    expect(text).not.toContain(ROOT_KEY);
    expect(text).not.toContain(CALLER_KEY);
  }
}

/** Echoes the Authorization header and the body's key into every field of an error envelope. */
const echo =
  (status: number): Handler =>
  (req, res) => {
    const leak = `${String(req.headers.authorization)} ${JSON.stringify(req.body)}`;
    sendJson(res, status, {
      meta: { requestId: "req_leak" },
      error: {
        title: leak,
        detail: leak,
        status,
        type: `https://x/errors-v2/svc/data/${"a"}?${leak}`,
        errors: [{ location: leak, message: leak, fix: leak }],
      },
    });
  };

async function failure(handler: Handler, options: Parameters<typeof testClient>[0] = {}): Promise<unknown> {
  server = await startServer(handler);
  const logger = recordingLogger();
  const err = await testClient({ baseUrl: server.url, logger, retry: { attempts: 2 }, ...options })
    .keys.verifyKey({ key: CALLER_KEY })
    .catch((e: unknown) => e);
  expectNoSecrets(logger.calls);
  return err;
}

describe("no secret in any error or log line", () => {
  it.each([400, 401, 403, 404, 409, 429, 500, 502, 503, 504])("HTTP %i whose body echoes the keys", async (status) => {
    const err = await failure(echo(status));
    expect(err).toMatchObject({ code: "KEY_SERVICE_HTTP_ERROR", status });
    expect((err as Error).message).toContain("[redacted]");
    expectNoSecrets(err);
  });

  it("an invalid 2xx envelope and an oversize one", async () => {
    const bad = await failure((req, res) => sendJson(res, 200, `not json ${String(req.headers.authorization)}`));
    expect(bad).toMatchObject({ code: "KEY_SERVICE_INVALID_RESPONSE" });
    expectNoSecrets(bad);
    await server?.close();
    const big = await failure((req, res) => sendJson(res, 200, String(req.headers.authorization).repeat(100)), { maxResponseBytes: 100 });
    expect(big).toMatchObject({ code: "KEY_SERVICE_INVALID_RESPONSE" });
    expectNoSecrets(big);
  });

  it("per-attempt and deadline timeouts", async () => {
    const attempt = await failure(() => undefined, { timeout: 100 });
    expect(attempt).toMatchObject({ code: "KEY_SERVICE_TIMEOUT", scope: "attempt" });
    expectNoSecrets(attempt);
    await server?.close();
    const deadline = await failure(() => undefined, { deadline: 100 });
    expect(deadline).toMatchObject({ code: "KEY_SERVICE_TIMEOUT", scope: "deadline" });
    expectNoSecrets(deadline);
  });

  it("a refused connection", async () => {
    const logger = recordingLogger();
    const client = createClient({ rootKey: ROOT_KEY, baseUrl: await refusedUrl(), logger, retry: { attempts: 2, initialDelay: 1 } });
    const err = await client.keys.verifyKey({ key: CALLER_KEY }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "KEY_SERVICE_NETWORK_ERROR", attempts: 2 });
    expectNoSecrets(err);
    expectNoSecrets(logger.calls);
  });

  it("a broken connection mid-body", async () => {
    const err = await failure((req, res) => {
      res.writeHead(200, { "Content-Length": "10000" });
      res.write(String(req.headers.authorization));
      setImmediate(() => res.destroy());
    });
    expect(err).toMatchObject({ code: "KEY_SERVICE_NETWORK_ERROR", retryable: false });
    expectNoSecrets(err);
  });

  it("a fetch whose own error quotes the Authorization header (a fault no real server can produce)", async () => {
    const logger = recordingLogger();
    const leakyFetch: typeof fetch = async (_url, init) => {
      const auth = new Headers(init?.headers).get("authorization");
      throw Object.assign(new TypeError(`invalid header value ${String(auth)}`), {
        cause: new Error(`${String(auth)} ${String(init?.body)}`),
      });
    };
    const client = createClient({
      rootKey: ROOT_KEY,
      baseUrl: "http://127.0.0.1:9",
      fetch: leakyFetch,
      logger,
      retry: { attempts: 2, initialDelay: 1 },
    });
    const err = await client.keys.verifyKey({ key: CALLER_KEY }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "KEY_SERVICE_NETWORK_ERROR", attempts: 2 });
    expectNoSecrets(err);
    expectNoSecrets(logger.calls);
  });

  it.each([
    ["the caller's key", CALLER_KEY],
    ["the root key", ROOT_KEY],
  ])("%s echoed as the last segment of the error type (URL and err: forms)", async (_name, secret) => {
    for (const type of [`https://unkey.com/docs/api-reference/errors-v2/svc/data/${secret}`, `err:svc:data:${secret}`]) {
      const err = await failure((_req, res) =>
        sendJson(res, 404, { meta: { requestId: "req_1" }, error: { title: "T", detail: "D", status: 404, type } }),
      );
      expect(err).toMatchObject({ code: "KEY_SERVICE_HTTP_ERROR", status: 404 });
      expect((err as { kind?: string }).kind).toBeUndefined();
      expect((err as { identifier?: string }).identifier).toBeUndefined();
      expectNoSecrets(err);
      await server?.close();
    }
  });

  it.each([
    ["the caller's key", CALLER_KEY],
    ["the root key", ROOT_KEY],
    ["a requestId wrapping the key", `req_${CALLER_KEY}`],
  ])("%s echoed as meta.requestId (errors, retries, invalid and valid answers)", async (_name, requestId) => {
    const unavailable = await failure((_req, res) =>
      sendJson(res, 503, { meta: { requestId }, error: { title: "T", detail: "D", status: 503, type: "about:blank" } }),
    );
    expect(unavailable).toMatchObject({ code: "KEY_SERVICE_HTTP_ERROR", status: 503, attempts: 2, requestId: "unknown" });
    expectNoSecrets(unavailable);
    await server?.close();

    const invalid = await failure((_req, res) => sendJson(res, 200, { meta: { requestId }, data: {} }));
    expect(invalid).toMatchObject({ code: "KEY_SERVICE_INVALID_RESPONSE", requestId: "unknown" });
    expectNoSecrets(invalid);
    await server?.close();

    server = await startServer((_req, res) => sendJson(res, 200, { meta: { requestId }, data: { valid: true, code: "VALID" } }));
    const res = await testClient({ baseUrl: server.url }).keys.verifyKey({ key: CALLER_KEY });
    expect(res).toEqual({ valid: true, code: "VALID" });
    expect(res.requestId).toBe("unknown");
  });

  it("a fetch error carrying the request's headers in a property (a fault no real server can produce)", async () => {
    const logger = recordingLogger();
    const leakyFetch: typeof fetch = async (url, init) => {
      const request = { url: String(url), headers: Object.fromEntries(new Headers(init?.headers)), body: init?.body };
      const inner = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED", errno: -111, syscall: "connect", request });
      throw Object.assign(new TypeError("fetch failed", { cause: inner }), { request });
    };
    const client = createClient({
      rootKey: ROOT_KEY,
      baseUrl: "http://127.0.0.1:9",
      fetch: leakyFetch,
      logger,
      retry: { attempts: 2, initialDelay: 1 },
    });
    const err = await client.keys.verifyKey({ key: CALLER_KEY }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "KEY_SERVICE_NETWORK_ERROR", attempts: 2 });
    expect((err as Error).message).toContain("ECONNREFUSED");
    expect((err as Error).cause).toMatchObject({
      name: "TypeError",
      message: "fetch failed",
      cause: { code: "ECONNREFUSED", errno: -111, syscall: "connect" },
    });
    expectNoSecrets(err);
    expectNoSecrets(logger.calls);
  });

  it("a base URL with credentials that does not parse, or has the wrong scheme, is not quoted", () => {
    for (const baseUrl of ["http://user:hunter2@exa mple.com", "ftp://user:hunter2@example.com", "http://user:hunter2@[::1"]) {
      let err: unknown;
      try {
        parseClientOptions({ rootKey: "r", baseUrl }, {});
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({ code: "KEY_SERVICE_CONFIG_ERROR", option: "baseUrl" });
      expect((err as Error).message).toContain("baseUrl");
      expect(inspect(err)).not.toContain("hunter2");
    }
  });

  it.each([
    [
      "https://proxy.example/?token=SECRET123",
      '"https://proxy.example/"',
      "Take the query and fragment out of it, e.g. https://api.unkey.com.",
    ],
    [
      "https://proxy.example/prefix#SECRET123",
      '"https://proxy.example/prefix"',
      "Take the query and fragment out of it, e.g. https://api.unkey.com.",
    ],
    [
      "https://proxy.example?token=SECRET123#x",
      '"https://proxy.example"',
      "Take the query and fragment out of it, e.g. https://api.unkey.com.",
    ],
    [
      "ftp://proxy.example/files?token=SECRET123",
      '"ftp://proxy.example/files"',
      "Use an http:// or https:// URL such as https://api.unkey.com.",
    ],
    ["not a url?token=SECRET123", '"not a url"', "It is not a valid URL; pass one such as https://api.unkey.com."],
  ])("a base URL's query or fragment is left out of the error: %s", (baseUrl, shown, fix) => {
    const expected = `createClient: invalid option baseUrl = ${shown} (its query and fragment are left out of this message). ${fix}`;
    expect(() => parseClientOptions({ rootKey: "r", baseUrl }, {})).toThrow(expected);
    // From the environment, the same.
    expect(() => parseClientOptions({ rootKey: "r" }, { UNKEY_BASE_URL: baseUrl })).toThrow(
      expected.replace("option baseUrl", "option UNKEY_BASE_URL"),
    );
    let err: unknown;
    try {
      createClient({ rootKey: "r", baseUrl });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: "KEY_SERVICE_CONFIG_ERROR", option: "baseUrl" });
    expect(inspect(err)).not.toContain("SECRET123");
  });

  it("misconfiguration errors", () => {
    let err: unknown;
    try {
      parseClientOptions({ rootKey: `${ROOT_KEY} x` }, {});
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: "KEY_SERVICE_CONFIG_ERROR", option: "rootKey" });
    expectNoSecrets(err);
  });

  it("the client object itself does not show the root key", () => {
    expectNoSecrets(createClient({ rootKey: ROOT_KEY }));
  });

  it("`fail` helper sanity: an unrelated envelope carries no key", async () => {
    const err = await failure((_req, res) => fail(res, 404, "err:svc:data:key_not_found"));
    expect(err).toMatchObject({ kind: "data.key_not_found" });
    expectNoSecrets(err);
  });
});
