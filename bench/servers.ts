// Child process for the benchmarks: `service` starts the local key service (plus a bare JSON
// route and a server that never answers); `apps` starts the protected and unprotected apps;
// `frameworks` the other frameworks' apps, bare and protected (frameworks.ts).
// BENCH_METRICS=1: the service serves its Prometheus metrics. BENCH_SERVICE_DATA=<file>: the service
// keeps its state in that SQLite file; BENCH_EVENTS=off: its store drops verification events (the
// baseline of the events group).
// Prints one JSON line with the URLs, then serves until killed.

import net from "node:net";
import type { AddressInfo } from "node:net";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import express from "express";
import { apiKeyAuth, silentLogger, type AuthDecision } from "keyguard";
import { sqliteStorage, startLocalKeyService, type Storage } from "keyguard/server";
import { startFrameworks, type FrameworkConfig } from "./frameworks";
import { sdkMiddleware } from "./sdk-middleware";
import { withAppend } from "./storage-wrap";
import { bareVerifyServer } from "./bare-http";
import { startProfile, stopProfile } from "./step-profile";

export interface ServiceInfo {
  baseUrl: string;
  /** Answers this process's `process.cpuUsage()`. */
  cpu: string;
  rootKey: string;
  apiId: string;
  bareUrl: string;
  /** A bare node:http server parsing the same JSON body and answering a verify-shaped JSON: this runtime's limit. */
  bareHttpUrl: string;
  /** POST …/start starts a CPU profile of this process; POST …/stop answers its shares by pipeline step. */
  profileUrl: string;
  hangUrl: string;
}

export interface AppsConfig {
  baseUrl: string;
  rootKey: string;
  downUrl: string;
  hangUrl: string;
  deadline: number;
}

const listen = (server: net.Server): Promise<string> =>
  new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));

const serve = (app: express.Express) => listen(app.listen(0, "127.0.0.1") as unknown as net.Server);

/** The store of BENCH_SERVICE_DATA, dropping verification events with BENCH_EVENTS=off. */
async function benchStore(): Promise<Storage | undefined> {
  const file = process.env.BENCH_SERVICE_DATA;
  if (!file) return undefined;
  const store = await sqliteStorage(file);
  if (process.env.BENCH_EVENTS !== "off") return store;
  return withAppend(store, async () => undefined);
}

async function startService(): Promise<ServiceInfo> {
  const store = await benchStore();
  const svc = await startLocalKeyService({
    port: 0,
    ...(store && { storage: store }),
    ...(process.env.BENCH_METRICS === "1" && { metrics: true }),
  });
  const bare = express();
  bare.use(express.json());
  bare.post("/json", (req, res) => {
    res.json({ meta: { requestId: "req_bench" }, data: { valid: typeof req.body?.key === "string", code: "VALID" } });
  });
  const bareHttp = bareVerifyServer();
  const hang = net.createServer(() => {
    // Accept the connection and never answer.
  });
  return {
    baseUrl: svc.baseUrl,
    cpu: `${await serve(cpuApp())}/cpu`,
    rootKey: svc.rootKey,
    apiId: svc.apiId,
    bareUrl: await serve(bare),
    bareHttpUrl: await listen(bareHttp),
    profileUrl: `${await serve(cpuApp())}/profile`,
    hangUrl: await listen(hang),
  };
}

/** This process's CPU time, read by the runner before and after each load run. */
function cpuApp(): express.Express {
  const control = express();
  control.get("/cpu", (_req, res) => {
    res.json(process.cpuUsage());
  });
  control.post("/profile/start", (_req, res, next) => {
    startProfile().then(() => res.json({ ok: true }), next);
  });
  control.post("/profile/stop", (_req, res, next) => {
    stopProfile().then((r) => res.json(r), next);
  });
  return control;
}

/**
 * What the observed app turns on: an onDecision hook that only counts (the cost measured is
 * keyguard's, not a hook's own work) and OpenTelemetry with the real SDK, exporting to memory
 * (spans and samples come from calls to the service only: a few per cache TTL).
 */
function observability() {
  const counts = { decisions: 0, fromCache: 0 };
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())] });
  const reader = new PeriodicExportingMetricReader({
    exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
    exportIntervalMillis: 60_000,
  });
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    onDecision: (decision: AuthDecision) => {
      counts.decisions++;
      if (decision.source === "cache") counts.fromCache++;
    },
    telemetry: { tracerProvider, meterProvider },
  };
}

async function startApps(config: AppsConfig): Promise<Record<string, string>> {
  const app = (middleware?: express.RequestHandler) => {
    const a = express();
    if (middleware) a.use(middleware);
    a.get("/r", (_req, res) => {
      res.json({ ok: true });
    });
    return serve(a);
  };
  const common = { rootKey: config.rootKey, logger: silentLogger, deadline: config.deadline };
  return {
    cpu: `${await serve(cpuApp())}/cpu`,
    plain: await app(),
    noop: await app((_req, _res, next) => next()),
    keyguard: await app(apiKeyAuth({ ...common, baseUrl: config.baseUrl })),
    keyguardObserved: await app(apiKeyAuth({ ...common, baseUrl: config.baseUrl, ...observability() })),
    // The same as `keyguard`: how far two identical sides differ in this run.
    keyguardTwin: await app(apiKeyAuth({ ...common, baseUrl: config.baseUrl })),
    sdk: await app(sdkMiddleware({ rootKey: config.rootKey, baseUrl: config.baseUrl })),
    keyguardDown: await app(apiKeyAuth({ ...common, baseUrl: config.downUrl })),
    sdkDown: await app(sdkMiddleware({ rootKey: config.rootKey, baseUrl: config.downUrl })),
    keyguardHang: await app(apiKeyAuth({ ...common, baseUrl: config.hangUrl })),
  };
}

// Exit (rather than die) on the runner's SIGTERM, so a `--cpu-prof` profile gets written.
process.on("SIGTERM", () => process.exit(0));

/** The frameworks' apps, with this process's CPU time beside them. */
async function startFrameworkApps(config: FrameworkConfig): Promise<Record<string, string>> {
  return { cpu: `${await serve(cpuApp())}/cpu`, ...(await startFrameworks(config)) };
}

const mode = process.argv[2];
const config = JSON.parse(process.env.BENCH_CONFIG ?? "{}") as AppsConfig;
const ready = mode === "service" ? startService() : mode === "frameworks" ? startFrameworkApps(config) : startApps(config);
ready.then(
  (info) => process.stdout.write(`${JSON.stringify(info)}\n`),
  (error: unknown) => {
    process.stderr.write(`bench servers (${mode}) failed: ${String(error)}\n`);
    process.exit(1);
  },
);
