// The key service's Prometheus metrics: scraped over HTTP from a service on port 0 and read with a
// real text-format parser (prom2javascript), with exact counts after scripted calls (failures and
// an injected store error included) on every store (memory, SQLite, PostgreSQL + Redis), and a real
// PostgreSQL outage counted; off by default (an unknown route, prom-client never loaded); the
// optional bearer token; the options and the CLI flags.
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { getMetricsFromStream, type PromHistogramData, type PromMetrics } from "prom2javascript";
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import {
  createLocalKeyService,
  LocalServiceConfigError,
  memoryStorage,
  postgresStorage,
  sqliteStorage,
  startLocalKeyService,
  StoreUnavailableError,
  type LocalKeyServiceOptions,
  type RunningLocalKeyService,
  type Storage,
} from "keyguard/server";
import { faultyStore } from "../../support/faulty-store";
import { RunAgain } from "../../../src/server/storage/seam";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";
import { startTcpProxy } from "../../support/tcp-proxy";
import { killChildren, run, serve } from "../../cli/cli-process";
import { makeCall } from "../helpers";

const skipPg = await postgresRedisSkipReason("GET /metrics on PostgreSQL");

const running: RunningLocalKeyService[] = [];
/** Run after the services close: stores passed in, schemas, directories, proxies. */
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  killChildren();
  await Promise.all(running.splice(0).map((s) => s.close()));
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Backend {
  name: string;
  skip?: string;
  /** A fresh store of this backend, closed (and its data removed) after the test. */
  open(): Promise<Storage>;
  /** Options making the service open such a store itself (memory: none). */
  options(): LocalKeyServiceOptions;
}

const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "keyguard-metrics-store-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};
const pgNamespace = () => {
  const ns = isolatedNamespace();
  cleanups.push(() => ns.drop());
  return ns;
};

const BACKENDS: Backend[] = [
  { name: "memory", open: async () => memoryStorage(), options: () => ({}) },
  {
    name: "sqlite",
    open: async () => {
      const store = await sqliteStorage(join(tempDir(), "keys.db"));
      cleanups.push(() => store.close());
      return store;
    },
    options: () => ({ dataFile: join(tempDir(), "keys.db") }),
  },
  {
    name: "postgres",
    ...(skipPg !== undefined && { skip: skipPg }),
    open: async () => {
      const ns = pgNamespace();
      const store = await postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, redisPrefix: ns.redisPrefix });
      cleanups.push(() => store.close());
      return store;
    },
    options: () => ({ postgres: POSTGRES_URL, redis: REDIS_URL, postgresSchema: pgNamespace().schema }),
  },
];

async function startService(options: LocalKeyServiceOptions): Promise<RunningLocalKeyService> {
  const service = await startLocalKeyService({ logger: silentLogger, ...options });
  running.push(service);
  return service;
}

async function scrapeText(baseUrl: string, token?: string): Promise<Response> {
  return fetch(`${baseUrl}/metrics`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
}

/**
 * A scrape, parsed. Every family appears once (twice would make Prometheus refuse the scrape). The
 * parser reads the service's families; the process metrics are left out of it, because it refuses
 * the `Nan` prom-client writes for an event-loop gauge without samples (Prometheus reads it).
 */
async function scrape(baseUrl: string, token?: string): Promise<PromMetrics> {
  const res = await scrapeText(baseUrl, token);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  const families = [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!);
  expect(new Set(families).size).toBe(families.length);
  const own = text.split(/^(?=# HELP )/m).filter((block) => block.startsWith("# HELP keyguard_"));
  expect(own.length).toBe(7);
  return getMetricsFromStream(Readable.from([own.join("")]));
}

/** Every series of a counter, as `label=value,…` → value. */
function counter(metrics: PromMetrics, name: string): Record<string, number> {
  const family = metrics[name];
  if (!family) return {};
  expect(family.type).toBe("counter");
  const out: Record<string, number> = {};
  for (const d of family.data as Array<{ labels: Record<string, string>; value: number }>) {
    out[
      Object.entries(d.labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(",")
    ] = d.value;
  }
  return out;
}

/** Every series of a histogram by its one label's value, checked for consistency. */
function histogram(metrics: PromMetrics, name: string, label: string): Record<string, PromHistogramData> {
  const family = metrics[name]!;
  expect(family.type).toBe("histogram");
  const out: Record<string, PromHistogramData> = {};
  for (const d of family.data as PromHistogramData[]) {
    const bounds = Object.keys(d.buckets)
      .filter((b) => b !== "+Inf")
      .map(Number)
      .sort((a, b) => a - b);
    const counts = bounds.map((b) => d.buckets[String(b)]!);
    for (let i = 1; i < counts.length; i++) expect(counts[i]).toBeGreaterThanOrEqual(counts[i - 1]!);
    expect(d.buckets["+Inf"]).toBe(d.count);
    expect(d.sum).toBeGreaterThanOrEqual(0);
    out[d.labels[label]!] = d;
  }
  return out;
}

const counts = (h: Record<string, PromHistogramData>) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k, v.count]));

/** `inner`, whose next call named by `failNext(call)` fails once as unavailable (before reaching it). */
function storeFailingOnce(inner: Storage) {
  let next: string | undefined;
  const store = faultyStore(inner, (call) => {
    if (call !== next) return undefined;
    next = undefined;
    return new StoreUnavailableError("test: the store is down");
  });
  return { store, failNext: (call: string) => void (next = call) };
}

describe.each(BACKENDS)("GET /metrics on $name", (backend) => {
  it.skipIf(backend.skip !== undefined)(
    "counts requests, verification outcomes, latencies and store calls and errors, exactly",
    async () => {
      const { store, failNext } = storeFailingOnce(await backend.open());
      const service = await startService({ storage: store, metrics: { processMetrics: false } });
      const call = makeCall(service.baseUrl, service.rootKey);
      const { apiId } = service;
      const k1 = (await call("keys.createKey", { apiId })).body.data.key as string;
      const k2 = (await call("keys.createKey", { apiId, enabled: false })).body.data.key as string;
      for (const key of [k1, k1, k1, "nope_1", "nope_2", k2]) expect((await call("keys.verifyKey", { key })).status).toBe(200);
      expect((await call("keys.verifyKey", {})).status).toBe(400);
      expect((await call("keys.verifyKey", { key: k1 }, "not_the_root_key")).status).toBe(401);
      failNext("keyByHash");
      expect((await call("keys.verifyKey", { key: k1 })).status).toBe(503);
      expect((await fetch(`${service.baseUrl}/v2/liveness`)).status).toBe(200);
      expect((await fetch(`${service.baseUrl}/nowhere`)).status).toBe(404);
      // No collision with the v2 router: /v2/metrics is no operation.
      expect((await call("metrics", {})).status).toBe(404);
      // The scrape answers GET and HEAD only, and is not counted.
      const post = await fetch(`${service.baseUrl}/metrics`, { method: "POST" });
      expect(post.status).toBe(405);
      expect(post.headers.get("allow")).toBe("GET, HEAD");

      const metrics = await scrape(service.baseUrl);
      expect(counter(metrics, "keyguard_requests_total")).toEqual({
        "operation=keys.createKey,status=200": 2,
        "operation=keys.verifyKey,status=200": 6,
        "operation=keys.verifyKey,status=400": 1,
        "operation=keys.verifyKey,status=401": 1,
        "operation=keys.verifyKey,status=503": 1,
        "operation=liveness,status=200": 1,
        "operation=unknown,status=404": 2,
      });
      expect(counts(histogram(metrics, "keyguard_request_duration_seconds", "operation"))).toEqual({
        "keys.createKey": 2,
        "keys.verifyKey": 9,
        liveness: 1,
        unknown: 2,
      });
      expect(counter(metrics, "keyguard_verifications_total")).toEqual({ "code=VALID": 3, "code=NOT_FOUND": 2, "code=DISABLED": 1 });
      expect(counter(metrics, "keyguard_store_errors_total")).toEqual({ "operation=keyByHash,kind=unavailable": 1 });
      const store_ = counts(histogram(metrics, "keyguard_store_duration_seconds", "operation"));
      // keyByHash: the 7 verifications that got past validation and the root key (the failed one included).
      expect(store_.keyByHash).toBe(7);
      // rootKeyByHash: the bootstrap, 2 createKey and the 8 verifications that got past validation.
      expect(store_.rootKeyByHash).toBe(11);
      // Transactions: the bootstrap and the 2 createKey (verifyKey runs outside any transaction).
      expect(store_.transaction).toBe(3);
      // Nothing secret: neither the root key nor any key appears in the scrape.
      const text = await (await scrapeText(service.baseUrl)).text();
      for (const secret of [service.rootKey, k1, k2]) expect(text).not.toContain(secret);
    },
  );

  it.skipIf(backend.skip !== undefined)(
    "counts a failed transaction once, where it failed, and never an operation's own refusal",
    async () => {
      const { store, failNext } = storeFailingOnce(await backend.open());
      const service = await startService({ storage: store, metrics: { processMetrics: false } });
      const call = makeCall(service.baseUrl, service.rootKey);
      failNext("transaction");
      expect((await call("keys.createKey", { apiId: service.apiId })).status).toBe(503);
      failNext("put");
      expect((await call("keys.createKey", { apiId: service.apiId })).status).toBe(503);
      // Refused by the operation (no such API): a 404, no store error.
      expect((await call("keys.createKey", { apiId: "api_none" })).status).toBe(404);
      const metrics = await scrape(service.baseUrl);
      expect(counter(metrics, "keyguard_store_errors_total")).toEqual({
        "operation=transaction,kind=unavailable": 1,
        "operation=put,kind=unavailable": 1,
      });
      expect(counter(metrics, "keyguard_requests_total")).toEqual({
        "operation=keys.createKey,status=503": 2,
        "operation=keys.createKey,status=404": 1,
      });
    },
  );

  it.skipIf(backend.skip !== undefined)("times the calls of the store the service opens itself (its own options)", async () => {
    const service = await startService({ ...backend.options(), metrics: { processMetrics: false } });
    const call = makeCall(service.baseUrl, service.rootKey);
    const { key } = (await call("keys.createKey", { apiId: service.apiId })).body.data as { key: string };
    expect((await call("keys.verifyKey", { key })).body.data.code).toBe("VALID");
    await service.service.flushVerifications();
    const metrics = await scrape(service.baseUrl);
    const store = histogram(metrics, "keyguard_store_duration_seconds", "operation");
    expect(store.keyByHash?.count).toBe(1);
    expect(store.transaction?.count).toBe(2);
    expect(store.keyByHash!.sum).toBeGreaterThan(0);
    // The verification's event, written through the same seam (the timer may have written it first).
    expect(store.appendVerifications?.count).toBeGreaterThanOrEqual(1);
    expect(counter(metrics, "keyguard_store_errors_total")).toEqual({});
  });
});

describe.skipIf(skipPg !== undefined)("GET /metrics on PostgreSQL's optimistic writes", () => {
  it("an optimistic attempt given up is no store error: the call runs again as a transaction and answers 200", async () => {
    const inner = await BACKENDS.find((b) => b.name === "postgres")!.open();
    // The first put of an optimistic createKey gives its attempt up, as a call the store cannot
    // defer does (injected: the real ones are never reached by createKey).
    let armed = false;
    let givenUp = 0;
    const store = faultyStore(inner, (call) => {
      if (!armed || call !== "put") return undefined;
      givenUp++;
      armed = false;
      return new RunAgain("test: given up");
    });
    const service = await startService({ storage: store, metrics: { processMetrics: false } });
    const puts = async () => counts(histogram(await scrape(service.baseUrl), "keyguard_store_duration_seconds", "operation")).put ?? 0;
    const putsBefore = await puts();
    armed = true;
    const call = makeCall(service.baseUrl, service.rootKey);
    const { key } = (await call("keys.createKey", { apiId: service.apiId })).body.data as { key: string };
    expect((await call("keys.verifyKey", { key })).body.data.code).toBe("VALID");
    expect(givenUp).toBe(1);
    const metrics = await scrape(service.baseUrl);
    expect(counter(metrics, "keyguard_store_errors_total")).toEqual({});
    expect(counter(metrics, "keyguard_requests_total")).toMatchObject({ "operation=keys.createKey,status=200": 1 });
    // Both attempts' puts are timed.
    expect((await puts()) - putsBefore).toBe(2);
  });
});

describe.skipIf(skipPg !== undefined)("GET /metrics through a real PostgreSQL outage", () => {
  it("counts each request the outage fails as a 503 and one store error of kind unavailable, then recovers", async () => {
    const proxy = await startTcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
    cleanups.push(() => proxy.stop());
    const postgres = new URL(POSTGRES_URL);
    postgres.port = String(proxy.port);
    const service = await startService({
      postgres: postgres.toString(),
      redis: REDIS_URL,
      postgresSchema: pgNamespace().schema,
      metrics: { processMetrics: false },
    });
    const call = makeCall(service.baseUrl, service.rootKey);
    const { key } = (await call("keys.createKey", { apiId: service.apiId })).body.data as { key: string };
    // Never verified before the outage, so not in the store's record cache (a kept key would
    // still verify while PostgreSQL is down).
    const unseen = (await call("keys.createKey", { apiId: service.apiId })).body.data.key as string;
    expect((await call("keys.verifyKey", { key })).body.data.code).toBe("VALID");
    // Its event written now: no event write can fail (and be counted) during the outage.
    await service.service.flushVerifications();
    await proxy.stop();
    for (let i = 0; i < 3; i++) expect((await call("keys.verifyKey", { key: unseen })).status).toBe(503);
    const during = await scrape(service.baseUrl);
    expect(counter(during, "keyguard_requests_total")).toMatchObject({
      "operation=keys.verifyKey,status=200": 1,
      "operation=keys.verifyKey,status=503": 3,
    });
    // Each failed request stopped at its first store call to PostgreSQL: the key's lookup (the root
    // key, read before the outage, is answered by the store's record cache). The webhook
    // dispatcher's pass (every 0.5 s) may fall in the outage too, on a busy machine: its claim is the
    // only other store call the service makes meanwhile.
    const { "operation=keyByHash,kind=unavailable": lookups, ...background } = counter(during, "keyguard_store_errors_total");
    expect(lookups).toBe(3);
    expect(Object.keys(background).filter((k) => k !== "operation=claimWebhooks,kind=unavailable")).toEqual([]);
    expect(counter(during, "keyguard_verifications_total")).toEqual({ "code=VALID": 1 });
    await proxy.start();
    let status = 0;
    for (let i = 0; i < 150 && status !== 200; i++) {
      status = (await call("keys.verifyKey", { key: unseen })).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
    const after = await scrape(service.baseUrl);
    expect(counter(after, "keyguard_verifications_total")).toEqual({ "code=VALID": 2 });
  });
});

describe("GET /metrics", () => {
  it("keeps each service's metrics apart in one process; the process metrics appear once in each", async () => {
    const [a, b] = [await startService({ metrics: true }), await startService({ metrics: true })];
    await makeCall(a.baseUrl, a.rootKey)("keys.verifyKey", { key: "nope" });
    for (let i = 0; i < 2; i++) await makeCall(b.baseUrl, b.rootKey)("keys.verifyKey", { key: "nope" });
    for (const [service, n] of [
      [a, 1],
      [b, 2],
    ] as const) {
      const text = await (await scrapeText(service.baseUrl)).text();
      const families = [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!);
      expect(families).toEqual(
        expect.arrayContaining([
          "process_cpu_user_seconds_total",
          "process_resident_memory_bytes",
          "nodejs_eventloop_lag_seconds",
          "nodejs_heap_size_used_bytes",
        ]),
      );
      const metrics = await scrape(service.baseUrl);
      expect(counter(metrics, "keyguard_verifications_total")).toEqual({ "code=NOT_FOUND": n });
    }
  });

  it("counts the keys keys.migrateKeys imports, and those it refuses as held already", async () => {
    const service = await startService({ metrics: true });
    const { migrationId } = await service.service.createKeyMigration({ algorithm: "sha256" });
    const call = makeCall(service.baseUrl, service.rootKey);
    const keys = [
      { hash: "aGFzaC1vbmUtZm9yLW1ldHJpY3MtdGVzdC0xMjM0NTY3OA==" },
      { hash: "aGFzaC10d28tZm9yLW1ldHJpY3MtdGVzdC0xMjM0NTY3OA==" },
    ];
    expect((await call("keys.migrateKeys", { migrationId, apiId: service.apiId, keys })).status).toBe(200);
    expect((await call("keys.migrateKeys", { migrationId, apiId: service.apiId, keys: keys.slice(0, 1) })).status).toBe(200);
    expect(counter(await scrape(service.baseUrl), "keyguard_key_imports_total")).toEqual({ "result=imported": 2, "result=held": 1 });
  });

  it("with a token, answers only a scrape that sends it as bearer token", async () => {
    const token = "metrics-token-0123456789";
    const service = await startService({ metrics: { token, processMetrics: false } });
    for (const authorization of [undefined, "Bearer wrong-token-0123456789", token, `Basic ${token}`]) {
      const res = await fetch(`${service.baseUrl}/metrics`, authorization === undefined ? {} : { headers: { authorization } });
      expect(res.status, authorization).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="keyguard metrics"');
      expect(await res.text()).not.toContain(token);
    }
    const metrics = await scrape(service.baseUrl, token);
    expect(metrics.keyguard_requests_total?.type).toBe("counter");
    const head = await fetch(`${service.baseUrl}/metrics`, { method: "HEAD", headers: { authorization: `Bearer ${token}` } });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
  });

  it("is served where the service is mounted", async () => {
    const { app, close } = await createLocalKeyService({ logger: silentLogger, metrics: { processMetrics: false } });
    const express = (await import("express")).default;
    const outer = express();
    outer.use("/keys", app);
    const server = outer.listen(0, "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    try {
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}/keys`;
      expect((await fetch(`${base}/v2/liveness`)).status).toBe(200);
      const metrics = await scrape(base);
      expect(counter(metrics, "keyguard_requests_total")).toEqual({ "operation=liveness,status=200": 1 });
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await close();
    }
  });
});

describe("metrics off (the default)", () => {
  it("answers /metrics as an unknown route, as before", async () => {
    const service = await startService({});
    const res = await fetch(`${service.baseUrl}/metrics`, { headers: { accept: "application/json" } });
    expect(res.status).toBe(404);
    const body = (await res.json()) as { error: { detail: string; type: string } };
    expect(body.error.detail).toBe("No operation at GET <a path of 8 characters>. Operations are POST /v2/<group>.<operation>.");
    expect(body.error.type).toMatch(/not_found/);
  });

  it("never loads prom-client (and the probe does see it when metrics are on)", async () => {
    const probe = (mode: string) =>
      new Promise<{ status: number; loaded: boolean }>((resolve, reject) => {
        const child = spawn(process.execPath, ["--import", "tsx", "test/server/http/fixtures/metrics-probe.ts", mode], {
          stdio: ["ignore", "pipe", "inherit"],
        });
        let out = "";
        child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
        child.once("error", reject);
        child.once("exit", (code) =>
          code === 0
            ? resolve(JSON.parse(out) as { status: number; loaded: boolean })
            : reject(new Error(`probe exited with ${code}: ${out}`)),
        );
      });
    expect(await probe("off")).toEqual({ status: 404, loaded: false });
    expect(await probe("on")).toEqual({ status: 200, loaded: true });
  });
});

describe("the metrics option", () => {
  it("refuses bad values with the option named, never echoing a token", async () => {
    const bad: Array<[unknown, RegExp]> = [
      ["yes", /invalid option metrics = "yes"\. Pass true, false or \{ token, processMetrics \}/],
      [{ token: "short" }, /invalid option metrics\.token = <hidden>\. Use 16\.\.512 printable characters/],
      [{ token: "has a space in it, sixteen+" }, /invalid option metrics\.token = <hidden>\./],
      [
        { tokn: "metrics-token-0123456789" },
        /unknown option metrics\.tokn \(did you mean metrics\.token\?\); the options are metrics\.token, metrics\.processMetrics\./,
      ],
      [{ processMetrics: "no" }, /invalid option metrics\.processMetrics = "no"\. Pass true or false/],
    ];
    for (const [metrics, message] of bad) {
      const err = await createLocalKeyService({ logger: silentLogger, metrics: metrics as never }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, JSON.stringify(metrics)).toBeInstanceOf(LocalServiceConfigError);
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message).not.toContain("short");
    }
  });
});

describe("keyguard serve --metrics", () => {
  it("serves /metrics, behind the token of --metrics-token-file, and says so in the banner", async () => {
    const dir = mkdtempSync(join(tmpdir(), "keyguard-metrics-"));
    try {
      const file = join(dir, "token");
      const token = "cli-metrics-token-0123456789";
      writeFileSync(file, `${token}\n`);
      chmodSync(file, 0o600);
      const served = await serve(["--port", "0", "--metrics", "--metrics-token-file", file]);
      expect(served.output).toContain(`metrics:      ${served.baseUrl}/metrics (with the metrics token as bearer token)`);
      expect(served.output).not.toContain(token);
      expect((await scrapeText(served.baseUrl)).status).toBe(401);
      await makeCall(served.baseUrl, served.rootKey!)("keys.verifyKey", { key: "nope" });
      const metrics = await scrape(served.baseUrl, token);
      expect(counter(metrics, "keyguard_verifications_total")).toEqual({ "code=NOT_FOUND": 1 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("without --metrics, /metrics is an unknown route; --metrics-token-file alone is refused", async () => {
    const served = await serve(["--port", "0"]);
    expect(served.output).not.toContain("metrics:");
    expect((await scrapeText(served.baseUrl)).status).toBe(404);
    const refused = await run(["serve", "--port", "0", "--metrics-token-file", "/nonexistent"]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain("--metrics-token-file needs --metrics.");
  });
});
