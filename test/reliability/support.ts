// Shared fixtures of the reliability suite: a real local key service with keys made over the wire,
// a logger that captures every call, a fault-injecting stand-in service, and an unhandled-error trap.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient, type CreateKeyInput, type KeyServiceClient } from "keyguard/client";
import type { RunningLocalKeyService } from "keyguard/server";
import { startLocalUnderTest } from "../support/store-under-test";
import type { Logger, LogFields } from "keyguard";
import { GENEROUS } from "../support/time-limits";

export interface LogEntry {
  level: "debug" | "warn" | "error";
  fields: LogFields;
  message: string;
}

/** A logger that keeps every call (every level), for assertions on what was logged. */
export function capturingLogger(): Logger & { entries: LogEntry[]; text(): string } {
  const entries: LogEntry[] = [];
  const push = (level: LogEntry["level"]) => (fields: LogFields, message: string) => {
    entries.push({ level, fields, message });
  };
  return {
    entries,
    debug: push("debug"),
    warn: push("warn"),
    error: push("error"),
    text: () => entries.map((e) => `${e.level} ${e.message} ${safeStringify(e.fields)}`).join("\n"),
  };
}

/** JSON of anything (cycles, bigints, errors with their non-enumerable message/stack included). */
export function safeStringify(value: unknown): string {
  const seen = new WeakSet<object>();
  return (
    JSON.stringify(value, (_k, v: unknown) => {
      if (typeof v === "bigint") return v.toString();
      if (typeof v === "object" && v !== null) {
        if (seen.has(v)) return "[cycle]";
        seen.add(v);
        if (v instanceof Error) return { ...v, name: v.name, message: v.message, stack: v.stack, cause: v.cause };
      }
      return v;
    }) ?? String(value)
  );
}

export interface LocalFixture {
  svc: RunningLocalKeyService;
  client: KeyServiceClient;
  logger: ReturnType<typeof capturingLogger>;
  /** Creates a key in the bootstrap API over the wire; returns the full key and its id. */
  createKey(input?: Partial<CreateKeyInput>): Promise<{ key: string; keyId: string }>;
  close(): Promise<void>;
}

export async function startLocal(): Promise<LocalFixture> {
  const logger = capturingLogger();
  const svc = await startLocalUnderTest({ logger });
  const client = createClient({ rootKey: svc.rootKey, baseUrl: svc.baseUrl, logger, retry: false, ...GENEROUS });
  return {
    svc,
    client,
    logger,
    async createKey(input = {}) {
      const created = await client.keys.createKey({ apiId: svc.apiId, ...input } as CreateKeyInput);
      return { key: created.key, keyId: created.keyId };
    },
    close: () => svc.close(),
  };
}

/** Runs `fn` after `ms` unless the server has closed by then. */
type Later = (ms: number, fn: () => void) => void;

/** What the stand-in service does with one request. */
export type Fault = (req: IncomingMessage, res: ServerResponse, body: string, later: Later) => void;

export interface FaultServer {
  baseUrl: string;
  /** Requests received (any path). */
  hits: number;
  /** Faults for the next requests, one each, in order; when empty, `fallback` answers. */
  queue: Fault[];
  fallback: Fault;
  close(): Promise<void>;
}

/**
 * A stand-in key service on 127.0.0.1. `upstream` is where `proxy` forwards healthy requests.
 * Pending delayed answers are cancelled on close.
 */
export async function startFaultServer(upstream?: string): Promise<FaultServer & { proxy: Fault }> {
  const timers = new Set<NodeJS.Timeout>();
  const later: Later = (ms, fn) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };
  const proxy: Fault = (req, res, body) => {
    if (upstream === undefined) throw new Error("no upstream to proxy to");
    fetch(`${upstream}${req.url ?? "/"}`, {
      method: req.method ?? "POST",
      headers: { authorization: req.headers.authorization ?? "", "content-type": "application/json" },
      body,
    })
      .then(async (r) => {
        const text = await r.text();
        const headers: Record<string, string> = { "content-type": r.headers.get("content-type") ?? "application/json" };
        const retryAfter = r.headers.get("retry-after");
        if (retryAfter !== null) headers["retry-after"] = retryAfter;
        if (!res.destroyed) res.writeHead(r.status, headers).end(text);
      })
      .catch(() => res.destroy());
  };
  const state: FaultServer & { proxy: Fault } = {
    baseUrl: "",
    hits: 0,
    queue: [],
    fallback: proxy,
    proxy,
    close: () => Promise.resolve(),
  };
  const server: Server = createServer((req, res) => {
    state.hits++;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", () => undefined);
    res.on("error", () => undefined);
    req.on("end", () => {
      const fault = state.queue.shift() ?? state.fallback;
      fault(req, res, Buffer.concat(chunks).toString("utf8"), later);
    });
  });
  server.on("clientError", (_err, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Fault =>
  (_req, res) => {
    res.writeHead(status, { "content-type": "application/json", ...headers }).end(typeof body === "string" ? body : JSON.stringify(body));
  };

/** The fault catalogue: each builds an answer a broken or hostile key service could give. */
export const faults = {
  json,
  status503: (retryAfter?: number): Fault =>
    json(
      503,
      {
        meta: { requestId: "req_fault" },
        error: {
          title: "Service Unavailable",
          detail: "down",
          status: 503,
          type: "https://unkey.com/docs/api-reference/errors-v2/unkey/application/service_unavailable",
        },
      },
      retryAfter === undefined ? {} : { "retry-after": String(retryAfter) },
    ),
  /** The connection is cut before any response byte. */
  resetBeforeHeaders: (): Fault => (req) => req.socket.destroy(),
  /** Headers and half a body are sent, then the connection is cut. */
  resetAfterHeaders: (): Fault => (req, res, _body, later) => {
    res.writeHead(200, { "content-type": "application/json", "content-length": "200" });
    res.write('{"meta":{"requestId":"req_fault"},"data":{"val');
    later(10, () => req.socket.destroy());
  },
  /** A correct answer, but only after `ms`. */
  slow:
    (ms: number, answer: Fault): Fault =>
    (req, res, body, later) =>
      later(ms, () => {
        if (!res.destroyed) answer(req, res, body, later);
      }),
  /** Never answers; the socket stays open until the server closes. */
  hang: (): Fault => () => undefined,
  truncatedJson: (): Fault => json(200, '{"meta":{"requestId":"req_fault"},"data":{"valid":tr'),
  malformedJson: (): Fault => json(200, "{meta: {requestId: req_fault}, data: {valid: true, code: VALID}}"),
  html:
    (status: number): Fault =>
    (_req, res) => {
      res.writeHead(status, { "content-type": "text/html" }).end(`<html><body><h1>${status} Bad Gateway</h1>nginx</body></html>`);
    },
  emptyBody: (): Fault => (_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(),
  noData: (): Fault => json(200, { meta: { requestId: "req_fault" } }),
  dataWithoutValid: (): Fault => json(200, { meta: { requestId: "req_fault" }, data: { code: "VALID", keyId: "key_fault" } }),
  validAsString: (): Fault => json(200, { meta: { requestId: "req_fault" }, data: { valid: "true", code: "VALID", keyId: "key_fault" } }),
  /** An error envelope (e.g. 401/403: the root key is rejected). */
  errorEnvelope: (status: number, kind: string, detail = "The root key is not valid."): Fault =>
    json(status, {
      meta: { requestId: "req_fault" },
      error: { title: kind, detail, status, type: `https://unkey.com/docs/api-reference/errors-v2/unkey/authentication/${kind}` },
    }),
};

/** Records unhandled rejections and uncaught exceptions while installed. */
export function trapUnhandled(): { events: unknown[]; uninstall(): void } {
  const events: unknown[] = [];
  const onRejection = (reason: unknown) => events.push({ kind: "unhandledRejection", reason });
  const onException = (err: unknown) => events.push({ kind: "uncaughtException", err });
  process.on("unhandledRejection", onRejection);
  process.on("uncaughtException", onException);
  return {
    events,
    uninstall() {
      process.off("unhandledRejection", onRejection);
      process.off("uncaughtException", onException);
    },
  };
}
