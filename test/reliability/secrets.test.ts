// Secrets: with a capturing logger, every scenario (real local service, and stand-in services that
// echo what they were sent) keeps the root key and callers' keys out of logs, errors and responses.
import { createHash } from "node:crypto";
import { inspect } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import express, { type ErrorRequestHandler } from "express";
import request from "supertest";
import { apiKeyAuth, type ApiKeyAuthOptions } from "keyguard";
import {
  capturingLogger,
  faults,
  safeStringify,
  startFaultServer,
  startLocal,
  type Fault,
  type FaultServer,
  type LocalFixture,
} from "./support";
import { GENEROUS } from "../support/time-limits";

let local: LocalFixture;
let stub: FaultServer;
let valid: string;
let limited: string;
const unknownKey = "sk_3xQvT9mWpL2rKd8sYb6nHc4fJg7uZa5e";
const wrongRootKey = "root_9hGfDs8aPoIu7yTr6eWq5kJl4mNb3vCx";

beforeAll(async () => {
  local = await startLocal();
  stub = await startFaultServer(local.svc.baseUrl);
  valid = (await local.createKey()).key;
  limited = (await local.createKey({ ratelimits: [{ name: "requests", limit: 1, duration: 60_000, autoApply: true }] })).key;
});
afterEach(() => {
  local.svc.service.setUnavailable(false);
  stub.fallback = faults.hang();
});
afterAll(async () => {
  await stub.close();
  await local.close();
});

/** Each secret, and its random part (without the `prefix_`), which must not appear either. */
function secretForms(): string[] {
  return [local.svc.rootKey, wrongRootKey, valid, limited, unknownKey].flatMap((s) => [s, s.slice(s.indexOf("_") + 1)]);
}

function expectNoSecret(where: string, text: string): void {
  for (const secret of secretForms()) {
    if (text.includes(secret)) throw new Error(`${where} contains a secret (${secret.slice(0, 4)}…): ${text.slice(0, 500)}`);
  }
}

/** Hostile stand-ins: they echo the root key and the caller's key into every part of the answer. */
const echo =
  (build: (secrets: string) => Fault): Fault =>
  (req, res, body, later) => {
    let key = "";
    try {
      key = String((JSON.parse(body) as { key?: unknown }).key ?? "");
    } catch {
      key = "";
    }
    const secrets = `${req.headers.authorization ?? ""} ${key}`;
    res.setHeader("X-Echo", secrets.replace(/[^\x20-\x7e]/g, ""));
    build(secrets)(req, res, body, later);
  };
const envelope = (status: number, kind: string, secrets: string): Fault =>
  faults.json(
    status,
    {
      meta: { requestId: secrets.split(" ").at(-1) },
      error: {
        title: secrets,
        detail: `rejected ${secrets}`,
        status,
        type: `https://unkey.com/docs/api-reference/errors-v2/unkey/${kind}/${secrets.split(" ").at(-1)}`,
        errors: [{ location: secrets, message: secrets }],
      },
    },
    { "retry-after": secrets.split(" ").at(-1) ?? "" },
  );

interface Scenario {
  name: string;
  /** Options beyond the defaults (a real local service, the root key, the capturing logger). */
  options?: () => Partial<ApiKeyAuthOptions>;
  /** The key sent, if any. */
  key?: () => string;
  before?: () => Promise<void> | void;
  /** The documented status (either of two where the contract leaves the choice open). */
  status: number | readonly [number, number];
}

const viaStub = (fault: Fault): Pick<Scenario, "options" | "before"> => ({
  options: () => ({ baseUrl: stub.baseUrl }),
  before: () => {
    stub.fallback = fault;
  },
});

const SCENARIOS: Scenario[] = [
  { name: "valid key", key: () => valid, status: 200 },
  { name: "unknown key", key: () => unknownKey, status: 401 },
  { name: "missing key", status: 401 },
  { name: "service down (503)", key: () => valid, before: () => local.svc.service.setUnavailable(true), status: 503 },
  { name: "root key rejected", options: () => ({ rootKey: wrongRootKey }), key: () => valid, status: 500 },
  {
    name: "computed permission query with a syntax error",
    options: () => ({ permissions: () => "docs.read AND (" }),
    key: () => valid,
    status: 500,
  },
  { name: "static permission query the key lacks", options: () => ({ permissions: "docs.write" }), key: () => valid, status: 403 },
  {
    name: "rate limited",
    key: () => limited,
    before: async () => {
      await local.client.keys.verifyKey({ key: limited });
    },
    status: 429,
  },
  {
    name: "open mode, service down",
    options: () => ({ onServiceError: "open" }),
    key: () => valid,
    before: () => local.svc.service.setUnavailable(true),
    status: 200,
  },
  {
    name: "stand-in: 500 envelope echoing the secrets",
    ...viaStub(echo((s) => envelope(500, "application", s))),
    key: () => valid,
    status: 503,
  },
  {
    name: "stand-in: 401 envelope echoing the secrets",
    ...viaStub(echo((s) => envelope(401, "authentication", s))),
    key: () => unknownKey,
    status: 500,
  },
  {
    name: "stand-in: 400 invalid permission query echoing the secrets",
    ...viaStub(echo((s) => envelope(400, "application", s))),
    key: () => valid,
    status: 500,
  },
  {
    name: "stand-in: 412 unknown rate limit echoing the secrets",
    ...viaStub(echo((s) => envelope(412, "application", s))),
    key: () => valid,
    status: 500,
  },
  {
    name: "stand-in: HTML 502 echoing the secrets",
    ...viaStub(echo((s) => (_req, res) => void res.writeHead(502, { "content-type": "text/html" }).end(`<h1>${s}</h1>`))),
    key: () => valid,
    status: 503,
  },
  {
    name: "stand-in: malformed 200 echoing the secrets",
    ...viaStub(echo((s) => faults.json(200, `{"meta":{"requestId":"${s}"},"data":{valid:${s}`))),
    key: () => valid,
    status: 503,
  },
  {
    name: "stand-in: 200 without data echoing the secrets",
    ...viaStub(echo((s) => faults.json(200, { meta: { requestId: s }, note: s }))),
    key: () => valid,
    status: 503,
  },
  {
    name: "stand-in: NOT_FOUND with the key as request id",
    ...viaStub(echo((s) => faults.json(200, { meta: { requestId: s.split(" ").at(-1) }, data: { valid: false, code: "NOT_FOUND" } }))),
    key: () => unknownKey,
    status: 401,
  },
  {
    // An unknown code is 401 by the table; refusing such an answer as invalid (503) would be fine too.
    name: "stand-in: a rejection whose code is the caller's key",
    ...viaStub(echo((s) => faults.json(200, { meta: { requestId: "req_echo" }, data: { valid: false, code: s.split(" ").at(-1) } }))),
    key: () => unknownKey,
    status: [401, 503],
  },
];

/**
 * No scenario here waits on a time limit (the stand-in's hang is only its fallback between tests):
 * generous limits, so that the valid key's 200 cannot turn into a 503 on a busy machine; quick retries.
 */
const FAST = { ...GENEROUS, retry: { attempts: 2, initialDelay: 20, maxDelay: 50, jitter: 0 } } as const;

async function run(scenario: Scenario, passErrors: boolean) {
  const logger = capturingLogger();
  const passed: unknown[] = [];
  const app = express();
  app.get(
    "/",
    apiKeyAuth({
      rootKey: local.svc.rootKey,
      baseUrl: local.svc.baseUrl,
      logger,
      cache: false,
      passErrors,
      ...FAST,
      ...scenario.options?.(),
    }),
    (_req, res) => void res.json({ ok: true }),
  );
  const onError: ErrorRequestHandler = (err: { status?: number }, _req, res, _next) => {
    passed.push(err);
    res.status(err.status ?? 500).json({ passed: true });
  };
  app.use(onError);
  await scenario.before?.();
  const req = request(app).get("/");
  const key = scenario.key?.();
  const res = await (key === undefined ? req : req.set("Authorization", `Bearer ${key}`));
  return { res, logger, passed };
}

describe.each([
  { variant: "problem+json answers", passErrors: false },
  { variant: "passErrors: next(err)", passErrors: true },
])("secrets stay out ($variant)", ({ passErrors }) => {
  it.each(SCENARIOS)("$name", async (scenario) => {
    const { res, logger, passed } = await run(scenario, passErrors);
    const statuses: readonly number[] = typeof scenario.status === "number" ? [scenario.status] : scenario.status;
    expect(statuses).toContain(res.status);
    expectNoSecret("the response body", res.text);
    expectNoSecret("the response headers", JSON.stringify(res.headers));
    expectNoSecret("the middleware's log", logger.text());
    // Failures and failing open are logged: the check above looked at real log lines.
    if (res.status >= 500 || scenario.options?.().onServiceError === "open") expect(logger.entries.length).toBeGreaterThan(0);
    expectNoSecret("the local service's log", local.logger.text());
    for (const err of passed) {
      expectNoSecret("the error passed to next()", inspect(err, { depth: 12, showHidden: true, getters: true }));
      expectNoSecret("the error passed to next() (JSON)", safeStringify(err));
      expectNoSecret("the error's message and stack", `${(err as Error).message}\n${(err as Error).stack ?? ""}`);
    }
    // Denials reach next(err) only with passErrors; a pass never does.
    expect(passed).toHaveLength(passErrors && res.status !== 200 ? 1 : 0);
  });
});

describe("the local service's state", () => {
  it("holds hashes only, never a plaintext key", async () => {
    const snapshot = JSON.stringify(await local.svc.service.exportState());
    expectNoSecret("service.exportState()", snapshot);
    for (const key of [local.svc.rootKey, valid, limited]) {
      const digest = createHash("sha256").update(key, "utf8");
      const [hex, b64] = [digest.copy().digest("hex"), digest.digest("base64")];
      expect(snapshot.includes(hex) || snapshot.includes(b64)).toBe(true);
    }
  });
});
