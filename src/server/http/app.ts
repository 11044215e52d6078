// The HTTP face of the local key service: a node:http request handler serving
// `POST /v2/<group>.<op>`, `GET /v2/liveness` and, with metrics on, `GET /metrics`. It also mounts
// in Express or Connect (`outer.use("/prefix", app)`). Bad input never gives a 500; every answer
// but the metrics' is an envelope.
import type { IncomingMessage, ServerResponse } from "node:http";
import { invalidationAfter } from "../../protocol/invalidation";
import { authenticate } from "../operations/auth";
import { clientIp } from "./client-ip";
import type { ConsoleHandler } from "./console-files";
import { ServiceError, errorContentType, errorEnvelope, successEnvelope } from "./envelope";
import { newId } from "../domain/ids";
import type { OpResult } from "../operations/operation";
import { findOperation } from "../operations/table";
import { METRICS_PATH, metricsEndpoint } from "./metrics-route";
import { hasBody, isJsonContentType, readJsonBody } from "./request-body";
import type { ServiceCore } from "../service";
import type { StoreTx } from "../storage/seam";
import { isStoreUnavailable, storeUnavailableAnswer } from "../storage/store-failures";
import { validateRequest } from "../operations/validate";

/**
 * The service as a request handler: give it to `http.createServer`, to supertest, or mount it
 * in Express (`outer.use("/prefix", app)`). It answers every request it gets (404 envelopes
 * included) and never calls `next`.
 */
export type LocalServiceApp = (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => void;

const JSON_TYPE = "application/json; charset=utf-8";
const PROBLEM_TYPE = "application/problem+json; charset=utf-8";

/** Sends a body that is already JSON text. */
function send(res: ServerResponse, status: number, contentType: string, json: string, headers?: Readonly<Record<string, string>>): void {
  if (res.headersSent) return;
  res.statusCode = status;
  if (headers) for (const name in headers) res.setHeader(name, headers[name]!);
  res.setHeader("Content-Type", contentType);
  res.setHeader("Content-Length", Buffer.byteLength(json));
  res.end(json);
}

function sendError(req: IncomingMessage, res: ServerResponse, requestId: string, err: ServiceError): void {
  req.resume(); // an unread body is drained, so the answer goes out on a usable connection
  const type = errorContentType(req.headers.accept) === "application/json" ? JSON_TYPE : PROBLEM_TYPE;
  send(res, err.status, type, JSON.stringify(errorEnvelope(err, requestId)), err.headers);
}

/** The path of a request URL without its query (origin-form or absolute-form). */
function pathOf(url: string): string {
  if (!url.startsWith("/")) {
    try {
      return new URL(url).pathname;
    } catch {
      return url;
    }
  }
  const q = url.indexOf("?");
  return q === -1 ? url : url.slice(0, q);
}

/** `<group>.<op>` or `liveness` from `/v2/<name>`; undefined for any other path. */
function nameOf(path: string): string | undefined {
  if (!path.startsWith("/v2/")) return undefined;
  const name = path.slice(4);
  return name === "" || name.includes("/") ? undefined : name;
}

/** The service as a request handler; with `console`, also the web console's page and files. */
export function createApp(core: ServiceCore, consoleFiles?: ConsoleHandler): LocalServiceApp {
  const unexpected = (req: IncomingMessage, res: ServerResponse, requestId: string, err: unknown): void => {
    core.config.logger.error(
      { requestId, path: pathOf(req.url ?? "/"), error: err instanceof Error ? err.message : String(err) },
      "keyguard/local: unexpected error while handling a request",
    );
    sendError(req, res, requestId, new ServiceError("application.unexpected_error", "An unexpected error occurred. Please try again."));
  };

  const execute = async (req: IncomingMessage, res: ServerResponse, requestId: string, name: string): Promise<void> => {
    const op = findOperation(name)!;
    try {
      const body = hasBody(req) ? await readJsonBody(req) : {};
      const errors = validateRequest(name, body);
      if (errors.length > 0) {
        const first = errors[0]!;
        throw new ServiceError("application.invalid_input", `Invalid request body: ${first.location} ${first.message}.`, { errors });
      }
      const { store } = core;
      const root = await authenticate(store.direct, req.headers.authorization);
      const now = core.now();
      const ip = clientIp(req.socket.remoteAddress, req.headers["x-forwarded-for"], core.config.trustProxy);
      // The answer is prepared (and serialized) inside the transaction and sent once it committed.
      const run = async (tx: StoreTx): Promise<string> => {
        const ctx = { tx, root, now, ip, vault: core.vault, requestId, record: core.record, analytics: core.analytics };
        const result: OpResult<unknown> = await op.run(ctx, body as never);
        core.metrics?.outcome(name, result.data);
        return JSON.stringify(successEnvelope(result.data, requestId, result.pagination));
      };
      const answer = op.access === "direct" ? await run(store.direct) : await store.transaction(run);
      // Committed: apiKeyAuth() fleets on the bus forget what they remember of the changed keys first.
      const invalidation = core.config.invalidate && invalidationAfter(name, body);
      if (invalidation) await core.config.invalidate!.invalidate(invalidation);
      send(res, 200, JSON_TYPE, answer);
    } catch (err) {
      if (err instanceof ServiceError) return sendError(req, res, requestId, err);
      if (isStoreUnavailable(err)) {
        core.failures.report(err);
        return sendError(req, res, requestId, storeUnavailableAnswer());
      }
      unexpected(req, res, requestId, err);
    }
  };

  const handle: LocalServiceApp = (req, res) => {
    const requestId = newId("req");
    try {
      const retryAfter = core.takeFault();
      if (retryAfter !== undefined) {
        const err = new ServiceError("application.service_unavailable", "The service is temporarily unavailable. Please retry later.", {
          headers: { "Retry-After": String(retryAfter) },
        });
        return sendError(req, res, requestId, err);
      }
      const path = pathOf(req.url ?? "/");
      const name = nameOf(path);
      if (name === "liveness") {
        if (req.method !== "GET" && req.method !== "HEAD") return methodNotAllowed(req, res, requestId, "GET, HEAD");
        return send(res, 200, JSON_TYPE, JSON.stringify(successEnvelope({ message: "OK" }, requestId)));
      }
      if (name === undefined && consoleFiles?.(req, res, path)) return;
      if (name === undefined || !findOperation(name)) {
        const message = `No operation at ${req.method} ${path}. Operations are POST /v2/<group>.<operation>.`;
        return sendError(req, res, requestId, new ServiceError("routing.not_found", message));
      }
      if (req.method !== "POST") return methodNotAllowed(req, res, requestId, "POST");
      if (hasBody(req) && !isJsonContentType(req.headers["content-type"])) {
        const message = "The request body must be JSON (Content-Type: application/json).";
        return sendError(req, res, requestId, new ServiceError("application.invalid_input", message, {
          errors: [{ location: "header.content-type", message, fix: "Set Content-Type: application/json." }],
        }));
      }
      void execute(req, res, requestId, name);
    } catch (err) {
      unexpected(req, res, requestId, err);
    }
  };

  const { metrics } = core;
  if (!metrics) return handle;
  // With metrics on: `/metrics` answers the scrape (not counted); every other request is counted
  // once answered, under its operation (any path that is not one: "unknown").
  const scrape = metricsEndpoint(metrics, core.config.metrics?.token, core.config.logger);
  return (req, res) => {
    const path = pathOf(req.url ?? "/");
    if (path === METRICS_PATH) return scrape(req, res);
    const name = nameOf(path);
    const operation = name !== undefined && (name === "liveness" || findOperation(name)) ? name : "unknown";
    const start = performance.now();
    res.once("finish", () => metrics.request(operation, res.statusCode, (performance.now() - start) / 1000));
    handle(req, res);
  };
}

function methodNotAllowed(req: IncomingMessage, res: ServerResponse, requestId: string, allow: string): void {
  sendError(req, res, requestId, new ServiceError("routing.method_not_allowed", `${req.method} is not allowed here; use ${allow}.`, {
    headers: { Allow: allow },
  }));
}
