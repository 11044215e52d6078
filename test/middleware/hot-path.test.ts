// The cached-key path: answered synchronously (next() before the handler returns), with no
// timer armed per request (a timer per millisecond under load was measurable CPU); and the key
// hash remembered per connection never answers for another key sent on the same connection.
import { once } from "node:events";
import { Agent, IncomingMessage, request as httpRequest, ServerResponse } from "node:http";
import { Socket, type AddressInfo } from "node:net";
import express from "express";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { apiKeyAuth, getApiKey, silentLogger } from "keyguard";
import { startService, type ServiceFixture } from "./helpers";
import { GENEROUS } from "../support/time-limits";

let fx: ServiceFixture;
beforeAll(async () => {
  fx = await startService();
});
afterAll(() => fx.close());

function requestWith(key: string): { req: IncomingMessage; res: ServerResponse } {
  const req = new IncomingMessage(new Socket());
  req.method = "GET";
  req.url = "/";
  req.headers = { authorization: `Bearer ${key}` };
  req.rawHeaders = ["Authorization", `Bearer ${key}`];
  return { req, res: new ServerResponse(req) };
}

it("a cached key is admitted synchronously and arms no timer", async () => {
  const key = await fx.createKey({ name: "hot-path" });
  const auth = apiKeyAuth({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, logger: silentLogger, ...GENEROUS });
  // The first request verifies at the service and keeps the answer.
  const first = requestWith(key);
  await new Promise<void>((resolve, reject) => auth(first.req, first.res, (err?: unknown) => (err ? reject(err as Error) : resolve())));
  expect(getApiKey(first.req)?.valid).toBe(true);
  // Let any per-millisecond cache clock expire, so a timer-based one would arm again.
  await new Promise((resolve) => setTimeout(resolve, 5));

  const timers = vi.spyOn(globalThis, "setTimeout");
  try {
    for (let i = 0; i < 50; i++) {
      const { req, res } = requestWith(key);
      let admitted = false;
      auth(req, res, (err?: unknown) => {
        expect(err).toBeUndefined();
        admitted = true;
      });
      expect(admitted).toBe(true);
      expect(getApiKey(req)?.valid).toBe(true);
    }
    expect(timers).not.toHaveBeenCalled();
  } finally {
    timers.mockRestore();
  }
});

/** GET on one keep-alive connection; resolves with the status, the body and whether the socket was reused. */
function getOn(agent: Agent, url: string, key: string): Promise<{ status: number; body: string; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, reused: req.reusedSocket }));
    });
    req.on("error", reject);
    req.end();
  });
}

it("one keep-alive connection sending different keys gets each key's own answer", async () => {
  const good = await fx.createKey({ name: "conn-good" });
  const other = await fx.createKey({ name: "conn-other" });
  const auth = apiKeyAuth({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, logger: silentLogger, ...GENEROUS });
  const app = express();
  app.get("/", auth, (req, res) => res.send(req.apiKey?.name ?? "none"));
  const server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const seen: Array<{ status: number; body: string }> = [];
    let reused = 0;
    // Twice each, alternating, so every answer after the first two comes from the cache.
    for (const key of [good, "sk_never_issued_1", other, good, "sk_never_issued_1", other]) {
      const r = await getOn(agent, url, key);
      if (r.reused) reused++;
      seen.push({ status: r.status, body: r.status === 200 ? r.body : "" });
    }
    expect(reused).toBe(5); // all on one connection
    expect(seen).toEqual([
      { status: 200, body: "conn-good" },
      { status: 401, body: "" },
      { status: 200, body: "conn-other" },
      { status: 200, body: "conn-good" },
      { status: 401, body: "" },
      { status: 200, body: "conn-other" },
    ]);
  } finally {
    agent.destroy();
    server.close();
  }
});
