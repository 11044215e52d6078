// The two transports: undici's keep-alive pool (the default) and a caller's `fetch`. The same
// guarantees through both, connections reused and released, and idle ones not holding the process.

import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { KeyServiceConfigError, KeyServiceNetworkError, type ClientOptions } from "keyguard/client";
import { refusedUrl } from "../support/loopback-ports";
import { silentLogger } from "../../src/logger";
import { ROOT_KEY, fail, fakeRuntime, ok, sendJson, startServer, testClient, type TestServer } from "./helpers/fault-server";

const VERIFIED = { valid: true, code: "VALID", keyId: "key_1" };
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Counts the calls a fetch wrapper makes, so a test can tell which transport answered. */
function countingFetch(): { fetch: typeof fetch; calls: () => number } {
  let calls = 0;
  return {
    fetch: (input, init) => {
      calls++;
      return fetch(input, init);
    },
    calls: () => calls,
  };
}

const TRANSPORTS: Array<[string, () => Pick<ClientOptions, "fetch">]> = [
  ["undici's pool", () => ({})],
  ["a caller's fetch", () => ({ fetch: countingFetch().fetch })],
];

describe.each(TRANSPORTS)("through %s", (_name, transport) => {
  it("sends the same request and reads the answer", async () => {
    server = await startServer((_req, res) => ok(res, VERIFIED));
    const result = await testClient({ baseUrl: `${server.url}/prefix/`, userAgent: "app/1", ...transport() }).keys.verifyKey({
      key: "sk_1",
    });
    expect(result).toEqual(VERIFIED);
    expect(result.requestId).toBe("req_test");
    const [req] = server.requests;
    expect(req).toMatchObject({ method: "POST", url: "/prefix/v2/keys.verifyKey", body: { key: "sk_1" } });
    expect(req!.headers).toMatchObject({
      authorization: `Bearer ${ROOT_KEY}`,
      "content-type": "application/json",
      accept: "application/json",
      "user-agent": "app/1",
      "content-length": String(JSON.stringify({ key: "sk_1" }).length),
    });
  });

  it("retries a 503 after its Retry-After, then succeeds", async () => {
    server = await startServer((_req, res, n) =>
      n === 1 ? fail(res, 503, "err:svc:application:service_unavailable", {}, { "Retry-After": "2" }) : ok(res, VERIFIED),
    );
    const runtime = fakeRuntime();
    await expect(testClient({ baseUrl: server.url, ...transport() }, runtime).keys.verifyKey({ key: "k" })).resolves.toEqual(VERIFIED);
    expect(runtime.sleeps).toEqual([2000]);
  });

  it("caps the body, and the next call on the same client still works", async () => {
    server = await startServer((_req, res, n) => {
      if (n > 1) return ok(res, VERIFIED);
      res.writeHead(200, { "Content-Type": "application/json" });
      res.write("x".repeat(600));
      res.end("x".repeat(600));
    });
    const client = testClient({ baseUrl: server.url, maxResponseBytes: 1000, ...transport() });
    await expect(client.keys.verifyKey({ key: "k" })).rejects.toMatchObject({ code: "KEY_SERVICE_INVALID_RESPONSE", status: 200 });
    await expect(client.keys.verifyKey({ key: "k" })).resolves.toEqual(VERIFIED);
  });

  it("a 3xx is an HTTP error, not followed", async () => {
    server = await startServer((_req, res) => sendJson(res, 307, "", { Location: "http://127.0.0.1:9/elsewhere" }));
    await expect(testClient({ baseUrl: server.url, ...transport() }).keys.verifyKey({ key: "k" })).rejects.toMatchObject({
      code: "KEY_SERVICE_HTTP_ERROR",
      status: 307,
    });
    expect(server.requests).toHaveLength(1);
  });

  it("a refused connection: the KeyServiceNetworkError names the URL and the cause, never the root key", async () => {
    const baseUrl = await refusedUrl("/prefix");
    const err = (await testClient({ baseUrl, retry: false, ...transport() })
      .keys.verifyKey({ key: "sk_caller_key" })
      .catch((e: unknown) => e)) as KeyServiceNetworkError;
    expect(err).toBeInstanceOf(KeyServiceNetworkError);
    expect(err).toMatchObject({ url: `${baseUrl}/v2/keys.verifyKey`, reason: "ECONNREFUSED" });
    expect(err.message).toBe(`keys.verifyKey: could not reach the key service at ${baseUrl}/v2/keys.verifyKey (ECONNREFUSED)`);
    expect(JSON.stringify({ ...err, message: err.message })).not.toContain(ROOT_KEY);
  });

  it("a timed-out attempt leaves the client usable", async () => {
    // The key decides, not the arrival order: on a busy machine the first request can time out
    // before the server has read it, and then the second one would arrive first.
    server = await startServer((req, res) => ((req.body as { key?: string }).key === "hang" ? undefined : ok(res, VERIFIED)));
    const client = testClient({ baseUrl: server.url, timeout: 100, ...transport() });
    await expect(client.keys.verifyKey({ key: "hang" })).rejects.toMatchObject({ code: "KEY_SERVICE_TIMEOUT", scope: "attempt" });
    // A generous limit for the call that must succeed: on a busy machine 100 ms can pass before any answer.
    await expect(client.keys.verifyKey({ key: "k" }, { timeout: 10_000 })).resolves.toEqual(VERIFIED);
  });
});

describe("the default transport", () => {
  it("is undici, not fetch: a fetch given is the one used, and none is used otherwise", async () => {
    server = await startServer((_req, res) => ok(res, VERIFIED));
    const spy = vi.spyOn(globalThis, "fetch");
    try {
      await testClient({ baseUrl: server.url }).keys.verifyKey({ key: "k" });
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
    const counting = countingFetch();
    await testClient({ baseUrl: server.url, fetch: counting.fetch }).keys.verifyKey({ key: "k" });
    expect(counting.calls()).toBe(1);
  });

  it("keeps connections alive: twenty sequential calls open at most two connections", async () => {
    let connections = 0;
    const http: Server = createServer((req, res) => {
      req.resume();
      req.on("end", () => ok(res, VERIFIED));
    });
    http.on("connection", () => connections++);
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    try {
      const client = testClient({ baseUrl: `http://127.0.0.1:${(http.address() as AddressInfo).port}` });
      // undici's pool may open a second connection when the next call starts in the same turn as
      // the last answer ends; after that, the two are reused.
      for (let i = 0; i < 20; i++) await client.keys.verifyKey({ key: "k" });
      expect(connections).toBeLessThanOrEqual(2);
      const before = connections;
      await Promise.all([1, 2, 3].map(() => client.keys.verifyKey({ key: "k" })));
      expect(connections - before).toBeLessThanOrEqual(3);
    } finally {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    }
  });

  it("idle connections, and a client never used, do not keep the process alive", async () => {
    // The server keeps idle connections open far longer than the test may take.
    const http = createServer({ keepAliveTimeout: 120_000 }, (req, res) => {
      req.resume();
      req.on("end", () => ok(res, VERIFIED));
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    const script = `
      import { createClient } from "./src/client.ts";
      const client = createClient({ rootKey: "root_k", baseUrl: ${JSON.stringify(url)} });
      createClient({ rootKey: "root_k", baseUrl: "http://127.0.0.1:9" }); // never used
      const r = await client.keys.verifyKey({ key: "k" });
      console.log("verified", r.valid);
    `;
    // The child exits by itself once the call is done, while its keep-alive connection is open.
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (out += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
    expect(out).toContain("verified true");
    expect(code).toBe(0);
  }, 30_000);
});

describe("close()", () => {
  it.each(TRANSPORTS)("through %s: idempotent, and a call after it rejects saying the client was closed", async (_name, transport) => {
    server = await startServer((_req, res) => ok(res, VERIFIED));
    const client = testClient({ baseUrl: server.url, ...transport() });
    await expect(client.keys.verifyKey({ key: "k" })).resolves.toEqual(VERIFIED);
    const first = client.close();
    expect(client.close()).toBe(first);
    await first;
    const error = await client.keys.verifyKey({ key: "k" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KeyServiceConfigError);
    expect(error).toMatchObject({ code: "KEY_SERVICE_CONFIG_ERROR", option: "close" });
    expect((error as Error).message).toBe("keys.verifyKey: this client was closed (client.close()); create another with createClient().");
    await expect(client.apis.getApi({ apiId: "api_1" })).rejects.toThrow(/^apis\.getApi: this client was closed/);
    expect(server.requests).toHaveLength(1);
  });

  it("closes undici's keep-alive connections: the service sees them end", async () => {
    // The server would keep an idle connection far longer than the test may take.
    const ended: Promise<void>[] = [];
    const http = createServer({ keepAliveTimeout: 120_000 }, (req, res) => {
      req.resume();
      req.on("end", () => ok(res, VERIFIED));
    });
    http.on("connection", (socket) => ended.push(new Promise((resolve) => socket.once("close", () => resolve()))));
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    try {
      const client = testClient({ baseUrl: `http://127.0.0.1:${(http.address() as AddressInfo).port}` });
      await Promise.all([client.keys.verifyKey({ key: "a" }), client.keys.verifyKey({ key: "b" })]);
      expect(ended.length).toBeGreaterThan(0);
      await client.close();
      await Promise.all(ended);
    } finally {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    }
  });

  it("a call in flight when close() is called still gets its answer", async () => {
    let answer!: () => void;
    server = await startServer((_req, res) => {
      answer = () => ok(res, VERIFIED);
    });
    const client = testClient({ baseUrl: server.url });
    const call = client.keys.verifyKey({ key: "k" });
    await expect.poll(() => server!.requests.length, { timeout: 30_000 }).toBe(1);
    const closed = client.close();
    answer();
    await expect(call).resolves.toEqual(VERIFIED);
    await closed;
  });

  it("a script that closes its client leaves no socket behind and exits by itself", async () => {
    const http = createServer({ keepAliveTimeout: 120_000 }, (req, res) => {
      req.resume();
      req.on("end", () => ok(res, VERIFIED));
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    // No process.exit: the child ends only when nothing is left to wait for.
    const script = `
      import { createClient } from "./src/client.ts";
      const client = createClient({ rootKey: "root_k", baseUrl: ${JSON.stringify(url)} });
      const r = await client.keys.verifyKey({ key: "k" });
      await client.close();
      const sockets = process._getActiveHandles().filter((h) => h.constructor.name === "Socket" && h.remotePort !== undefined);
      console.log("verified", r.valid, "sockets left", sockets.length);
    `;
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (out += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
    expect(out).toContain("verified true sockets left 0");
    expect(code).toBe(0);
  }, 30_000);
});

describe("when undici cannot be loaded (a broken install: a fault no server can produce)", () => {
  afterEach(() => {
    vi.doUnmock("undici");
    vi.resetModules();
  });

  it("importing keyguard and creating a client do not need it (it is loaded lazily)", async () => {
    vi.resetModules();
    vi.doMock("undici", () => {
      throw new Error("Cannot find package 'undici'");
    });
    const keyguard = await import("../../src/index");
    const client = await import("../../src/client");
    expect(typeof keyguard.apiKeyAuth).toBe("function");
    expect(() => client.createClient({ rootKey: ROOT_KEY, baseUrl: "http://127.0.0.1:9", logger: silentLogger })).not.toThrow();
  });

  it("the call fails at once with a KeyServiceConfigError naming undici, without retrying", async () => {
    vi.resetModules();
    vi.doMock("undici", () => {
      throw new Error("Cannot find package 'undici'");
    });
    const { createClient: fresh } = await import("../../src/client/client");
    server = await startServer((_req, res) => ok(res, VERIFIED));
    const client = fresh({ rootKey: ROOT_KEY, baseUrl: server.url, logger: silentLogger, retry: { attempts: 3, initialDelay: 1 } });
    const error = await client.keys.verifyKey({ key: "k" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: "KEY_SERVICE_CONFIG_ERROR", option: "fetch" });
    expect((error as Error).message).toMatch(/cannot load undici.*pass \{ fetch \}/);
    expect(server.requests).toHaveLength(0);
  });
});

describe("while undici is still loading (slow loading is a fault no server can produce)", () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.doUnmock("undici");
    vi.resetModules();
  });

  it("a call made meanwhile waits for it before its first attempt's clock starts", async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    vi.resetModules();
    vi.doMock("undici", async (importOriginal) => {
      await gate;
      return importOriginal();
    });
    const { createClient: fresh } = await import("../../src/client/client");
    server = await startServer((_req, res) => ok(res, VERIFIED));
    const client = fresh({ rootKey: ROOT_KEY, baseUrl: server.url, logger: silentLogger, timeout: 1000, retry: false });
    // Timers under the test's control: time passes only when advanced, whatever the machine's speed.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const call = client.keys.verifyKey({ key: "k" }).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    // Far past the attempt's timeout while undici loads: that time is not the attempt's.
    await vi.advanceTimersByTimeAsync(10_000);
    open();
    expect(await call).toEqual({ value: VERIFIED });
    expect(server.requests).toHaveLength(1);
    await client.close();
  });

  it("the caller's signal still ends the wait at once", async () => {
    vi.resetModules();
    vi.doMock("undici", () => new Promise<never>(() => undefined)); // never loads
    const { createClient: fresh } = await import("../../src/client/client");
    const client = fresh({ rootKey: ROOT_KEY, baseUrl: "http://127.0.0.1:9", logger: silentLogger, retry: false });
    const controller = new AbortController();
    const call = client.keys.verifyKey({ key: "k" }, { signal: controller.signal });
    controller.abort(new Error("gave up"));
    await expect(call).rejects.toThrow("gave up");
  });
});
