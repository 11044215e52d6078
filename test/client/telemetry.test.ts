// OpenTelemetry for the calls to the key service, with the real SDK's in-memory exporters and the
// real local key service on port 0: a CLIENT span and a http.client.request.duration sample per
// HTTP request (retries included), none for a cached answer, error spans for a 503 and a refused
// connection, the semantic conventions' names, and neither the key nor the root key anywhere.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { context, metrics, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type HistogramMetricData,
} from "@opentelemetry/sdk-metrics";
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
  METRIC_HTTP_CLIENT_REQUEST_DURATION,
} from "@opentelemetry/semantic-conventions";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import request from "supertest";
import { apiKeyAuth, ConfigError, silentLogger } from "keyguard";
import { createClient, KeyServiceConfigError } from "keyguard/client";
import { createTelemetry, DURATION_BUCKETS } from "../../src/client/telemetry";
import { refusedUrl } from "../support/loopback-ports";
import { recordingLogger, startService, type ServiceFixture } from "../middleware/helpers";
import { GENEROUS } from "../support/time-limits";

let fx: ServiceFixture;
beforeAll(async () => {
  fx = await startService();
});
afterAll(() => fx.close());
afterEach(() => fx.svc.service.setUnavailable(false));

/** A tracer and a meter provider of the SDK, exporting to memory. */
function otel() {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const exported = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const meterProvider = new MeterProvider({
    readers: [new PeriodicExportingMetricReader({ exporter: exported, exportIntervalMillis: 60_000 })],
  });
  return {
    tracerProvider,
    meterProvider,
    /** The `telemetry` option. */
    providers: { tracerProvider, meterProvider },
    spans: () => spans.getFinishedSpans(),
    /** The duration histogram's data points, after a collection. */
    async durations() {
      await meterProvider.forceFlush();
      const last = exported.getMetrics().at(-1);
      const all = last?.scopeMetrics.flatMap((s) => s.metrics) ?? [];
      return all.filter((m): m is HistogramMetricData => m.descriptor.name === METRIC_HTTP_CLIENT_REQUEST_DURATION);
    },
    /** Everything exported, as text. */
    async dump() {
      await meterProvider.forceFlush();
      const spanText = spans
        .getFinishedSpans()
        .map((s) => JSON.stringify({ name: s.name, attributes: s.attributes, status: s.status, events: s.events, links: s.links }));
      return `${spanText.join("\n")}\n${JSON.stringify(exported.getMetrics())}`;
    },
  };
}

const verifySpans = (spans: readonly ReadableSpan[]) => spans.filter((s) => s.name === "POST /v2/keys.verifyKey");

describe("client telemetry", () => {
  it("a CLIENT span per call, named and described by the HTTP client conventions, with the keyId and the code", async () => {
    const o = otel();
    const { key, keyId } = await fx.createKeyWithId();
    const client = createClient({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, logger: silentLogger, telemetry: o.providers });
    await client.keys.verifyKey({ key });
    const [span, ...more] = o.spans();
    expect(more).toEqual([]);
    expect(span!.name).toBe("POST /v2/keys.verifyKey");
    expect(span!.kind).toBe(SpanKind.CLIENT);
    expect(span!.status.code).toBe(SpanStatusCode.UNSET);
    const { port, hostname } = new URL(fx.svc.baseUrl);
    expect(span!.attributes).toEqual({
      [ATTR_HTTP_REQUEST_METHOD]: "POST",
      [ATTR_SERVER_ADDRESS]: hostname,
      [ATTR_SERVER_PORT]: Number(port),
      [ATTR_URL_FULL]: `${fx.svc.baseUrl}/v2/keys.verifyKey`,
      "url.template": "/v2/keys.verifyKey",
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
      "keyguard.key.id": keyId,
      "keyguard.verification.code": "VALID",
    });
  });

  it("a rejected key: the service's code, and no keyId for an unknown key", async () => {
    const o = otel();
    const client = createClient({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, logger: silentLogger, telemetry: o.providers });
    await client.keys.verifyKey({ key: "sk_unknown_key_for_the_span_test" });
    const [span] = o.spans();
    expect(span!.attributes["keyguard.verification.code"]).toBe("NOT_FOUND");
    expect(span!.attributes).not.toHaveProperty("keyguard.key.id");
    // A 200 answer: not an error for the HTTP call.
    expect(span!.status.code).toBe(SpanStatusCode.UNSET);
    expect(span!.attributes).not.toHaveProperty(ATTR_ERROR_TYPE);
  });

  it("the duration histogram: seconds, the conventions' buckets, the same attributes without the URL", async () => {
    const o = otel();
    const key = await fx.createKey();
    const client = createClient({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, logger: silentLogger, telemetry: o.providers });
    await client.keys.verifyKey({ key });
    await client.keys.verifyKey({ key });
    const [histogram, ...others] = await o.durations();
    expect(others).toEqual([]);
    expect(histogram!.descriptor.unit).toBe("s");
    const [point, ...morePoints] = histogram!.dataPoints;
    expect(morePoints).toEqual([]);
    expect(point!.attributes).toEqual({
      [ATTR_HTTP_REQUEST_METHOD]: "POST",
      [ATTR_SERVER_ADDRESS]: new URL(fx.svc.baseUrl).hostname,
      [ATTR_SERVER_PORT]: Number(new URL(fx.svc.baseUrl).port),
      "url.template": "/v2/keys.verifyKey",
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
    });
    expect(point!.value.count).toBe(2);
    expect(point!.value.buckets.boundaries).toEqual([...DURATION_BUCKETS]);
    expect(DURATION_BUCKETS).toEqual([0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]);
    // Seconds: a loopback call takes well under 10 s and more than 0.
    expect(point!.value.sum).toBeGreaterThan(0);
    expect(point!.value.sum).toBeLessThan(20);
  });

  it("a 503: one error span per attempt, error.type the status, resend_count on the retry", async () => {
    const o = otel();
    fx.svc.service.setUnavailable({ retryAfter: 0 });
    const client = createClient({
      rootKey: fx.svc.rootKey,
      baseUrl: fx.svc.baseUrl,
      logger: silentLogger,
      telemetry: o.providers,
      retry: { attempts: 2, initialDelay: 1, maxDelay: 1 },
    });
    await expect(client.keys.verifyKey({ key: "sk_whatever_503" })).rejects.toMatchObject({ status: 503 });
    const spans = o.spans();
    expect(spans).toHaveLength(2);
    for (const span of spans) {
      expect(span.status.code).toBe(SpanStatusCode.ERROR);
      expect(span.attributes[ATTR_ERROR_TYPE]).toBe("503");
      expect(span.attributes[ATTR_HTTP_RESPONSE_STATUS_CODE]).toBe(503);
      expect(span.attributes).not.toHaveProperty("keyguard.verification.code");
    }
    expect(spans[0]!.attributes).not.toHaveProperty("http.request.resend_count");
    expect(spans[1]!.attributes["http.request.resend_count"]).toBe(1);
    const [histogram] = await o.durations();
    expect(histogram!.dataPoints.map((p) => [p.attributes[ATTR_ERROR_TYPE], p.value.count])).toEqual([["503", 2]]);
  });

  it("a refused connection: an error span without a status, error.type the client's error code", async () => {
    const o = otel();
    const baseUrl = await refusedUrl();
    const client = createClient({ rootKey: "root_for_refused", baseUrl, logger: silentLogger, telemetry: o.providers, retry: false });
    await expect(client.keys.verifyKey({ key: "sk_whatever_refused" })).rejects.toMatchObject({ code: "KEY_SERVICE_NETWORK_ERROR" });
    const [span] = o.spans();
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
    expect(span!.attributes[ATTR_ERROR_TYPE]).toBe("KEY_SERVICE_NETWORK_ERROR");
    expect(span!.attributes).not.toHaveProperty(ATTR_HTTP_RESPONSE_STATUS_CODE);
    expect(span!.attributes[ATTR_SERVER_PORT]).toBe(Number(new URL(baseUrl).port));
  });

  it("every operation gets its span (createKey, getKey), named by its path", async () => {
    const o = otel();
    const client = createClient({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, logger: silentLogger, telemetry: o.providers });
    const created = await client.keys.createKey({ apiId: fx.svc.apiId });
    await client.keys.getKey({ keyId: created.keyId });
    expect(o.spans().map((s) => s.name)).toEqual(["POST /v2/keys.createKey", "POST /v2/keys.getKey"]);
    // keyguard's attributes are for verifications only.
    expect(o.spans().every((s) => !("keyguard.key.id" in s.attributes))).toBe(true);
  });

  it("neither the key nor the root key appears in any span or metric", async () => {
    const o = otel();
    const key = await fx.createKey();
    const client = createClient({
      rootKey: fx.svc.rootKey,
      baseUrl: fx.svc.baseUrl,
      logger: silentLogger,
      telemetry: o.providers,
      retry: false,
    });
    const unknown = `${key.slice(0, -4)}zzzz`;
    await client.keys.verifyKey({ key });
    await client.keys.verifyKey({ key: unknown });
    fx.svc.service.setUnavailable({ retryAfter: 0 });
    await expect(client.keys.verifyKey({ key })).rejects.toMatchObject({ status: 503 });
    fx.svc.service.setUnavailable(false);
    const refused = createClient({
      rootKey: fx.svc.rootKey,
      baseUrl: await refusedUrl(),
      logger: silentLogger,
      telemetry: o.providers,
      retry: false,
    });
    await expect(refused.keys.verifyKey({ key })).rejects.toMatchObject({ code: "KEY_SERVICE_NETWORK_ERROR" });
    const dump = await o.dump();
    expect(o.spans()).toHaveLength(4);
    expect(dump).toContain("keyguard.key.id");
    for (const secret of [key, unknown, fx.svc.rootKey]) expect(dump).not.toContain(secret);
  });

  it("telemetry: true uses the global providers (what NodeSDK registers), looked up at the first call", async () => {
    const o = otel();
    const client = createClient({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, logger: silentLogger, telemetry: true });
    // Registered after the client was created (and @opentelemetry/api loaded), as an app may do.
    await new Promise((resolve) => setTimeout(resolve, 50));
    trace.setGlobalTracerProvider(o.tracerProvider);
    metrics.setGlobalMeterProvider(o.meterProvider);
    try {
      await client.keys.verifyKey({ key: await fx.createKey() });
      expect(verifySpans(o.spans())).toHaveLength(1);
      expect((await o.durations())[0]!.dataPoints[0]!.value.count).toBe(1);
    } finally {
      trace.disable();
      metrics.disable();
    }
  });

  it("the span is a child of the active span, and the active span while the HTTP request is sent", async () => {
    const o = otel();
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    try {
      const seenByFetch: (string | undefined)[] = [];
      const client = createClient({
        rootKey: fx.svc.rootKey,
        baseUrl: fx.svc.baseUrl,
        logger: silentLogger,
        telemetry: o.providers,
        // Stands for a lower-level HTTP instrumentation: what is active when the request goes out.
        fetch: (input, init) => {
          seenByFetch.push(trace.getActiveSpan()?.spanContext().spanId);
          return fetch(input, init);
        },
      });
      const parent = o.tracerProvider.getTracer("app").startSpan("GET /orders");
      await context.with(trace.setSpan(context.active(), parent), () => client.keys.verifyKey({ key: "sk_parent_test" }));
      parent.end();
      const ours = verifySpans(o.spans())[0]!;
      expect(ours.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
      expect(ours.spanContext().traceId).toBe(parent.spanContext().traceId);
      expect(seenByFetch).toEqual([ours.spanContext().spanId]);
    } finally {
      context.disable();
    }
  });

  it("off by default: no telemetry object and @opentelemetry/api is never imported", () => {
    let loads = 0;
    const load = async () => {
      loads++;
      return {};
    };
    expect(createTelemetry(undefined, fx.svc.baseUrl, silentLogger, load)).toBeUndefined();
    expect(loads).toBe(0);
  });

  it("telemetry.api: the module given is used, and nothing is imported (code bundled for Workers)", async () => {
    const o = otel();
    let loads = 0;
    const load = async () => {
      loads++;
      throw new Error("not to be imported");
    };
    const api = await import("@opentelemetry/api");
    const telemetry = createTelemetry({ tracerProvider: o.tracerProvider, api }, fx.svc.baseUrl, silentLogger, load)!;
    const describe = () => ({ status: 200, errorType: undefined, data: undefined });
    expect(await telemetry.attempt("keys.getKey", 1, async () => "done", describe)).toBe("done");
    expect(loads).toBe(0);
    expect(o.spans().map((span) => span.name)).toEqual(["POST /v2/keys.getKey"]);
    expect(() => createClient({ rootKey: "root_x", baseUrl: "http://127.0.0.1:1", telemetry: { api: {} } })).toThrow(
      /^createClient: invalid option telemetry\.api = .*Pass the @opentelemetry\/api module/,
    );
  });

  it("without @opentelemetry/api installed: one error naming the package, and the calls still work", async () => {
    const logger = recordingLogger();
    const missing = Object.assign(new Error("Cannot find package '@opentelemetry/api'"), { code: "ERR_MODULE_NOT_FOUND" });
    const telemetry = createTelemetry({}, fx.svc.baseUrl, logger, () => Promise.reject(missing))!;
    let runs = 0;
    const run = async () => ++runs;
    const describe = () => ({ status: 200, errorType: undefined, data: undefined });
    expect(await telemetry.attempt("keys.verifyKey", 1, run, describe)).toBe(1);
    expect(await telemetry.attempt("keys.verifyKey", 1, run, describe)).toBe(2);
    expect(logger.entries).toEqual([
      {
        level: "error",
        fields: { package: "@opentelemetry/api", code: "ERR_MODULE_NOT_FOUND" },
        message: expect.stringContaining("npm install @opentelemetry/api"),
      },
    ]);
  });

  it("a meter that throws changes no call's result, ends each span once, and is logged once", async () => {
    const o = otel();
    const throwingMeter = {
      getMeter: () => ({
        createHistogram: () => ({
          record: () => {
            throw new TypeError("exporter broken");
          },
        }),
      }),
    };
    const logger = recordingLogger();
    const client = createClient({
      baseUrl: fx.svc.baseUrl,
      rootKey: fx.svc.rootKey,
      retry: false,
      logger,
      telemetry: { tracerProvider: o.tracerProvider, meterProvider: throwingMeter as never },
    });
    const key = (await client.keys.createKey({ apiId: fx.svc.apiId })).key;
    for (let i = 0; i < 3; i++) expect(await client.keys.verifyKey({ key })).toMatchObject({ valid: true });
    // A failing call keeps its own error, not the meter's.
    fx.svc.service.setUnavailable(true);
    await expect(client.keys.verifyKey({ key })).rejects.toMatchObject({ status: 503 });
    expect(verifySpans(o.spans())).toHaveLength(4);
    expect(logger.entries).toEqual([
      { level: "error", fields: { error: "TypeError" }, message: expect.stringContaining("tracer or meter threw") },
    ]);
  });

  it("a bad telemetry option is a config error naming it", () => {
    const base = { rootKey: "root_x", baseUrl: "http://127.0.0.1:1" };
    expect(() => createClient({ ...base, telemetry: "yes" as never })).toThrow(KeyServiceConfigError);
    expect(() => createClient({ ...base, telemetry: { tracerProvider: {} as never } })).toThrow(
      /telemetry\.tracerProvider.*TracerProvider/,
    );
    expect(() => createClient({ ...base, telemetry: { meterProvider: 1 as never } })).toThrow(/telemetry\.meterProvider/);
    expect(() => createClient({ ...base, telemetry: { tracer: {} } as never })).toThrow(
      "createClient: unknown option telemetry.tracer; the options are telemetry.tracerProvider, telemetry.meterProvider, telemetry.api.",
    );
  });
});

describe("scraped by Prometheus", () => {
  it("the duration histogram reads as http_client_request_duration (unit s) with the advised buckets", async () => {
    // The SDK's Prometheus exporter as the meter provider's reader, served on a loopback port of ours.
    const exporter = new PrometheusExporter({ preventServerStart: true });
    const meterProvider = new MeterProvider({ readers: [exporter] });
    const server = createServer((req, res) => exporter.getMetricsRequestHandler(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const key = await fx.createKey();
      const app = express().get(
        "/",
        apiKeyAuth({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, logger: silentLogger, ...GENEROUS, telemetry: { meterProvider } }),
        (_req, res) => {
          res.send("ok");
        },
      );
      for (let i = 0; i < 3; i++) expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
      const scrape = await (await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`)).text();
      const lines = scrape.split("\n").filter((l) => l.startsWith("http_client_request_duration_"));
      const { hostname, port } = new URL(fx.svc.baseUrl);
      const labels = `http_request_method="POST",server_address="${hostname}",server_port="${port}",url_template="/v2/keys.verifyKey",http_response_status_code="200",otel_scope_name="keyguard"`;
      // One call (the two later requests were cache hits): count 1, in buckets from 0.005 s to 10 s.
      expect(lines).toContain(`http_client_request_duration_count{${labels}} 1`);
      const les = lines.filter((l) => l.includes("_bucket{")).map((l) => /le="([^"]+)"/.exec(l)![1]);
      expect(les).toEqual([...DURATION_BUCKETS.map(String), "+Inf"]);
      expect(scrape).toContain("# UNIT http_client_request_duration s");
      expect(scrape).toContain("# TYPE http_client_request_duration histogram");
      for (const secret of [key, fx.svc.rootKey]) expect(scrape).not.toContain(secret);
    } finally {
      await new Promise((resolve) => server.close(resolve));
      await meterProvider.shutdown();
    }
  });
});

describe("apiKeyAuth({ telemetry })", () => {
  it("a span for a miss, none for the cache hit after it", async () => {
    const o = otel();
    const { key, keyId } = await fx.createKeyWithId();
    const app = express().get(
      "/",
      apiKeyAuth({ rootKey: fx.svc.rootKey, baseUrl: fx.svc.baseUrl, logger: silentLogger, ...GENEROUS, telemetry: o.providers }),
      (_req, res) => {
        res.send("ok");
      },
    );
    expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
    expect((await request(app).get("/").set("X-API-Key", key)).status).toBe(200);
    const spans = o.spans();
    expect(spans).toHaveLength(1);
    expect(spans[0]!.attributes).toMatchObject({ "keyguard.key.id": keyId, "keyguard.verification.code": "VALID" });
    const dump = await o.dump();
    for (const secret of [key, fx.svc.rootKey]) expect(dump).not.toContain(secret);
  });

  it("the service unavailable: 503 and an error span per attempt", async () => {
    const o = otel();
    fx.svc.service.setUnavailable({ retryAfter: 0 });
    const app = express().get(
      "/",
      apiKeyAuth({
        rootKey: fx.svc.rootKey,
        baseUrl: fx.svc.baseUrl,
        logger: silentLogger,
        ...GENEROUS,
        telemetry: o.providers,
        retry: { initialDelay: 1, maxDelay: 1 },
      }),
      (_req, res) => {
        res.send("ok");
      },
    );
    expect((await request(app).get("/").set("X-API-Key", "sk_anything_503")).status).toBe(503);
    expect(o.spans().map((s) => [s.attributes[ATTR_ERROR_TYPE], s.status.code])).toEqual([
      ["503", SpanStatusCode.ERROR],
      ["503", SpanStatusCode.ERROR],
    ]);
  });

  it("with a client of your own, telemetry belongs on createClient()", () => {
    const client = createClient({ rootKey: "root_x", baseUrl: "http://127.0.0.1:1", logger: silentLogger });
    expect(() => apiKeyAuth({ client, telemetry: true })).toThrow(ConfigError);
    expect(() => apiKeyAuth({ client, telemetry: true })).toThrow(/createClient\(\{ telemetry \}\)/);
    expect(() => apiKeyAuth({ rootKey: "root_x", telemetry: 3 as never })).toThrow(/telemetry/);
  });
});
