// apiKeyAuth({ migrateFrom }) and apiKeyAuth({ shadow }): two real key services on port 0, the old
// one (where the keys were made) and keyguard's (where they move), each call counted by operation.
// A key made on the old service passes unchanged and arrives with every field; refusals there are
// refusals here, the same way; no key or root key reaches the log.
import express from "express";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type KeyServiceClient } from "keyguard/client";
import {
  apiKeyAuth,
  ConfigError,
  getApiKey,
  silentLogger,
  type ApiKeyAuthOptions,
  type AuthDecision,
  type Logger,
  type LogFields,
} from "keyguard";
import { Unkey } from "@unkey/api";
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { webApiKeyAuth } from "keyguard/web";
import { startService, type ServiceFixture } from "./helpers";
import { GENEROUS } from "../support/time-limits";
import { refusedUrl } from "../support/loopback-ports";

let old: ServiceFixture;
let here: ServiceFixture;
let migrationId: string;
beforeAll(async () => {
  [old, here] = await Promise.all([startService(), startService()]);
  ({ migrationId } = await here.svc.service.createKeyMigration({ algorithm: "sha256" }));
});
afterAll(() => Promise.all([old.close(), here.close()]));

/** A client of `fx`'s service counting its calls by operation name (`keys.verifyKey`: 2). */
function counted(fx: ServiceFixture): { client: KeyServiceClient; calls: Record<string, number> } {
  const calls: Record<string, number> = {};
  const client = createClient({
    rootKey: fx.svc.rootKey,
    baseUrl: fx.svc.baseUrl,
    retry: false,
    logger: silentLogger,
    ...GENEROUS,
    fetch: (input, init) => {
      const op = String(input instanceof Request ? input.url : input).split("/v2/")[1]!;
      calls[op] = (calls[op] ?? 0) + 1;
      return fetch(input, init);
    },
  });
  return { client, calls };
}

/** Every log line, debug included, as text. */
function textLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const line = (level: string) => (fields: LogFields, message: string) => lines.push(`${level} ${message} ${JSON.stringify(fields)}`);
  return { lines, debug: line("debug"), warn: line("warn"), error: line("error") };
}

function migratingApp(
  options: Omit<Partial<ApiKeyAuthOptions>, "migrateFrom"> & { migrateFrom?: Partial<NonNullable<ApiKeyAuthOptions["migrateFrom"]>> } = {},
) {
  const oldSide = counted(old);
  const hereSide = counted(here);
  const logger = textLogger();
  const decisions: AuthDecision[] = [];
  const { migrateFrom, ...rest } = options;
  const app = express().get(
    "/",
    apiKeyAuth({
      client: hereSide.client,
      logger,
      ...GENEROUS,
      onDecision: (d) => decisions.push(d),
      ...rest,
      migrateFrom: { client: oldSide.client, apiId: old.svc.apiId, intoApiId: here.svc.apiId, migrationId, ...migrateFrom },
    }),
    (req, res) => {
      res.json(getApiKey(req));
    },
  );
  return { app, oldCalls: oldSide.calls, hereCalls: hereSide.calls, logger, decisions };
}

/** An OpenTelemetry meter provider exporting to memory, and what it has measured so far (after a collection). */
function memoryMeter() {
  const exported = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const meterProvider = new MeterProvider({
    readers: [new PeriodicExportingMetricReader({ exporter: exported, exportIntervalMillis: 60_000 })],
  });
  const metrics = async () => {
    await meterProvider.forceFlush();
    return (
      exported
        .getMetrics()
        .at(-1)
        ?.scopeMetrics.flatMap((s) => s.metrics) ?? []
    );
  };
  return { meterProvider, metrics };
}

const secretsOf = (...keys: string[]) => [...keys, old.svc.rootKey, here.svc.rootKey];

describe("apiKeyAuth({ migrateFrom })", () => {
  it("a key made on the old service passes unchanged, arrives with every field, and is charged once, here", async () => {
    await old.client.permissions.createRole({ name: "editor", permissions: ["docs.write"] });
    const expires = Date.now() + 86_400_000;
    const { key, keyId } = await old.createKeyWithId({
      name: "first caller",
      meta: { plan: "pro", seats: 3 },
      expires,
      permissions: ["docs.read"],
      roles: ["editor"],
      externalId: "customer-7",
      ratelimits: [{ name: "requests", limit: 100, duration: 60_000, autoApply: true }],
      credits: { remaining: 10, refill: { interval: "daily", amount: 10 } },
    });
    const { app, oldCalls, hereCalls, logger, decisions } = migratingApp();

    const first = await request(app).get("/").set("Authorization", `Bearer ${key}`);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      valid: true,
      code: "VALID",
      name: "first caller",
      meta: { plan: "pro", seats: 3 },
      expires,
      credits: 9,
      roles: ["editor"],
      identity: { externalId: "customer-7" },
    });
    expect([...first.body.permissions].sort()).toEqual(["docs.read", "docs.write"]);
    expect(first.body.keyId).not.toBe(keyId);
    // The old service was asked once, without a charge, and read once.
    expect(oldCalls).toEqual({ "keys.verifyKey": 1, "keys.getKey": 1 });
    expect(hereCalls).toEqual({ "keys.verifyKey": 2, "keys.migrateKeys": 1 });
    expect((await old.client.keys.getKey({ keyId })).credits?.remaining).toBe(10);

    const arrived = await here.client.keys.whoami({ key });
    expect(arrived).toMatchObject({
      keyId: first.body.keyId,
      enabled: true,
      name: "first caller",
      meta: { plan: "pro", seats: 3 },
      expires,
      roles: ["editor"],
      identity: { externalId: "customer-7" },
      ratelimits: [expect.objectContaining({ name: "requests", limit: 100, duration: 60_000, autoApply: true })],
      credits: { remaining: 9, refill: { interval: "daily", amount: 10 } },
    });
    expect(arrived.permissions).toEqual(expect.arrayContaining(["docs.read"]));

    // Later requests never reach the old service.
    const second = await request(app).get("/").set("X-API-Key", key);
    expect(second.status).toBe(200);
    expect(second.body.credits).toBe(8);
    expect(oldCalls).toEqual({ "keys.verifyKey": 1, "keys.getKey": 1 });
    // onDecision says which request met the old service.
    expect(decisions.map((d) => [d.code, d.migration])).toEqual([
      ["VALID", "imported"],
      ["VALID", undefined],
    ]);
    const all = logger.lines.join("\n");
    for (const secret of secretsOf(key)) expect(all).not.toContain(secret);
  });

  it("a revoked, disabled, expired or out-of-credit key on the old service is refused as the old service refuses it", async () => {
    const revoked = await old.createKeyWithId();
    await old.client.keys.deleteKey({ keyId: revoked.keyId });
    const disabled = await old.createKey({ enabled: false });
    const expired = await old.createKey({ expires: Date.now() + 1000 });
    const spent = await old.createKey({ credits: { remaining: 0 } });
    await new Promise((r) => setTimeout(r, 1200));
    const direct = express().get("/", apiKeyAuth({ client: old.client, logger: silentLogger, ...GENEROUS }), (_req, res) => {
      res.send("ok");
    });
    const { app, logger, decisions } = migratingApp();
    const seen: Array<[number, string]> = [];
    for (const key of [revoked.key, disabled, expired, spent]) {
      const there = await request(direct).get("/").set("X-API-Key", key);
      const ours = await request(app).get("/").set("X-API-Key", key);
      expect([ours.status, ours.body.code]).toEqual([there.status, there.body.code]);
      seen.push([ours.status, ours.body.code as string]);
    }
    expect(seen).toEqual([
      [401, "NOT_FOUND"],
      [401, "DISABLED"],
      [401, "EXPIRED"],
      [429, "USAGE_EXCEEDED"],
    ]);
    expect(decisions.map((d) => d.migration)).toEqual(["refused", "refused", "refused", "imported"]);
    // Only the key valid there (at cost 0) was imported: with no credits left.
    expect((await here.client.keys.whoami({ key: spent })).credits?.remaining).toBe(0);
    await expect(here.client.keys.whoami({ key: disabled })).rejects.toMatchObject({ status: 404 });
    const all = logger.lines.join("\n");
    for (const secret of secretsOf(revoked.key, disabled, expired, spent)) expect(all).not.toContain(secret);
  });

  it("a failed import answers as the old service does, charged there once; nothing is imported", async () => {
    const { key, keyId } = await old.createKeyWithId({ credits: { remaining: 5 } });
    const { app, oldCalls, logger, decisions } = migratingApp({ migrateFrom: { migrationId: "mig_unknown" } });
    const res = await request(app).get("/").set("X-API-Key", key);
    expect(res.status).toBe(200);
    expect(res.body.credits).toBe(4);
    expect(decisions).toMatchObject([{ outcome: "admitted", code: "VALID", migration: "import-failed" }]);
    expect((await old.client.keys.getKey({ keyId })).credits?.remaining).toBe(4);
    expect(oldCalls).toEqual({ "keys.verifyKey": 2, "keys.getKey": 1 });
    await expect(here.client.keys.whoami({ key })).rejects.toMatchObject({ status: 404 });
    expect(logger.lines.some((l) => l.includes("importing a key from the old service failed"))).toBe(true);
    const all = logger.lines.join("\n");
    for (const secret of secretsOf(key)) expect(all).not.toContain(secret);
  });

  it("the old service down: 503 as for any service failure, never a pass", async () => {
    const key = await old.createKey();
    const oldDown = createClient({
      rootKey: old.svc.rootKey,
      baseUrl: await refusedUrl(),
      retry: false,
      logger: silentLogger,
      ...GENEROUS,
    });
    const { app, logger, decisions } = migratingApp({ migrateFrom: { client: oldDown } });
    const res = await request(app).get("/").set("X-API-Key", key);
    expect(res.status).toBe(503);
    expect(res.body.code).toBe("SERVICE_UNAVAILABLE");
    expect(decisions).toMatchObject([{ outcome: "denied", status: 503, migration: "unreachable" }]);
    expect(logger.lines.some((l) => l.includes("the old key service could not be asked"))).toBe(true);
  });

  it("after `until`, an unknown key is not looked for at the old service", async () => {
    const key = await old.createKey();
    const { app, oldCalls } = migratingApp({ migrateFrom: { until: new Date(Date.now() - 1000) } });
    const res = await request(app).get("/").set("X-API-Key", key);
    expect([res.status, res.body.code]).toEqual([401, "NOT_FOUND"]);
    expect(oldCalls).toEqual({});
  });

  it("one process meeting a new key 10 times at once imports it once and charges each request once, here", async () => {
    const { key, keyId } = await old.createKeyWithId({ credits: { remaining: 50 } });
    const { app, oldCalls, hereCalls } = migratingApp();
    const answers = await Promise.all(Array.from({ length: 10 }, () => request(app).get("/").set("X-API-Key", key)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(oldCalls).toEqual({ "keys.verifyKey": 1, "keys.getKey": 1 });
    expect(hereCalls["keys.migrateKeys"]).toBe(1);
    expect((await here.client.keys.whoami({ key })).credits?.remaining).toBe(40);
    expect((await old.client.keys.getKey({ keyId })).credits?.remaining).toBe(50);
  });

  it("options: each is checked; an unknown one is refused; the old root key is never shown", () => {
    const base = { rootKey: here.svc.rootKey, baseUrl: here.svc.baseUrl };
    const from = { baseUrl: old.svc.baseUrl, rootKey: old.svc.rootKey, apiId: old.svc.apiId, intoApiId: here.svc.apiId, migrationId };
    expect(() => apiKeyAuth({ ...base, migrateFrom: from })).not.toThrow();
    const bad = (migrateFrom: unknown) => () => apiKeyAuth({ ...base, migrateFrom: migrateFrom as never });
    expect(bad({ ...from, intoApi: "x" })).toThrow(ConfigError);
    expect(bad({ ...from, migrationId: undefined })).toThrow(/migrateFrom\.migrationId/);
    expect(bad({ ...from, rootKey: undefined })).toThrow(/migrateFrom\.rootKey/);
    expect(bad({ ...from, until: "tomorrow" })).toThrow(/migrateFrom\.until/);
    const shadow = { baseUrl: old.svc.baseUrl, rootKey: old.svc.rootKey };
    expect(() => apiKeyAuth({ ...base, shadow })).not.toThrow();
    const badShadow = (value: unknown) => () => apiKeyAuth({ ...base, shadow: value as never });
    expect(badShadow({ ...shadow, sample: 1.5 })).toThrow(/shadow\.sample/);
    expect(badShadow({ ...shadow, smaple: 0.5 })).toThrow(ConfigError);
    expect(badShadow({ ...shadow, client: here.client })).toThrow(/shadow\.client/);
    expect(badShadow({ ...shadow, onDisagreement: "log" })).toThrow(/shadow\.onDisagreement/);
    let thrown: unknown;
    try {
      bad({ ...from, baseUrl: "not a url" })();
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as Error).message).toMatch(/migrateFrom\.baseUrl/);
    expect((thrown as Error).message).not.toContain(old.svc.rootKey);
  });
});

describe("migrateFrom through keyguard/web, with the official SDK on both services", () => {
  it("a key the SDK made at the old service passes webApiKeyAuth() and then verifies here through the SDK", async () => {
    const oldSdk = new Unkey({ rootKey: old.svc.rootKey, serverURL: old.svc.baseUrl, retryConfig: { strategy: "none" } });
    const hereSdk = new Unkey({ rootKey: here.svc.rootKey, serverURL: here.svc.baseUrl, retryConfig: { strategy: "none" } });
    const made = await oldSdk.keys.createKey({ apiId: old.svc.apiId, name: "sdk made", credits: { remaining: 3 } });
    const { key } = made.data;
    const auth = webApiKeyAuth({
      rootKey: here.svc.rootKey,
      baseUrl: here.svc.baseUrl,
      logger: silentLogger,
      ...GENEROUS,
      migrateFrom: { rootKey: old.svc.rootKey, baseUrl: old.svc.baseUrl, apiId: old.svc.apiId, intoApiId: here.svc.apiId, migrationId },
    });
    const result = await auth(new Request("http://app.test/", { headers: { authorization: `Bearer ${key}` } }));
    expect(result).not.toBeInstanceOf(Response);
    expect((result as { apiKey?: { name?: string; credits?: number } }).apiKey).toMatchObject({ name: "sdk made", credits: 2 });
    const verified = await hereSdk.keys.verifyKey({ key });
    expect(verified.data).toMatchObject({ valid: true, code: "VALID", name: "sdk made", credits: 1 });
    // The old service still holds its 3: nothing was charged there.
    expect((await oldSdk.keys.getKey({ keyId: made.data.keyId })).data.credits?.remaining).toBe(3);
  });
});

describe("apiKeyAuth({ migrateFrom, telemetry })", () => {
  it("measures the old service's calls apart (server.port): a key's first request asks it, later ones do not", async () => {
    const { meterProvider, metrics } = memoryMeter();
    const oldPort = Number(new URL(old.svc.baseUrl).port);
    /** Calls to the old service measured so far, by URL template. */
    const oldCalls = async () => {
      const points = (await metrics()).find((m) => m.descriptor.name === "http.client.request.duration")?.dataPoints ?? [];
      const out: Record<string, number> = {};
      for (const p of points) {
        if (p.attributes["server.port"] !== oldPort) continue;
        const template = String(p.attributes["url.template"]);
        out[template] = (out[template] ?? 0) + (p.value as { count: number }).count;
      }
      return out;
    };
    const app = express().get(
      "/",
      apiKeyAuth({
        rootKey: here.svc.rootKey,
        baseUrl: here.svc.baseUrl,
        logger: silentLogger,
        ...GENEROUS,
        telemetry: { meterProvider },
        migrateFrom: { rootKey: old.svc.rootKey, baseUrl: old.svc.baseUrl, apiId: old.svc.apiId, intoApiId: here.svc.apiId, migrationId },
      }),
      (_req, res) => {
        res.send("ok");
      },
    );
    const key = await old.createKey();
    expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
    const first = await oldCalls();
    expect(first["/v2/keys.verifyKey"]).toBeGreaterThanOrEqual(1);
    expect(first["/v2/keys.getKey"]).toBeGreaterThanOrEqual(1);
    for (let i = 0; i < 3; i++) expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
    expect(await oldCalls()).toEqual(first);
    await meterProvider.shutdown();
  });
});

describe("apiKeyAuth({ shadow })", () => {
  it("reports a planted disagreement after the answer, and changes no answer", async () => {
    const { key, keyId } = await old.createKeyWithId({ permissions: ["docs.read"] });
    // The key at both: imported once through a migrating app.
    expect((await request(migratingApp().app).get("/").set("X-API-Key", key)).status).toBe(200);
    const reports: unknown[] = [];
    const logger = textLogger();
    const app = express().get(
      "/",
      apiKeyAuth({
        rootKey: here.svc.rootKey,
        baseUrl: here.svc.baseUrl,
        cache: false,
        logger,
        ...GENEROUS,
        shadow: { rootKey: old.svc.rootKey, baseUrl: old.svc.baseUrl, sample: 1, onDisagreement: (report) => reports.push(report) },
      }),
      (_req, res) => {
        res.send("ok");
      },
    );
    expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 500));
    expect(reports).toEqual([]);
    // Planted: a permission only the old service's key has.
    await old.client.keys.addPermissions({ keyId, permissions: ["docs.write"] });
    const res = await request(app).get("/").set("X-API-Key", key);
    expect(res.status).toBe(200);
    await expect.poll(() => reports.length).toBe(1);
    expect(reports[0]).toMatchObject({
      fields: ["permissions"],
      primary: { valid: true, code: "VALID", permissions: ["docs.read"] },
      shadow: { valid: true, code: "VALID", keyId, permissions: ["docs.read", "docs.write"] },
    });
    // A key only the primary knows: the shadow says NOT_FOUND, the answer stays 200.
    const onlyHere = await here.createKey();
    expect((await request(app).get("/").set("X-API-Key", onlyHere)).status).toBe(200);
    await expect.poll(() => reports.length).toBe(2);
    expect(reports[1]).toMatchObject({ fields: ["valid", "code"], primary: { code: "VALID" }, shadow: { code: "NOT_FOUND" } });
    expect(logger.lines.some((l) => l.includes("the shadow key service disagrees"))).toBe(true);
    const all = logger.lines.join("\n");
    for (const secret of secretsOf(key, onlyHere)) expect(all).not.toContain(secret);
  });

  it("with telemetry, counts each comparison by outcome and each disagreeing field (OpenTelemetry)", async () => {
    const { meterProvider, metrics } = memoryMeter();
    const { key, keyId } = await old.createKeyWithId({ permissions: ["docs.read"] });
    expect((await request(migratingApp().app).get("/").set("X-API-Key", key)).status).toBe(200);
    const onlyHere = await here.createKey();
    const refused = await refusedUrl();
    const app = (shadowUrl: string) =>
      express().get(
        "/",
        apiKeyAuth({
          rootKey: here.svc.rootKey,
          baseUrl: here.svc.baseUrl,
          cache: false,
          logger: silentLogger,
          ...GENEROUS,
          telemetry: { meterProvider },
          shadow: { rootKey: old.svc.rootKey, baseUrl: shadowUrl, sample: 1 },
        }),
        (_req, res) => {
          res.send("ok");
        },
      );
    const counted = async () => {
      const all = await metrics();
      const points = (name: string, attribute: string) =>
        Object.fromEntries(
          (all.find((m) => m.descriptor.name === name)?.dataPoints ?? []).map((p) => [String(p.attributes[attribute]), p.value]),
        );
      return {
        comparisons: points("keyguard.shadow.comparisons", "keyguard.shadow.outcome"),
        disagreements: points("keyguard.shadow.disagreements", "keyguard.shadow.field"),
      };
    };
    const agreeing = app(old.svc.baseUrl);
    // Agrees; then a planted permission only the old service's key has; then a key only here (valid and code differ).
    expect((await request(agreeing).get("/").set("X-API-Key", key)).status).toBe(200);
    await expect.poll(async () => (await counted()).comparisons.agreed).toBe(1);
    await old.client.keys.addPermissions({ keyId, permissions: ["docs.write"] });
    expect((await request(agreeing).get("/").set("X-API-Key", key)).status).toBe(200);
    expect((await request(agreeing).get("/").set("X-API-Key", onlyHere)).status).toBe(200);
    // An unreachable shadow: a failed comparison, the answer unchanged.
    expect((await request(app(refused)).get("/").set("X-API-Key", key)).status).toBe(200);
    await expect
      .poll(counted)
      .toEqual({ comparisons: { agreed: 1, disagreed: 2, failed: 1 }, disagreements: { permissions: 1, valid: 1, code: 1 } });
    await meterProvider.shutdown();
  });

  it("a shadow that cannot be reached changes nothing; sample 0 sends nothing", async () => {
    const key = await here.createKey();
    const reports: unknown[] = [];
    const refused = await refusedUrl();
    const app = (sample: number) =>
      express().get(
        "/",
        apiKeyAuth({
          rootKey: here.svc.rootKey,
          baseUrl: here.svc.baseUrl,
          cache: false,
          logger: textLogger(),
          ...GENEROUS,
          shadow: { rootKey: "root_x", baseUrl: refused, sample, onDisagreement: (r) => reports.push(r) },
        }),
        (_req, res) => {
          res.send("ok");
        },
      );
    expect((await request(app(1)).get("/").set("X-API-Key", key)).status).toBe(200);
    expect((await request(app(0)).get("/").set("X-API-Key", key)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    expect(reports).toEqual([]);
  });
});
