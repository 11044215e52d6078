// The cached-key path: answered synchronously (next() before the handler returns), with no
// timer armed per request (a timer per millisecond under load was measurable CPU).
import { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { apiKeyAuth, getApiKey, silentLogger } from "keyguard";
import { startService, type ServiceFixture } from "./helpers";

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
  const auth = apiKeyAuth({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, logger: silentLogger });
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
