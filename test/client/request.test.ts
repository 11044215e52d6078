// The request chokepoint against a real HTTP server on 127.0.0.1 that injects faults: headers and
// paths, retries and their waits, timeouts, refused connections, malformed and oversize bodies.

import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "keyguard/client";
import { KeyServiceHttpError, KeyServiceNetworkError, KeyServiceResponseError, KeyServiceTimeoutError } from "../../src/client/errors";
import { silentLogger } from "../../src/logger";
import {
  ROOT_KEY,
  fail,
  fakeRuntime,
  ok,
  recordingLogger,
  sendJson,
  startServer,
  testClient,
  type Handler,
  type TestServer,
} from "./helpers/fault-server";
import { refusedUrl } from "../support/loopback-ports";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});
async function serve(handler: Handler): Promise<TestServer> {
  server = await startServer(handler);
  return server;
}
const VERIFIED = { valid: true, code: "VALID", keyId: "key_1" };

describe("the request", () => {
  it("POSTs JSON to {base}/v2/<op> with the root key and resolves to data with a hidden requestId", async () => {
    const s = await serve((_req, res) => ok(res, VERIFIED));
    const client = testClient({ baseUrl: s.url });
    const res = await client.keys.verifyKey({ key: "sk_caller" });

    expect(res).toEqual(VERIFIED);
    expect(res.requestId).toBe("req_test");
    expect(Object.keys(res)).not.toContain("requestId");
    expect(JSON.parse(JSON.stringify(res))).toEqual(VERIFIED);
    expect(s.requests).toHaveLength(1);
    expect(s.requests[0]).toMatchObject({
      method: "POST",
      url: "/v2/keys.verifyKey",
      body: { key: "sk_caller" },
      headers: {
        authorization: `Bearer ${ROOT_KEY}`,
        "content-type": "application/json",
        accept: "application/json",
        "user-agent": "keyguard",
      },
    });
  });

  it("keeps a base URL's path prefix (with or without a trailing slash)", async () => {
    const s = await serve((_req, res) => ok(res, VERIFIED));
    await testClient({ baseUrl: `${s.url}/prefix/unkey` }).keys.verifyKey({ key: "k" });
    await testClient({ baseUrl: `${s.url}/prefix/` }).keys.verifyKey({ key: "k" });
    expect(s.requests.map((r) => r.url)).toEqual(["/prefix/unkey/v2/keys.verifyKey", "/prefix/v2/keys.verifyKey"]);
  });
});

describe("retries", () => {
  it("503, 503, 200 succeeds on the 3rd attempt after waits of 1 s and 2 s", async () => {
    const s = await serve((_req, res, n) => (n < 3 ? fail(res, 503, "err:svc:application:service_unavailable") : ok(res, VERIFIED)));
    const runtime = fakeRuntime();
    const logger = recordingLogger();
    const res = await testClient({ baseUrl: s.url, logger }, runtime).keys.verifyKey({ key: "k" });

    expect(res).toEqual(VERIFIED);
    expect(s.requests).toHaveLength(3);
    expect(runtime.sleeps).toEqual([1000, 2000]);
    expect(logger.calls.filter((c) => c.level === "debug")).toMatchObject([
      { fields: { operation: "keys.verifyKey", attempt: 1, status: 503, delay: 1000 } },
      { fields: { operation: "keys.verifyKey", attempt: 2, status: 503, delay: 2000 } },
    ]);
  });

  it("jitters each wait by up to ±jitter", async () => {
    const handler: Handler = (_req, res, n) =>
      n % 3 !== 0 ? fail(res, 502, "err:svc:application:service_unavailable") : ok(res, VERIFIED);
    const s = await serve(handler);
    const low = fakeRuntime(0);
    const high = fakeRuntime(0.999_999);
    await testClient({ baseUrl: s.url }, low).keys.verifyKey({ key: "k" });
    await testClient({ baseUrl: s.url }, high).keys.verifyKey({ key: "k" });
    expect(low.sleeps).toEqual([800, 1600]);
    expect(high.sleeps).toEqual([1200, 2400]);
  });

  it("gives up after `attempts`, with no wait after the last one, and warns once", async () => {
    const s = await serve((_req, res) => fail(res, 504, "err:svc:application:service_unavailable"));
    const runtime = fakeRuntime();
    const logger = recordingLogger();
    const err = await testClient({ baseUrl: s.url, logger, retry: { attempts: 3 } }, runtime)
      .keys.verifyKey({ key: "k" })
      .catch((e: unknown) => e);

    expect(err).toBeInstanceOf(KeyServiceHttpError);
    expect(err).toMatchObject({ status: 504, attempts: 3, retryable: true, code: "KEY_SERVICE_HTTP_ERROR" });
    expect(s.requests).toHaveLength(3);
    expect(runtime.sleeps).toEqual([1000, 2000]);
    expect(logger.calls.filter((c) => c.level === "warn")).toHaveLength(1);
  });

  it.each([
    [400, "err:svc:application:invalid_input", "application.invalid_input"],
    [401, "err:svc:authentication:key_not_found", "authentication.key_not_found"],
    [404, "err:svc:data:permission_not_found", "data.permission_not_found"],
    [429, "err:user:too_many_requests:workspace_rate_limited", "too_many_requests.workspace_rate_limited"],
    [500, "err:svc:application:unexpected_error", "application.unexpected_error"],
  ])("does not retry HTTP %i", async (status, identifier, kind) => {
    const s = await serve((_req, res) =>
      fail(
        res,
        status,
        identifier,
        { title: "T", detail: "D", errors: [{ location: "body.key", message: "bad", fix: "fix it" }] },
        { "Retry-After": "2" },
      ),
    );
    const runtime = fakeRuntime();
    const err = await testClient({ baseUrl: s.url }, runtime)
      .keys.verifyKey({ key: "k" })
      .catch((e: unknown) => e);

    expect(s.requests).toHaveLength(1);
    expect(runtime.sleeps).toEqual([]);
    expect(err).toMatchObject({
      status,
      title: "T",
      detail: "D",
      identifier,
      kind,
      requestId: "req_err",
      retryable: false,
      attempts: 1,
      retryAfter: 2000,
      errors: [{ location: "body.key", message: "bad", fix: "fix it" }],
    });
  });

  it("honours Retry-After (seconds and HTTP-date), capped at maxDelay", async () => {
    const inFiveSeconds = new Date(Date.now() + 5500).toUTCString();
    const after = ["3", "120", inFiveSeconds];
    const s = await serve((_req, res, n) =>
      n <= after.length
        ? fail(res, 503, "err:svc:application:service_unavailable", {}, { "Retry-After": after[n - 1]! })
        : ok(res, VERIFIED),
    );
    const runtime = fakeRuntime();
    await testClient({ baseUrl: s.url, deadline: 600_000, retry: { maxDelay: 16_000 } }, runtime).keys.verifyKey({ key: "k" });

    expect(s.requests).toHaveLength(4);
    expect(runtime.sleeps[0]).toBe(3000);
    expect(runtime.sleeps[1]).toBe(16_000);
    // The HTTP-date has one-second resolution and is read a little later than it was written.
    expect(runtime.sleeps[2]).toBeGreaterThanOrEqual(3000);
    expect(runtime.sleeps[2]).toBeLessThanOrEqual(5500);
  });

  it("stops early, without sleeping, when the next wait would overrun the deadline", async () => {
    const s = await serve((_req, res) => fail(res, 503, "err:svc:application:service_unavailable"));
    const runtime = fakeRuntime();
    const err = await testClient({ baseUrl: s.url, deadline: 2500 }, runtime)
      .keys.verifyKey({ key: "k" })
      .catch((e: unknown) => e);

    expect(err).toMatchObject({ code: "KEY_SERVICE_HTTP_ERROR", status: 503, attempts: 2 });
    expect(s.requests).toHaveLength(2);
    expect(runtime.sleeps).toEqual([1000]);
  });

  it("`retry: false` (client or call) makes one attempt", async () => {
    const s = await serve((_req, res) => fail(res, 503, "err:svc:application:service_unavailable"));
    const runtime = fakeRuntime();
    await expect(testClient({ baseUrl: s.url, retry: false }, runtime).keys.verifyKey({ key: "k" })).rejects.toMatchObject({ attempts: 1 });
    await expect(testClient({ baseUrl: s.url }, runtime).keys.verifyKey({ key: "k" }, { retry: false })).rejects.toMatchObject({
      attempts: 1,
    });
    expect(s.requests).toHaveLength(2);
    expect(runtime.sleeps).toEqual([]);
  });

  it("a per-call retry policy is merged over the client's", async () => {
    const s = await serve((_req, res) => fail(res, 503, "err:svc:application:service_unavailable"));
    const runtime = fakeRuntime();
    const client = testClient({ baseUrl: s.url, retry: { initialDelay: 100, factor: 3 } }, runtime);
    await expect(client.keys.verifyKey({ key: "k" }, { retry: { attempts: 3 } })).rejects.toMatchObject({ attempts: 3 });
    expect(runtime.sleeps).toEqual([100, 300]);
  });
});

describe("time limits", () => {
  it("cuts off a server that never answers at the per-attempt timeout, without retrying", async () => {
    const s = await serve(() => undefined);
    const err = await testClient({ baseUrl: s.url, timeout: 200 })
      .keys.verifyKey({ key: "k" })
      .catch((e: unknown) => e);

    expect(err).toBeInstanceOf(KeyServiceTimeoutError);
    expect(err).toMatchObject({ code: "KEY_SERVICE_TIMEOUT", scope: "attempt", timeout: 200, attempts: 1, retryable: false });
    expect(s.requests).toHaveLength(1);
  });

  it("the deadline caps the attempt's timeout (scope deadline)", async () => {
    const s = await serve(() => undefined);
    const err = await testClient({ baseUrl: s.url, timeout: 5000, deadline: 150 })
      .keys.verifyKey({ key: "k" })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "KEY_SERVICE_TIMEOUT", scope: "deadline", timeout: 150, attempts: 1 });
  });

  it("cuts off a server that sends headers and then stalls the body, without retrying", async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": "1000" });
      res.write('{"meta":{"requestId":"req_1"},');
    });
    const err = await testClient({ baseUrl: s.url, timeout: 100 })
      .keys.verifyKey({ key: "k" })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeyServiceTimeoutError);
    expect(err).toMatchObject({ code: "KEY_SERVICE_TIMEOUT", scope: "attempt", timeout: 100, attempts: 1 });
    expect(s.requests).toHaveLength(1);
  });

  it("stops at once, without sleeping, when Retry-After is longer than the time left before the deadline", async () => {
    const s = await serve((_req, res) => fail(res, 503, "err:svc:application:service_unavailable", {}, { "Retry-After": "10" }));
    const runtime = fakeRuntime();
    const logger = recordingLogger();
    const err = await testClient({ baseUrl: s.url, logger, deadline: 5000 }, runtime)
      .keys.verifyKey({ key: "k" })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "KEY_SERVICE_HTTP_ERROR", status: 503, attempts: 1, retryAfter: 10_000 });
    expect(s.requests).toHaveLength(1);
    expect(runtime.sleeps).toEqual([]);
    expect(logger.calls).toMatchObject([{ level: "warn", fields: { attempt: 1, delay: 10_000 } }]);
  });

  it("a caller's abort ends the call with the signal's reason (in flight, during a wait, before sending)", async () => {
    const reason = new Error("caller gave up");
    const hanging = await serve(() => undefined);
    const inFlight = new AbortController();
    const pending = createClient({ rootKey: ROOT_KEY, baseUrl: hanging.url, logger: silentLogger }).keys.verifyKey(
      { key: "k" },
      { signal: inFlight.signal },
    );
    await expect.poll(() => hanging.requests.length).toBe(1);
    inFlight.abort(reason);
    await expect(pending).rejects.toBe(reason);
    await hanging.close();

    const s = await serve((_req, res) => fail(res, 503, "err:svc:application:service_unavailable"));
    const waiting = new AbortController();
    const client = createClient({
      rootKey: ROOT_KEY,
      baseUrl: s.url,
      logger: silentLogger,
      retry: { initialDelay: 60_000, maxDelay: 60_000 },
      deadline: 120_000,
    });
    const during = client.keys.verifyKey({ key: "k" }, { signal: waiting.signal });
    await expect.poll(() => s.requests.length).toBe(1);
    waiting.abort(reason);
    await expect(during).rejects.toBe(reason);

    await expect(client.keys.verifyKey({ key: "k" }, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(s.requests).toHaveLength(1);
  });
});

describe("connection failures", () => {
  it("a refused connection is retried, then KeyServiceNetworkError", async () => {
    const url = await refusedUrl();
    const logger = recordingLogger();
    const client = createClient({ rootKey: ROOT_KEY, baseUrl: url, logger, retry: { attempts: 3, initialDelay: 1, maxDelay: 5 } });
    const err = await client.keys.verifyKey({ key: "k" }).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(KeyServiceNetworkError);
    expect(err).toMatchObject({ code: "KEY_SERVICE_NETWORK_ERROR", retryable: true, attempts: 3 });
    expect((err as Error).message).toContain("ECONNREFUSED");
    expect((err as Error).cause).toBeDefined();
    expect(logger.calls.filter((c) => c.level === "debug")).toHaveLength(2);
  });

  it("a connection reset in the middle of a 503 body is still that 503, and retried", async () => {
    const s = await serve((_req, res, n) => {
      if (n > 1) return ok(res, VERIFIED);
      res.writeHead(503, { "Content-Type": "application/json", "Content-Length": "1000" });
      res.write('{"meta":{"requestId":"req_1"},"error":{"ti');
      setImmediate(() => res.destroy());
    });
    const runtime = fakeRuntime();
    await expect(testClient({ baseUrl: s.url }, runtime).keys.verifyKey({ key: "k" })).resolves.toEqual(VERIFIED);
    expect(s.requests).toHaveLength(2);
    expect(runtime.sleeps).toEqual([1000]);
  });

  it("a connection reset while reading a 200 is not retried (the service may have acted)", async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": "1000" });
      res.write('{"meta":{"requestId":"req_1"},"da');
      setImmediate(() => res.destroy());
    });
    const err = await testClient({ baseUrl: s.url })
      .keys.verifyKey({ key: "k" })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "KEY_SERVICE_NETWORK_ERROR", retryable: false, attempts: 1 });
    expect(s.requests).toHaveLength(1);
  });
});

describe("malformed answers", () => {
  it.each([
    ["not JSON", "<html>oops</html>", "not JSON"],
    ["a JSON array", "[]", "not a JSON object"],
    ["no meta", JSON.stringify({ data: VERIFIED }), "meta.requestId"],
    ["a 2xx without data", JSON.stringify({ meta: { requestId: "req_1" } }), "data is missing"],
    ["null data", JSON.stringify({ meta: { requestId: "req_1" }, data: null }), "not an object"],
    ["data of the wrong shape", JSON.stringify({ meta: { requestId: "req_1" }, data: {} }), "shape"],
    ["truncated JSON", '{"meta":{"requestId":"req_1"},"data":{"val', "not JSON"],
  ])("a 200 with %s → KeyServiceResponseError, not retried", async (_name, body, reason) => {
    const s = await serve((_req, res) => sendJson(res, 200, body));
    const err = await testClient({ baseUrl: s.url })
      .keys.verifyKey({ key: "k" })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeyServiceResponseError);
    expect(err).toMatchObject({ code: "KEY_SERVICE_INVALID_RESPONSE", status: 200, attempts: 1, retryable: false });
    expect((err as Error).message).toContain(reason);
    expect(s.requests).toHaveLength(1);
  });

  it("a 503 HTML page is a retryable KeyServiceHttpError with a synthesized title", async () => {
    const s = await serve((_req, res, n) => {
      if (n === 1) {
        res.writeHead(503, { "Content-Type": "text/html" });
        res.end("<html><body>Bad gateway</body></html>");
      } else ok(res, VERIFIED);
    });
    const runtime = fakeRuntime();
    await expect(testClient({ baseUrl: s.url }, runtime).keys.verifyKey({ key: "k" })).resolves.toEqual(VERIFIED);
    expect(runtime.sleeps).toEqual([1000]);
  });

  it("a 404 with truncated JSON is a KeyServiceHttpError without kind, not retried", async () => {
    const s = await serve((_req, res) => sendJson(res, 404, '{"meta":{"requestId":"req_9"},"error":{"tit'));
    const err = await testClient({ baseUrl: s.url, retry: false })
      .keys.verifyKey({ key: "k" })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeyServiceHttpError);
    expect(err).toMatchObject({ status: 404, title: "Not Found", type: "about:blank", retryable: false });
    expect((err as KeyServiceHttpError).kind).toBeUndefined();
  });

  it("does not follow redirects", async () => {
    const s = await serve((_req, res) => {
      res.writeHead(302, { Location: "http://127.0.0.1:1/elsewhere" });
      res.end();
    });
    await expect(testClient({ baseUrl: s.url }).keys.verifyKey({ key: "k" })).rejects.toMatchObject({
      code: "KEY_SERVICE_HTTP_ERROR",
      status: 302,
    });
    expect(s.requests).toHaveLength(1);
  });
});

describe("the response size cap", () => {
  it("an oversize 2xx body (streamed, no Content-Length) → KeyServiceResponseError", async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      const chunk = "x".repeat(64 * 1024);
      for (let i = 0; i < 40; i++) res.write(chunk); // 2.5 MiB
      res.end();
    });
    const err = await testClient({ baseUrl: s.url })
      .keys.verifyKey({ key: "k" })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeyServiceResponseError);
    expect((err as Error).message).toContain("larger than 1048576 bytes");
  });

  it("a declared Content-Length over maxResponseBytes is refused; an oversize 503 is still a retryable HTTP error", async () => {
    const s = await serve((_req, res, n) =>
      sendJson(res, n === 1 ? 503 : 200, { meta: { requestId: "req_1" }, data: { ...VERIFIED, pad: "y".repeat(500) } }),
    );
    const runtime = fakeRuntime();
    const client = testClient({ baseUrl: s.url, maxResponseBytes: 256 }, runtime);
    await expect(client.keys.verifyKey({ key: "k" })).rejects.toMatchObject({
      code: "KEY_SERVICE_INVALID_RESPONSE",
      status: 200,
      attempts: 2,
    });
    expect(runtime.sleeps).toEqual([1000]);
  });
});
