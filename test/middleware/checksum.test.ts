// Offline rejection in apiKeyAuth(): a key of the checksummed format whose checksum fails is
// answered 401 INVALID_CHECKSUM synchronously, without a cache lookup or a call to the key service
// (10,000 random ones: no call, no store access); a good key of that format and plain keys verify
// as before; rejectBadChecksums: false sends every key to the service.
import { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { apiKeyAuth, getApiKey, memoryStore, silentLogger, type Store } from "keyguard";
import { countingClient, startService, type ServiceFixture } from "./helpers";
import { GENEROUS } from "../support/time-limits";

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

let fx: ServiceFixture;
let apiId: string;
beforeAll(async () => {
  fx = await startService();
  ({ apiId } = await fx.svc.service.createApi({ name: "checksummed", keyFormat: "checksummed" }));
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

function garbage(i: number): string {
  let digits = "";
  for (let d = 0; d < 28; d++) digits += BASE58[Math.floor(Math.random() * 58)];
  return `${i % 3 === 0 ? "" : "sk_"}kg0${digits}`;
}

/** A memoryStore() that counts every call made to it. */
function countingStore(): { store: Store; calls: { count: number } } {
  const inner = memoryStore();
  const calls = { count: 0 };
  const store = new Proxy(inner, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.count++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, calls };
}

it("10,000 random keys of the checksummed format: 401 INVALID_CHECKSUM at once, no service call, no store access", async () => {
  const { client, calls } = countingClient(fx.svc);
  const { store, calls: storeCalls } = countingStore();
  const codes = new Map<string, number>();
  const auth = apiKeyAuth({
    client,
    store,
    logger: silentLogger,
    ...GENEROUS,
    onDecision: (d) => codes.set(d.code, (codes.get(d.code) ?? 0) + 1),
  });
  // What apiKeyAuth() itself does with the store when it is made (it subscribes to invalidations).
  const atStart = storeCalls.count;
  for (let i = 0; i < 10_000; i++) {
    const { req, res } = requestWith(garbage(i));
    let nextCalled = false;
    auth(req, res, () => (nextCalled = true));
    // Answered before auth() returned: no promise was involved.
    expect(res.statusCode).toBe(401);
    expect(res.headersSent).toBe(true);
    expect(nextCalled).toBe(false);
  }
  expect(calls.count).toBe(0);
  expect(storeCalls.count).toBe(atStart);
  expect(Object.fromEntries(codes)).toEqual({ INVALID_CHECKSUM: 10_000 });
});

it("good keys of both formats verify; rejectBadChecksums: false asks the service, which answers NOT_FOUND", async () => {
  const { client, calls } = countingClient(fx.svc);
  const auth = apiKeyAuth({ client, logger: silentLogger, ...GENEROUS });
  const off = apiKeyAuth({ client, logger: silentLogger, ...GENEROUS, rejectBadChecksums: false });
  const run = (mw: typeof auth, key: string) =>
    new Promise<{ req: IncomingMessage; res: ServerResponse; passed: boolean }>((resolve) => {
      const { req, res } = requestWith(key);
      res.end = ((..._args: unknown[]) => {
        resolve({ req, res, passed: false });
        return res;
      }) as ServerResponse["end"];
      mw(req, res, () => resolve({ req, res, passed: true }));
    });
  const checksummed = (await fx.client.keys.createKey({ apiId, prefix: "sk" })).key;
  const plain = await fx.createKey({ prefix: "sk" });
  for (const key of [checksummed, plain]) {
    const admitted = await run(auth, key);
    expect(admitted.passed).toBe(true);
    expect(getApiKey(admitted.req)?.valid).toBe(true);
  }
  expect(calls.count).toBe(2);
  const mistyped = `${checksummed.slice(0, -1)}${checksummed.endsWith("z") ? "y" : "z"}`;
  expect((await run(auth, mistyped)).res.statusCode).toBe(401);
  expect(calls.count).toBe(2);
  const asked = await run(off, mistyped);
  expect(asked.res.statusCode).toBe(401);
  expect(calls.count).toBe(3);
});

it("a key just passed is remembered by identity only: the same key mistyped in one digit is still refused, each time", async () => {
  const { client, calls } = countingClient(fx.svc);
  const codes: string[] = [];
  const auth = apiKeyAuth({ client, logger: silentLogger, ...GENEROUS, onDecision: (d) => codes.push(d.code) });
  const run = (key: string) =>
    new Promise<number>((resolve) => {
      const { req, res } = requestWith(key);
      res.end = ((..._args: unknown[]) => {
        resolve(res.statusCode);
        return res;
      }) as ServerResponse["end"];
      auth(req, res, () => resolve(200));
    });
  const good = (await fx.client.keys.createKey({ apiId, prefix: "sk" })).key;
  const mistyped = `${good.slice(0, -1)}${good.endsWith("z") ? "y" : "z"}`;
  expect(mistyped).toHaveLength(good.length);
  const statuses: number[] = [];
  for (const key of [good, mistyped, good, mistyped, mistyped, good]) statuses.push(await run(key));
  expect(statuses).toEqual([200, 401, 200, 401, 401, 200]);
  expect(codes).toEqual(["VALID", "INVALID_CHECKSUM", "VALID", "INVALID_CHECKSUM", "INVALID_CHECKSUM", "VALID"]);
  // The good key was asked for once; the mistyped one never.
  expect(calls.count).toBe(1);
});
