// Faults between the middleware and the key service: a stand-in service in front of a real local
// one fails in every way we know; each fault gets its documented status and never passes fail-closed.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import express from "express";
import request from "supertest";
import { apiKeyAuth, getApiKey, type ApiKeyAuthOptions } from "keyguard";
import {
  capturingLogger,
  faults,
  startFaultServer,
  startLocal,
  trapUnhandled,
  type Fault,
  type FaultServer,
  type LocalFixture,
} from "./support";
import { GENEROUS } from "../support/time-limits";

const trap = trapUnhandled();
let local: LocalFixture;
let stub: FaultServer & { proxy: Fault };
let valid: { key: string; keyId: string };
let other: { key: string; keyId: string };

beforeAll(async () => {
  local = await startLocal();
  stub = await startFaultServer(local.svc.baseUrl);
  valid = await local.createKey();
  other = await local.createKey();
});
afterEach(() => {
  vi.useRealTimers();
  stub.queue.length = 0;
  stub.fallback = stub.proxy;
  expect(trap.events).toEqual([]);
});
afterAll(async () => {
  await stub.close();
  await local.close();
  trap.uninstall();
});

/**
 * Generous time limits (a healthy call through the stand-in to the local service must never turn
 * into a 503 on a busy machine: 300 ms, then 1 s per attempt were not enough), quick retries, no jitter.
 */
const FAST = { ...GENEROUS, retry: { attempts: 2, initialDelay: 20, maxDelay: 50, jitter: 0 } } as const;
/**
 * The limits of the faults that are about time (a slow answer, a hung socket): they cost a second
 * each. They cannot pass or fail by the machine's speed: the stand-in never answers, or starts its
 * delay after the client started its timer, so the client's timer always ends first.
 */
const SHORT = { timeout: 1000, deadline: 2500 } as const;
/** How late the slow fault answers: past SHORT's timeout. */
const SLOW_MS = 1500;

function appWith(options: Partial<ApiKeyAuthOptions> = {}) {
  const logger = capturingLogger();
  const calls = { count: 0 };
  const app = express();
  const auth = apiKeyAuth({ rootKey: local.svc.rootKey, baseUrl: stub.baseUrl, logger, cache: false, ...FAST, ...options });
  app.get("/", auth, (req, res) => {
    calls.count++;
    res.json({ keyId: getApiKey(req)?.keyId ?? null });
  });
  return { app, calls, logger };
}

/** One request with `Authorization: Bearer <key>` (none for null); counts what reached the stand-in. */
async function call(app: express.Express, key: string | null = valid.key) {
  const before = stub.hits;
  const req = request(app).get("/");
  const res = key === null ? await req : await req.set("Authorization", `Bearer ${key}`);
  return { res, hits: stub.hits - before };
}

interface FaultCase {
  name: string;
  fault: () => Fault;
  /** Requests the stand-in receives for one verification (a retry only where the contract allows one). */
  hits: number;
  retryAfter?: string;
  /** The time limits the case needs (the faults about time), else FAST's. */
  limits?: typeof SHORT;
}

/** Faults that mean "the service is unavailable": 503 + Retry-After by default. */
const UNAVAILABLE: FaultCase[] = [
  { name: "503 without Retry-After (retried once)", fault: () => faults.status503(), hits: 2, retryAfter: "5" },
  { name: "503 with Retry-After: 7 (retried once)", fault: () => faults.status503(7), hits: 2, retryAfter: "7" },
  { name: "connection reset before headers (retried once)", fault: faults.resetBeforeHeaders, hits: 2, retryAfter: "5" },
  { name: "connection reset after the headers of a 200", fault: faults.resetAfterHeaders, hits: 1, retryAfter: "5" },
  { name: "answer slower than the timeout", fault: () => faults.slow(SLOW_MS, stub.proxy), hits: 1, retryAfter: "5", limits: SHORT },
  { name: "hung socket", fault: faults.hang, hits: 1, retryAfter: "5", limits: SHORT },
  { name: "truncated JSON in a 200", fault: faults.truncatedJson, hits: 1, retryAfter: "5" },
  { name: "malformed JSON in a 200", fault: faults.malformedJson, hits: 1, retryAfter: "5" },
  { name: "empty 200", fault: faults.emptyBody, hits: 1, retryAfter: "5" },
  { name: "HTML 502 page (retried once)", fault: () => faults.html(502), hits: 2, retryAfter: "5" },
  { name: "HTML 500 page", fault: () => faults.html(500), hits: 1, retryAfter: "5" },
  { name: "200 without data", fault: faults.noData, hits: 1, retryAfter: "5" },
  { name: "200 with data but no boolean valid", fault: faults.dataWithoutValid, hits: 1, retryAfter: "5" },
  { name: '200 with valid: "true" (a string)', fault: faults.validAsString, hits: 1, retryAfter: "5" },
  {
    name: "429 workspace_rate_limited",
    fault: () => faults.errorEnvelope(429, "workspace_rate_limited", "slow down"),
    hits: 1,
    retryAfter: "5",
  },
];

/** Faults that mean "this server is misconfigured": 500, error log, never the caller's fault. */
const MISCONFIGURED: FaultCase[] = [
  { name: "401 error envelope (root key rejected)", fault: () => faults.errorEnvelope(401, "unauthorized"), hits: 1 },
  { name: "403 error envelope (root key lacks verify_key)", fault: () => faults.errorEnvelope(403, "forbidden"), hits: 1 },
];

describe("fail closed (default)", () => {
  it.each(UNAVAILABLE)("$name → 503 with Retry-After, handler not run", async ({ fault, hits, retryAfter, limits }) => {
    stub.fallback = fault();
    const { app, calls, logger } = appWith(limits);
    const { res, hits: seen } = await call(app);
    expect(res.status).toBe(503);
    expect(res.headers["retry-after"]).toBe(retryAfter);
    expect(res.headers["content-type"]).toBe("application/problem+json; charset=utf-8");
    expect(res.body).toMatchObject({ status: 503, code: "SERVICE_UNAVAILABLE" });
    expect(res.text).not.toMatch(/nginx|down|slow down|key_fault/);
    expect(calls.count).toBe(0);
    expect(seen).toBe(hits);
    expect(logger.entries.filter((e) => e.level === "warn")).toHaveLength(1);
  });

  it.each(MISCONFIGURED)("$name → 500 with an error log, handler not run", async ({ fault, hits }) => {
    stub.fallback = fault();
    const { app, calls, logger } = appWith();
    const { res, hits: seen } = await call(app);
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ status: 500, code: "VERIFICATION_FAILED" });
    expect(res.headers["www-authenticate"]).toBeUndefined();
    expect(res.text).not.toContain("root key is not valid");
    expect(calls.count).toBe(0);
    expect(seen).toBe(hits);
    expect(logger.entries.filter((e) => e.level === "error")).toHaveLength(1);
  });

  it("a 503 burst gives 503, then the service recovers and the valid key passes", async () => {
    stub.queue.push(faults.status503(), faults.status503(), faults.status503());
    const { app, calls } = appWith();
    const first = await call(app);
    expect(first.res.status).toBe(503);
    expect(first.hits).toBe(2);
    const second = await call(app); // the third 503 is absorbed by the retry
    expect(second.res.status).toBe(200);
    expect(second.res.body).toEqual({ keyId: valid.keyId });
    const third = await call(app);
    expect(third.res.status).toBe(200);
    expect(third.hits).toBe(1);
    expect(calls.count).toBe(2);
  });

  it("concurrent requests during a burst: each is 200 with the right key or 503, never anything else", async () => {
    // 15 failures for 10 requests of at most 2 attempts: at least 5 fail twice, and some pass.
    for (let i = 0; i < 15; i++) stub.queue.push(faults.status503());
    const { app, calls } = appWith();
    const results = await Promise.all(Array.from({ length: 10 }, () => call(app)));
    const statuses = results.map((r) => r.res.status);
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThanOrEqual(5);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    expect(calls.count).toBe(statuses.filter((s) => s === 200).length);
    for (const r of results) if (r.res.status === 200) expect(r.res.body).toEqual({ keyId: valid.keyId });
  });

  it("a missing key is 401 without calling the service, whatever its state", async () => {
    stub.fallback = faults.hang();
    const { app, calls } = appWith();
    const { res, hits } = await call(app, null);
    expect(res.status).toBe(401);
    expect(hits).toBe(0);
    expect(calls.count).toBe(0);
  });
});

/** The service's own rate limit: random keys from callers could trigger it, so it never opens the gate. */
const OPENS = UNAVAILABLE.filter((c) => !c.name.startsWith("429"));
const STAYS_CLOSED = UNAVAILABLE.filter((c) => c.name.startsWith("429"));

describe('onServiceError: "open"', () => {
  it.each(OPENS)("$name → passes unauthenticated (no req.apiKey), with a warning", async ({ fault, limits }) => {
    stub.fallback = fault();
    const { app, calls, logger } = appWith({ onServiceError: "open", ...limits });
    const { res } = await call(app);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ keyId: null });
    expect(calls.count).toBe(1);
    expect(logger.entries.filter((e) => e.level === "warn")).toHaveLength(1);
  });

  it.each(STAYS_CLOSED)("$name → still 503: the service's own rate limit never fails open", async ({ fault }) => {
    stub.fallback = fault();
    const { app, calls } = appWith({ onServiceError: "open" });
    const { res } = await call(app);
    expect(res.status).toBe(503);
    expect(calls.count).toBe(0);
  });

  it.each(MISCONFIGURED)("$name → still 500: misconfiguration never fails open", async ({ fault }) => {
    stub.fallback = fault();
    const { app, calls } = appWith({ onServiceError: "open" });
    const { res } = await call(app);
    expect(res.status).toBe(500);
    expect(calls.count).toBe(0);
  });

  it("missing and unknown keys are still refused while the service is healthy", async () => {
    const { app, calls } = appWith({ onServiceError: "open" });
    expect((await call(app, null)).res.status).toBe(401);
    expect((await call(app, "sk_NotAKeyThatExists123")).res.status).toBe(401);
    expect(calls.count).toBe(0);
  });
});

describe("staleIfError", () => {
  it.each(UNAVAILABLE)("$name → serves the earlier VALID answer for that key only", async ({ fault, retryAfter, limits }) => {
    const { app, calls } = appWith({ staleIfError: 60_000, ...limits });
    // With a fault's short limits, the healthy call may itself run out of time on a busy machine (a
    // 503 that teaches the stale store nothing, and does not reach the handler): ask until it passes.
    await expect.poll(async () => (await call(app)).res.status, { timeout: 30_000 }).toBe(200);
    stub.fallback = fault();
    const stale = await call(app);
    expect(stale.res.status).toBe(200);
    expect(stale.res.body).toEqual({ keyId: valid.keyId });
    const unseen = await call(app, other.key);
    expect(unseen.res.status).toBe(503);
    expect(unseen.res.headers["retry-after"]).toBe(retryAfter);
    expect(calls.count).toBe(2);
  });

  it.each(MISCONFIGURED)("$name → 500, never a stale pass", async ({ fault }) => {
    const { app, calls } = appWith({ staleIfError: 60_000 });
    expect((await call(app)).res.status).toBe(200);
    stub.fallback = fault();
    expect((await call(app)).res.status).toBe(500);
    expect(calls.count).toBe(1);
  });

  it("a key whose last answer was NOT_FOUND is not served stale", async () => {
    const { app, calls } = appWith({ staleIfError: 60_000 });
    expect((await call(app, "sk_NotAKeyThatExists123")).res.status).toBe(401);
    stub.fallback = faults.status503();
    expect((await call(app, "sk_NotAKeyThatExists123")).res.status).toBe(503);
    expect(calls.count).toBe(0);
  });

  it("an answer older than staleIfError is not served", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const { app, calls } = appWith({ staleIfError: 60_000 });
    expect((await call(app)).res.status).toBe(200);
    stub.fallback = faults.status503();
    vi.setSystemTime(Date.now() + 59_000);
    expect((await call(app)).res.status).toBe(200);
    vi.setSystemTime(Date.now() + 2_000);
    expect((await call(app)).res.status).toBe(503);
    expect(calls.count).toBe(2);
  });
});

describe("after all the faults", () => {
  it("the middleware still serves, and no unhandled rejection or uncaught exception fired", async () => {
    // Give delayed answers of the slow fault time to land on their abandoned sockets.
    await new Promise((resolve) => setTimeout(resolve, SLOW_MS - SHORT.timeout + 100));
    const { app, calls } = appWith();
    expect((await call(app)).res.status).toBe(200);
    expect(calls.count).toBe(1);
    expect(trap.events).toEqual([]);
  });
});
