// The HTTP face of the local key service: a node:http request handler serving
// `POST /v2/<group>.<op>`, `GET /v2/liveness`, `GET /v2/readiness`, with metrics on `GET /metrics`,
// and with secret scanning on `POST /secret-scanning/github`. It also mounts in Express or Connect
// (`outer.use("/prefix", app)`). Bad input never gives a 500; every answer but the metrics' and
// the secret scanning reports' is an envelope. An operation's request goes through the steps of
// `serve`; every change, and every refusal for permissions, leaves an audit record (./audit-step).
import type { IncomingMessage, ServerResponse } from "node:http";
import { invalidationAfter } from "../../protocol/invalidation";
import { authenticate, isRefusal, type RequestOrigin, type RootContext } from "../operations/auth";
import { authenticatePortalSession, bearerPortalToken, sessionByCode, sessionCaller } from "../operations/portal-auth";
import { auditChanges, auditRefusal } from "./audit-step";
import { clientIp } from "./client-ip";
import { rootKeyFailureLimit, type RootKeyFailureLimit } from "./root-key-failures";
import type { ConsoleHandler } from "./console-files";
import { exchangeRefused, isPortalPath, portalRoute, redirect, refuseOtherOrigins, sendBack, sessionCookies } from "./portal-pages";
import { successEnvelope } from "./envelope";
import { ServiceError } from "../errors";
import { newId } from "../domain/ids";
import type { AuditChange, OpContext, OpResult, RunContext } from "../operations/operation";
import { findOperation, type AnyOperation } from "../operations/table";
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
      if (consoleFiles && isPortalPath(pathOf(req.url ?? "/"))) return portal(core, req, res, requestId, consoleFiles, failures);
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

/** A request under /portal: the hosted portal's code exchange, its pages' operations, its way back, its files. */
function portal(
  core: ServiceCore,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  consoleFiles: ConsoleHandler,
  failures: RootKeyFailureLimit | undefined,
): void {
  const path = pathOf(req.url ?? "/");
  const to = portalRoute(req, path);
  if (to.kind === "canonical") return redirect(res, "/portal/");
  if (to.kind === "return") return sendBack(req, res);
  if (to.kind === "operation") {
    refuseOtherOrigins(req, originOf(core, req));
    return void serve(core, req, res, requestId, to.op, failures);
  }
  if (to.kind === "exchange") {
    const secure = originOf(core, req).startsWith("https:");
    // The code is exchanged here, on the server: the token goes into the cookie and the code out of the location.
    return void serve(core, req, res, requestId, findOperation("portal.exchangeCode")!, failures, {
      body: { code: to.code },
      deliver: (data, caller) =>
        redirect(res, "/portal/", sessionCookies((data as { accessToken: string }).accessToken, caller.portal?.returnUrl, secure)),
      refused: () => exchangeRefused(res),
    });
  }
  if (!consoleFiles(req, res, path)) {
    throw new ServiceError("routing.not_found", `No portal page at ${req.method} <a path of ${path.length} characters>.`);
  }
}

/** An operation run for a page of the service rather than an API caller: its body, and what to answer instead of the envelope. */
interface PageCall {
  body: unknown;
  deliver(data: unknown, caller: RootContext): void;
  /** A refusal (a ServiceError); any other failure is answered as usual. */
  refused(err: ServiceError): void;
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
    const name = raw[i]!;
    if (name.length !== 13 || (name !== "authorization" && name !== "Authorization" && name.toLowerCase() !== "authorization")) continue;
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
  page?: PageCall,
): Promise<void> {
  try {
    // A portal's answers carry codes and tokens, or an end user's keys: never kept by a cache.
    if (op.name.startsWith("portal.")) res.setHeader("Cache-Control", "no-store").setHeader("Pragma", "no-cache");
    const body = page ? page.body : await read(req);
    validateBody(op, body);
    const now = core.now();
    const ip = clientIp(req.socket.remoteAddress, req.headers["x-forwarded-for"], core.config.trustProxy);
    const origin = originOf(core, req);
    // An address over rootKeyFailureLimit is refused before its root key (or portal code or token) is looked at.
    const authenticated = () => authenticateCaller(core, req, op, body, { now, ip });
    const root = await (failures ? failures.guard(ip, now, authenticated) : authenticated());
    if (!root.portal) core.rootKeyUses.note(root.rootKeyId, now);
    try {
      const byRoot = authoriseByRoot(op, root, body);
      if (op.exportAll && wantsNdjson(req)) {
        const ctx = contextOf(core, requestId, root, now, ip, origin, core.store.direct, []);
        ctx.resource = op.authorize.reads ? await authoriseInStore(op.authorize, ctx, body) : byRoot;
        return await sendNdjson(res, requestId, op.exportAll(ctx, body));
      }
      // Read before the transaction, without its locks, and from the store's cache where it has one:
      // an endpoint created meanwhile (or, on another instance, until its announcement arrives)
      // misses this change.
      const endpoints = op.audit ? await readEndpoints(core.store.direct, root.workspaceId, { cached: true }) : [];
      let queued = 0;
      const answer = await inStore(core, op, body, async (tx) => {
        const noted: AuditChange[] = [];
        const ctx = contextOf(core, requestId, root, now, ip, origin, tx, noted);
        ctx.resource = op.authorize.reads ? await authoriseInStore(op.authorize, ctx, body) : byRoot;
        const result = await run(op, ctx, body);
        if (op.audit || noted.length > 0) queued = await auditChanges(op, ctx, body, result.data, noted, endpoints);
        return answerOf(core, op.name, result, requestId);
      });
      const announced = announce(core, op.name, body);
      if (announced) await announced;
      if (queued > 0) void core.webhooks.tick();
      if (page) page.deliver((JSON.parse(answer) as { data: unknown }).data, root);
      else send(res, 200, JSON_TYPE, answer);
    } catch (err) {
      if (isRefusal(err)) await auditRefusal(core.store.direct, op, { root, requestId, ip, now }, body, err);
      throw err;
    }
  } catch (err) {
    if (page && err instanceof ServiceError) return page.refused(err);
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
 * The store side of the request: one transaction for `read` and `write` operations (optimistic
 * where the operation says this request may be), `Storage.direct` for `direct` ones. The answer is
 * prepared (and serialised) inside it and sent once it committed.
 */
function inStore(core: ServiceCore, op: AnyOperation, body: unknown, steps: (tx: StorageTx) => Promise<string>): Promise<string> {
  if (op.access === "direct") return steps(core.store.direct);
  return op.optimistic?.(body as never) ? core.store.transaction(steps, OPTIMISTIC) : core.store.transaction(steps);
}

const OPTIMISTIC = { optimistic: true } as const;

/** What the operation's steps see: the store, the root key, the clock read once, the caller's address… */
function contextOf(
  core: ServiceCore,
  requestId: string,
  root: RootContext,
  now: number,
  ip: string,
  origin: string,
  tx: StorageTx,
  noted: AuditChange[],
): RunContext<unknown> {
  const changed = (change: AuditChange) => void noted.push(change);
  const { record, countLimit, analytics, webhookContext: webhooks } = core;
  return { tx, root, now, ip, origin, vault: core.vault, requestId, changed, record, countLimit, analytics, webhooks, resource: undefined };
}

/**
 * authenticate: the caller the operation takes (`caller`): a root key by its Bearer header; a
 * portal session's end user by its access token; or, for portal.exchangeCode, by the code in the body.
 */
function authenticateCaller(
  core: ServiceCore,
  req: IncomingMessage,
  op: AnyOperation,
  body: unknown,
  origin: RequestOrigin,
): Promise<RootContext> {
  const authorization = soleAuthorization(req);
  if (op.caller === "portalCode") {
    const code = (body as { code: string }).code;
    return sessionByCode(core.store.direct, code, origin.now).then((session) => sessionCaller(session, session.codeExpiresAt));
  }
  // A root key on a session operation is authenticated as one (401 when unknown), then refused by the scope check (403).
  if (op.caller === "portalSession" && (bearerPortalToken(authorization) !== undefined || authorization === undefined)) {
    return authenticatePortalSession(core.store.direct, { authorization, cookie: req.headers.cookie }, origin.now);
  }
  return authenticate(core.store.direct, authorization, origin);
}

/** The origin the caller reached the service at: `https:` behind TLS (or a trusted proxy saying so), and its `Host`. */
function originOf(core: ServiceCore, req: IncomingMessage): string {
  const forwarded = core.config.trustProxy
    ? String(req.headers["x-forwarded-proto"] ?? "")
        .split(",")[0]!
        .trim()
    : "";
  const scheme = core.config.secure || forwarded === "https" ? "https" : "http";
  // A Host that is not a host[:port] is not repeated into a URL: the listener's own address instead.
  const given = req.headers.host;
  const host =
    given !== undefined && (given === lastHost || isHost(given))
      ? given
      : `${req.socket.localAddress ?? "127.0.0.1"}:${req.socket.localPort ?? 80}`;
  return `${scheme}://${host}`;
}

const HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;
/** The last Host found to be a host[:port]: callers send the same one again and again. */
let lastHost: string | undefined;

function isHost(given: string): boolean {
  if (!HOST.test(given)) return false;
  lastHost = given;
  return true;
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
