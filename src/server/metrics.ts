// The key service's Prometheus metrics (opt-in, `metrics` option / `keyguard serve --metrics`):
// requests, verification outcomes and store calls, kept in a registry of the service's own (two
// services in one process never share or collide), plus the process metrics, collected once per
// process. prom-client is an optional peer dependency, loaded only when metrics are on.
import type * as PromClient from "prom-client";
import { loadPeer } from "./peer-module";
import { CHECKSUM_REJECTED } from "./domain/key-material";

/** Request latency buckets, seconds: a local service answers in well under a millisecond to seconds. */
const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Storage call latency buckets, seconds: from an in-memory read (microseconds) to a slow database. */
const STORE_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** How a store call failed: the store said it cannot serve (`StoreUnavailableError`), or anything else. */
export type StoreErrorKind = "unavailable" | "unexpected";

type Prom = typeof PromClient;

/** The process metrics (CPU, memory, event loop, GC, handles): one registry per process, shared by every service. */
let processRegistry: PromClient.Registry | undefined;

function processMetrics(prom: Prom): PromClient.Registry {
  if (!processRegistry) {
    processRegistry = new prom.Registry();
    prom.collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** Loads prom-client (a `LocalServiceConfigError` naming it when it is not installed) and creates the service's metrics. */
export async function loadServiceMetrics(options: { processMetrics: boolean }): Promise<ServiceMetrics> {
  const prom = await loadPeer<Prom>("prom-client", "the metrics option (keyguard serve --metrics)", () => import("prom-client"));
  return new ServiceMetrics(prom, options.processMetrics);
}

/** Children of a labelled metric, cached by label value: no label hashing of our own per observation. */
function cached<T>(make: (label: string) => T): (label: string) => T {
  const children = new Map<string, T>();
  return (label) => {
    let child = children.get(label);
    if (child === undefined) children.set(label, (child = make(label)));
    return child;
  };
}

export class ServiceMetrics {
  private readonly registry: PromClient.Registry;
  private readonly process: PromClient.Registry | undefined;
  private readonly requests: PromClient.Counter<"operation" | "status">;
  private readonly requestSeconds: (operation: string) => PromClient.Histogram.Internal<"operation">;
  private readonly verifications: (code: string) => PromClient.Counter.Internal;
  private readonly checksumRejections: PromClient.Counter;
  private readonly imports: PromClient.Counter<"result">;
  private readonly storeSeconds: (operation: string) => PromClient.Histogram.Internal<"operation">;
  private readonly storeErrors: PromClient.Counter<"operation" | "kind">;

  constructor(prom: Prom, withProcessMetrics: boolean) {
    const registers = [(this.registry = new prom.Registry())];
    this.process = withProcessMetrics ? processMetrics(prom) : undefined;
    this.requests = new prom.Counter({
      name: "keyguard_requests_total",
      help: "Requests answered by the key service, by operation (`keys.verifyKey`, `liveness`, `unknown` for any other path) and HTTP status.",
      labelNames: ["operation", "status"],
      registers,
    });
    const requestSeconds = new prom.Histogram({
      name: "keyguard_request_duration_seconds",
      help: "Time from a request's arrival to the end of its answer, by operation.",
      labelNames: ["operation"],
      buckets: REQUEST_BUCKETS,
      registers,
    });
    this.requestSeconds = cached((operation) => requestSeconds.labels(operation));
    const verifications = new prom.Counter({
      name: "keyguard_verifications_total",
      help: "Outcomes of keys.verifyKey, by code (VALID, NOT_FOUND, DISABLED, EXPIRED, FORBIDDEN, INSUFFICIENT_PERMISSIONS, RATE_LIMITED, USAGE_EXCEEDED).",
      labelNames: ["code"],
      registers,
    });
    this.verifications = cached((code) => verifications.labels(code));
    this.checksumRejections = new prom.Counter({
      name: "keyguard_checksum_rejections_total",
      help: "keys.verifyKey answers NOT_FOUND given without a store read: keys of the checksummed format whose checksum fails (also counted in keyguard_verifications_total).",
      registers,
    });
    this.imports = new prom.Counter({
      name: "keyguard_key_imports_total",
      help: "Keys given to keys.migrateKeys (by apiKeyAuth({ migrateFrom }), keyguard import or any caller), by result: `imported`, or `held` (a key with that hash was here already: refused).",
      labelNames: ["result"],
      registers,
    });
    const storeSeconds = new prom.Histogram({
      name: "keyguard_store_duration_seconds",
      help: "Time of each store call, by operation (`transaction` for a whole transaction, else the call: keyByHash, get, limit, spendCredits, ...).",
      labelNames: ["operation"],
      buckets: STORE_BUCKETS,
      registers,
    });
    this.storeSeconds = cached((operation) => storeSeconds.labels(operation));
    this.storeErrors = new prom.Counter({
      name: "keyguard_store_errors_total",
      help: "Storage calls that failed, by operation and kind (`unavailable`: the store cannot serve now, answered 503; `unexpected`: any other error).",
      labelNames: ["operation", "kind"],
      registers,
    });
  }

  /** One answered request. */
  request(operation: string, status: number, seconds: number): void {
    this.requests.inc({ operation, status: String(status) });
    this.requestSeconds(operation).observe(seconds);
  }

  /** The result of an operation that succeeded: counts verification outcomes and imported keys. */
  outcome(operation: string, data: unknown): void {
    if (operation === "keys.migrateKeys") {
      const { migrated, failed } = data as { migrated: unknown[]; failed: unknown[] };
      if (migrated.length > 0) this.imports.inc({ result: "imported" }, migrated.length);
      if (failed.length > 0) this.imports.inc({ result: "held" }, failed.length);
      return;
    }
    if (operation !== "keys.verifyKey") return;
    this.verifications((data as { code: string }).code).inc();
    if (data === CHECKSUM_REJECTED) this.checksumRejections.inc();
  }

  /** The recorder of one store operation's calls, failed or not (bound once): takes milliseconds, as `performance.now()` differences. */
  storeCall(operation: string): (ms: number, error?: StoreErrorKind) => void {
    const histogram = this.storeSeconds(operation);
    return (ms, error) => {
      histogram.observe(ms / 1000);
      if (error !== undefined) this.storeErrors.inc({ operation, kind: error });
    };
  }

  /** The text exposition format: the service's metrics, then the process metrics. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    const body = await this.registry.metrics();
    const processBody = this.process ? await this.process.metrics() : "";
    return { contentType: this.registry.contentType, body: body + processBody };
  }
}
