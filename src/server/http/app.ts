// The HTTP face of the local key service: a node:http request handler serving
// `POST /v2/<group>.<op>`, `GET /v2/liveness`, `GET /v2/readiness`, with metrics on `GET /metrics`,
// and with secret scanning on `POST /secret-scanning/github`. It also mounts in Express or Connect
// (`outer.use("/prefix", app)`). Bad input never gives a 500; every answer but the metrics' and
// the secret scanning reports' is an envelope. An operation's request goes through the steps of
// `serve`; every change, and every refusal for permissions, leaves an audit record (./audit-step).
import type { IncomingMessage, ServerResponse } from "node:http";
import { invalidationAfter } from "../../protocol/invalidation";
import { authenticate, isRefusal, type RootContext } from "../operations/auth";
import { auditChanges, auditRefusal } from "./audit-step";
import { clientIp } from "./client-ip";
import { rootKeyFailureLimit, type RootKeyFailureLimit } from "./root-key-failures";
import type { ConsoleHandler } from "./console-files";
import { successEnvelope } from "./envelope";
import { ServiceError } from "../errors";
import { newId } from "../domain/ids";
import type { AuditChange, OpContext, OpResult, RunContext } from "../operations/operation";
import type { AnyOperation } from "../operations/table";
import { METRICS_PATH, metricsEndpoint } from "./metrics-route";
import { sendNdjson, wantsNdjson } from "./ndjson";
import { readEndpoints } from "../webhooks/endpoints";
import { answerReadiness } from "./readiness";
import { hasBody, isJsonContentType, readJsonBody } from "./request-body";
import { metricsNameOf, pathOf, route } from "./route";
import { SECRET_SCANNING_PATH, secretScanningEndpoint } from "./secret-scanning-route";
import { JSON_TYPE, send, sendError } from "./send";
import type { ServiceCore } from "../service";
import type { StorageTx } from "../storage/seam";
import { isStoreUnavailable, storeUnavailableAnswer } from "../storage/store-failures";
import { validateRequest } from "../operations/validate";

/**
 * The service as a request handler: give it to `http.createServer`, to supertest, or mount it
 * in Express (`outer.use("/prefix", app)`). It answers every request it gets (404 envelopes
 * included) and never calls `next`.
 */
export type LocalServiceApp = (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => void;

/** The service as a request handler; with `console`, also the web console's page and files. */
export function createApp(core: ServiceCore, consoleFiles?: ConsoleHandler): LocalServiceApp {
  const leaks = core.config.secretScanning && secretScanningEndpoint(core);
  const failures = core.config.rootKeyFailureLimit && rootKeyFailureLimit(core.store, core.config.rootKeyFailureLimit);
  const handle: LocalServiceApp = (req, res) => {
    const requestId = newId("req");
    try {
      refuseWhenFaulted(core);
      if (leaks && pathOf(req.url ?? "/") === SECRET_SCANNING_PATH) return leaks(req, res, requestId);
      const to = route(req, res, pathOf(req.url ?? "/"), consoleFiles);
      // kind "console": the route step served the file already.
      if (to.kind === "liveness") send(res, 200, JSON_TYPE, JSON.stringify(successEnvelope({ message: "OK" }, requestId)));
      else if (to.kind === "readiness") void answerReadiness(core, req, res, requestId);
      else if (to.kind === "operation") void serve(core, req, res, requestId, to.op, failures);
    } catch (err) {
      answerFailure(core, req, res, requestId, err);
    }
  };
  return core.metrics ? withMetrics(core, handle) : handle;
}

/**
 * The request's Authorization header. node:http keeps the first of several; two that differ are
 * refused instead (400 `authentication.malformed`), as apiKeyAuth() refuses two keys: which one
 * counts must not depend on which a proxy passes first.
 */
function soleAuthorization(req: IncomingMessage): string | undefined {
  const first = req.headers.authorization;
  if (first === undefined) return undefined;
  const raw = req.rawHeaders;
  let seen = 0;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length !== 13 || raw[i]!.toLowerCase() !== "authorization") continue;
    if (++seen > 1 && raw[i + 1]!.trim() !== first.trim()) {
      throw new ServiceError(
        "authentication.malformed",
        "The request has two different Authorization headers. Send one: Authorization: Bearer ROOT_KEY.",
      );
    }
  }
  return first;
}

/** An operation's request, step by step; a step that fails ends it with its error answer. */
async function serve(
  core: ServiceCore,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  op: AnyOperation,
  failures: RootKeyFailureLimit | undefined,
): Promise<void> {
  try {
    const body = await read(req);
    validateBody(op, body);
    const now = core.now();
    const ip = clientIp(req.socket.remoteAddress, req.headers["x-forwarded-for"], core.config.trustProxy);
    // An address over rootKeyFailureLimit is refused before its root key is looked at.
    const authenticated = () => authenticate(core.store.direct, soleAuthorization(req), { now, ip });
    const root = await (failures ? failures.guard(ip, now, authenticated) : authenticated());
    core.rootKeyUses.note(root.rootKeyId, now);
    try {
      const byRoot = authoriseByRoot(op, root, body);
      if (op.exportAll && wantsNdjson(req)) {
        const ctx = contextOf(core, requestId, root, now, ip, core.store.direct, []);
        ctx.resource = op.authorize.reads ? await authoriseInStore(op.authorize, ctx, body) : byRoot;
        return await sendNdjson(res, requestId, op.exportAll(ctx, body));
      }
      // Read before the transaction, without its locks, and from the store's cache where it has one:
      // an endpoint created meanwhile (or, on another instance, until its announcement arrives)
      // misses this change.
      const endpoints = op.audit ? await readEndpoints(core.store.direct, root.workspaceId, { cached: true }) : [];
      let queued = 0;
      const answer = await inStore(core, op, async (tx) => {
        const noted: AuditChange[] = [];
        const ctx = contextOf(core, requestId, root, now, ip, tx, noted);
        ctx.resource = op.authorize.reads ? await authoriseInStore(op.authorize, ctx, body) : byRoot;
        const result = await run(op, ctx, body);
        if (op.audit || noted.length > 0) queued = await auditChanges(op, ctx, body, result.data, noted, endpoints);
        return answerOf(core, op.name, result, requestId);
      });
      const announced = announce(core, op.name, body);
      if (announced) await announced;
      if (queued > 0) void core.webhooks.tick();
      send(res, 200, JSON_TYPE, answer);
    } catch (err) {
      if (isRefusal(err)) await auditRefusal(core.store.direct, op, { root, requestId, ip, now }, body, err);
      throw err;
    }
  } catch (err) {
    answerFailure(core, req, res, requestId, err);
  }
}

/** read: the JSON body (an absent body is `{}`); any other content type is a 400. */
function read(req: IncomingMessage): Promise<unknown> | object {
  if (!hasBody(req)) return {};
  if (!isJsonContentType(req.headers["content-type"])) {
    const message = "The request body must be JSON (Content-Type: application/json).";
    throw new ServiceError("application.invalid_input", message, {
      errors: [{ location: "header.content-type", message, fix: "Set Content-Type: application/json." }],
    });
  }
  return readJsonBody(req);
}

/** validate: the body against the operation's contract, then its checks across fields; 400 naming the first problem. */
function validateBody(op: AnyOperation, body: unknown): void {
  const errors = validateRequest(op, body);
  if (errors.length > 0) {
    const first = errors[0]!;
    throw new ServiceError("application.invalid_input", `Invalid request body: ${first.location} ${first.message}.`, { errors });
  }
}

/**
 * The store side of the request: one transaction for `read` and `write` operations, `Storage.direct`
 * for `direct` ones. The answer is prepared (and serialised) inside it and sent once it committed.
 */
function inStore(core: ServiceCore, op: AnyOperation, steps: (tx: StorageTx) => Promise<string>): Promise<string> {
  return op.access === "direct" ? steps(core.store.direct) : core.store.transaction(steps);
}

/** What the operation's steps see: the store, the root key, the clock read once, the caller's address… */
function contextOf(
  core: ServiceCore,
  requestId: string,
  root: RootContext,
  now: number,
  ip: string,
  tx: StorageTx,
  noted: AuditChange[],
): RunContext<unknown> {
  const changed = (change: AuditChange) => void noted.push(change);
  const { record, countLimit, analytics, webhookContext: webhooks } = core;
  return { tx, root, now, ip, vault: core.vault, requestId, changed, record, countLimit, analytics, webhooks, resource: undefined };
}

/**
 * authorise, when the root key's permissions alone decide (`reads: false`): at once, before the
 * transaction opens. Throws the 403 (or the 404 production masks it with); else gives what `run` gets.
 */
function authoriseByRoot(op: AnyOperation, root: RootContext, body: unknown): unknown {
  return op.authorize.reads ? undefined : op.authorize.check(root, body);
}

type StoreAuthorization = Extract<AnyOperation["authorize"], { reads: true }>;

/** authorise, when the decision needs records of the store (the key, the API…): first thing in the transaction. */
function authoriseInStore(authorize: StoreAuthorization, ctx: OpContext, body: unknown): Promise<unknown> {
  return authorize.check(ctx, body);
}

/** run: the operation's handler, given what its authorisation resolved (`ctx.resource`). */
function run(op: AnyOperation, ctx: RunContext<unknown>, body: unknown): Promise<OpResult<unknown>> {
  return op.run(ctx, body);
}

/** answer: the success envelope as JSON text; the outcome is counted in the metrics. */
function answerOf(core: ServiceCore, name: string, result: OpResult<unknown>, requestId: string): string {
  core.metrics?.outcome(name, result.data);
  return JSON.stringify(successEnvelope(result.data, requestId, result.pagination));
}

/** announce: once committed, apiKeyAuth() fleets on the bus forget what they remember of the changed keys. */
function announce(core: ServiceCore, name: string, body: unknown): Promise<void> | undefined {
  const invalidation = core.config.invalidate && invalidationAfter(name, body);
  return invalidation ? core.config.invalidate!.invalidate(invalidation) : undefined;
}

/** An injected fault (`setUnavailable`): 503 with `Retry-After`. */
function refuseWhenFaulted(core: ServiceCore): void {
  const retryAfter = core.takeFault();
  if (retryAfter === undefined) return;
  throw new ServiceError("application.service_unavailable", "The service is temporarily unavailable. Please retry later.", {
    headers: { "Retry-After": String(retryAfter) },
  });
}

/**
 * The error answer of a failed request: a `ServiceError` as it is; a store that is unavailable, 503
 * (and reported); anything else, 500, logged by its message alone (never a body or a header).
 */
function answerFailure(core: ServiceCore, req: IncomingMessage, res: ServerResponse, requestId: string, err: unknown): void {
  if (err instanceof ServiceError) return sendError(req, res, requestId, err);
  if (isStoreUnavailable(err)) {
    core.failures.report(err);
    return sendError(req, res, requestId, storeUnavailableAnswer());
  }
  core.config.logger.error(
    { requestId, path: pathOf(req.url ?? "/"), error: err instanceof Error ? err.message : String(err) },
    "keyguard/server: unexpected error while handling a request",
  );
  sendError(req, res, requestId, new ServiceError("application.unexpected_error", "An unexpected error occurred. Please try again."));
}

/**
 * With metrics on: `/metrics` answers the scrape (not counted); every other request is counted
 * once answered, under its operation (any path that is not one: "unknown").
 */
function withMetrics(core: ServiceCore, handle: LocalServiceApp): LocalServiceApp {
  const metrics = core.metrics!;
  const scrape = metricsEndpoint(metrics, core.config.metrics?.token, core.config.logger);
  return (req, res) => {
    const path = pathOf(req.url ?? "/");
    if (path === METRICS_PATH) return scrape(req, res);
    const operation = path === SECRET_SCANNING_PATH && core.config.secretScanning ? "secret_scanning" : metricsNameOf(path);
    const start = performance.now();
    res.once("finish", () => metrics.request(operation, res.statusCode, (performance.now() - start) / 1000));
    handle(req, res);
  };
}
