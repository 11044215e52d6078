// OpenTelemetry for the client, opt-in: a CLIENT span and a `http.client.request.duration` sample
// per HTTP request to the key service (each attempt of a call, retries included), following the
// semantic conventions for HTTP clients. `@opentelemetry/api` is an optional peer dependency,
// imported only when a client is created with `telemetry` (or passed in as `telemetry.api`);
// without it nothing is loaded or done.
//
// Attributes come from the config (method, server, URL: the base URL holds no credentials, see
// parseBaseUrl) and from the answer (status, error type, and for keys.verifyKey the keyId and the
// verification code). Never a header, a body, the root key or a caller's key.

import type * as OtelApi from "@opentelemetry/api";
import type { Logger } from "../logger";

/** What `telemetry` takes besides `true`: the providers to use instead of the global ones. */
export interface TelemetryOptions {
  /** An OpenTelemetry `TracerProvider`. Default: the global one (`trace.getTracerProvider()`), e.g. NodeSDK's. */
  tracerProvider?: { getTracer(name: string, version?: string): object };
  /** An OpenTelemetry `MeterProvider`. Default: the global one (`metrics.getMeterProvider()`). */
  meterProvider?: { getMeter(name: string, version?: string): object };
  /**
   * The `@opentelemetry/api` module (`import * as api from "@opentelemetry/api"`), for code that is
   * bundled (Cloudflare Workers, edge runtimes): the bundler then includes it because your code
   * imports it. Default: imported at run time when the client is created, by a name bundlers leave alone.
   */
  api?: object;
}

// The package's name is put together at run time, so that bundlers (esbuild, Bun, webpack) leave
// this import alone: keyguard/web and keyguard/hono bundle as they are, without @opentelemetry/api
// installed. Where the code is bundled, the module comes as `telemetry.api` instead.
const OTEL_API = ["@opentelemetry", "api"].join("/");
const importApi = (): Promise<unknown> => import(OTEL_API);

/** The parsed option: undefined = off. */
export type TelemetrySettings = Readonly<TelemetryOptions> | undefined;

type Api = typeof OtelApi;
type Attributes = OtelApi.Attributes;

/** The outcome of one attempt, as the span and the histogram describe it. */
export interface AttemptReport {
  /** The HTTP status, when an answer arrived. */
  readonly status: number | undefined;
  /** Set when the attempt failed: the status (as text) for an HTTP error, else the client's error code. */
  readonly errorType: string | undefined;
  /** The answer's data when it succeeded (keys.verifyKey: its keyId and code become span attributes). */
  readonly data: object | undefined;
}

export interface Telemetry {
  /** Runs one attempt inside a CLIENT span (active while it runs) and records its duration. */
  attempt<T>(operation: string, attemptNumber: number, run: () => Promise<T>, describe: (value: T) => AttemptReport): Promise<T>;
}

/** The tracer and meter name. */
const INSTRUMENTATION_NAME = "keyguard";
const DURATION_METRIC = "http.client.request.duration";
/** The semantic conventions' bucket advice for `http.client.request.duration`, seconds. */
export const DURATION_BUCKETS: readonly number[] = Object.freeze([
  0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
]);
/** keyguard's own span attributes (keys.verifyKey only). */
const KEY_ID_ATTRIBUTE = "keyguard.key.id";
const VERIFICATION_CODE_ATTRIBUTE = "keyguard.verification.code";

const SAFE_VALUE = /^[A-Za-z0-9_-]{1,128}$/;

interface Instruments {
  readonly api: Api;
  readonly tracer: OtelApi.Tracer;
  readonly duration: OtelApi.Histogram;
}

/** A failure that is not an attempt's outcome (thrown: the caller's abort, a config error): its code or name. */
function thrownType(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && SAFE_VALUE.test(code)) return code;
  const name = (err as { name?: unknown } | null)?.name;
  return typeof name === "string" && SAFE_VALUE.test(name) ? name : "_OTHER";
}

/** The `@opentelemetry/api` module as imported (its named exports: the default export lacks SpanKind and SpanStatusCode). */
function toApi(mod: unknown): Api {
  const api = ((mod as { trace?: unknown }).trace === undefined ? (mod as { default?: unknown }).default : mod) as Api;
  if (typeof api?.trace?.getTracerProvider !== "function") throw new Error("not the @opentelemetry/api module");
  return api;
}

/** The `@opentelemetry/api` module: the one `telemetry.api` names, else imported by `load`. */
function apiOf(settings: Readonly<TelemetryOptions>, load: () => Promise<unknown>): Promise<Api> {
  return (settings.api !== undefined ? Promise.resolve(settings.api) : load()).then(toApi);
}

/**
 * keyguard's meter from the `telemetry` providers, for counters of the middleware's own (the
 * provider as it is at this call: an SDK registered later counts from then). Undefined when
 * telemetry is off or `@opentelemetry/api` cannot be loaded (the client logs that once).
 */
export async function telemetryMeter(
  settings: TelemetrySettings,
  load: () => Promise<unknown> = importApi,
): Promise<OtelApi.Meter | undefined> {
  if (settings === undefined) return undefined;
  try {
    const api = await apiOf(settings, load);
    return ((settings.meterProvider ?? api.metrics.getMeterProvider()) as OtelApi.MeterProvider).getMeter(INSTRUMENTATION_NAME);
  } catch {
    return undefined;
  }
}

/**
 * The client's telemetry, or undefined when off. `load` imports `@opentelemetry/api` (tests inject
 * a failing one); it starts now, and the first calls wait for it. When the package is missing the
 * client logs one error and works without telemetry.
 */
export function createTelemetry(
  settings: TelemetrySettings,
  baseUrl: string,
  logger: Logger,
  load: () => Promise<unknown> = importApi,
): Telemetry | undefined {
  if (settings === undefined) return undefined;
  const url = new URL(baseUrl);
  const prefix = url.pathname === "/" ? "" : url.pathname;
  const port = url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
  // Without brackets around an IPv6 address, as the conventions want it.
  const address = url.hostname.replace(/^\[(.*)\]$/, "$1");
  // Per operation (a fixed set): the same frozen attributes for every attempt.
  const common = new Map<string, { name: string; attributes: Attributes; metric: Attributes }>();
  const attributesOf = (operation: string) => {
    let found = common.get(operation);
    if (found === undefined) {
      const template = `${prefix}/v2/${operation}`;
      const metric: Attributes = Object.freeze({
        "http.request.method": "POST",
        "server.address": address,
        "server.port": port,
        "url.template": template,
      });
      const attributes: Attributes = Object.freeze({ ...metric, "url.full": `${url.origin}${template}` });
      common.set(operation, (found = { name: `POST ${template}`, attributes, metric }));
    }
    return found;
  };

  let instruments: Instruments | undefined;
  let failed = false;
  /** A tracer or meter threw once (logged once). */
  let recordFailed = false;
  // Imported now; a failure is logged at once (not at the first call).
  const loaded: Promise<Api | undefined> = apiOf(settings, load).catch((cause: unknown) => {
    failed = true;
    const code = (cause as { code?: unknown } | null)?.code;
    const missing = code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND";
    logger.error(
      { package: "@opentelemetry/api", ...(typeof code === "string" ? { code } : {}) },
      missing
        ? "keyguard client: telemetry needs the package @opentelemetry/api (npm install @opentelemetry/api); continuing without spans and metrics"
        : "keyguard client: cannot load @opentelemetry/api; continuing without spans and metrics",
    );
    return undefined;
  });

  /** The tracer and histogram, from the providers as they are at the first call (an SDK registered after createClient() counts). */
  function instrument(api: Api): Instruments {
    const tracerProvider = (settings!.tracerProvider ?? api.trace.getTracerProvider()) as OtelApi.TracerProvider;
    const meterProvider = (settings!.meterProvider ?? api.metrics.getMeterProvider()) as OtelApi.MeterProvider;
    const tracer = tracerProvider.getTracer(INSTRUMENTATION_NAME);
    const duration = meterProvider.getMeter(INSTRUMENTATION_NAME).createHistogram(DURATION_METRIC, {
      description: "Duration of HTTP client requests.",
      unit: "s",
      advice: { explicitBucketBoundaries: [...DURATION_BUCKETS] },
    });
    return { api, tracer, duration };
  }

  async function traced<T>(
    ins: Instruments,
    operation: string,
    attemptNumber: number,
    run: () => Promise<T>,
    describe: (value: T) => AttemptReport,
  ): Promise<T> {
    const { api, tracer, duration } = ins;
    const op = attributesOf(operation);
    const span = tracer.startSpan(op.name, { kind: api.SpanKind.CLIENT, attributes: op.attributes });
    if (attemptNumber > 1) span.setAttribute("http.request.resend_count", attemptNumber - 1);
    const started = performance.now();
    let value: T;
    try {
      value = await api.context.with(api.trace.setSpan(api.context.active(), span), run);
    } catch (err) {
      finish({ status: undefined, errorType: thrownType(err), data: undefined });
      throw err;
    }
    finish(describe(value));
    return value;

    /** Ends the span and records the duration once; a tracer or meter that throws never changes the call's result. */
    function finish(r: AttemptReport): void {
      try {
        record(r);
      } catch (err) {
        if (!recordFailed) {
          recordFailed = true;
          logger.error(
            { error: err instanceof Error ? err.name : typeof err },
            "keyguard client: the OpenTelemetry tracer or meter threw; the call's result is unchanged",
          );
        }
      }
    }

    function record(r: AttemptReport): void {
      const metric: Attributes = { ...op.metric };
      if (r.status !== undefined) {
        span.setAttribute("http.response.status_code", r.status);
        metric["http.response.status_code"] = r.status;
      }
      if (r.errorType !== undefined) {
        span.setAttribute("error.type", r.errorType);
        span.setStatus({ code: api.SpanStatusCode.ERROR });
        metric["error.type"] = r.errorType;
      } else if (operation === "keys.verifyKey" && r.data !== undefined) {
        const { keyId, code } = r.data as { keyId?: unknown; code?: unknown };
        if (typeof keyId === "string" && SAFE_VALUE.test(keyId)) span.setAttribute(KEY_ID_ATTRIBUTE, keyId);
        if (typeof code === "string" && SAFE_VALUE.test(code)) span.setAttribute(VERIFICATION_CODE_ATTRIBUTE, code);
      }
      span.end();
      duration.record((performance.now() - started) / 1000, metric);
    }
  }

  return {
    async attempt(operation, attemptNumber, run, describe) {
      if (instruments === undefined && !failed) {
        const api = await loaded;
        if (api !== undefined) instruments ??= instrument(api);
      }
      return instruments === undefined ? run() : traced(instruments, operation, attemptNumber, run, describe);
    },
  };
}
