// The HTTP face of the local key service: an Express app serving `POST /v2/<group>.<op>` and
// `GET /v2/liveness`. Bad input never gives a 500; every answer is an envelope.
import express, { type Express, type Request, type Response } from "express";
import { invalidationAfter } from "../protocol/invalidation";
import type { OperationName } from "../protocol/types";
import { authenticate } from "./auth";
import { clientIp } from "./client-ip";
import { ServiceError, errorContentType, errorEnvelope, successEnvelope } from "./envelope";
import { newId } from "./ids";
import type { OpResult } from "./operation";
import { findOperation } from "./operations";
import type { ServiceCore } from "./service";
import type { StoreTx } from "./storage";
import { isStoreUnavailable, storeUnavailableAnswer } from "./store-failures";
import { validate } from "./validate";

/** Largest request body accepted. */
export const BODY_LIMIT = "1mb";

/** Sends a body that is already JSON text. */
function send(res: Response, status: number, contentType: string, json: string, headers: Record<string, string> = {}): void {
  res.status(status).set(headers).set("Content-Type", contentType).send(json);
}

function sendError(req: Request, res: Response, requestId: string, err: ServiceError): void {
  send(res, err.status, errorContentType(req.get("accept")), JSON.stringify(errorEnvelope(err, requestId)), { ...err.headers });
}

function hasBody(req: Request): boolean {
  return req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
}

function parserError(err: unknown): ServiceError {
  const type = (err as { type?: unknown }).type;
  if (type === "entity.too.large") {
    return new ServiceError("bad_request.request_body_too_large", `The request body exceeds the limit of ${BODY_LIMIT}.`);
  }
  const message = type === "entity.parse.failed" ? "The request body is not valid JSON." : "The request body could not be read.";
  return new ServiceError("application.invalid_input", message, {
    errors: [{ location: "body", message, fix: "Send a JSON object encoded as UTF-8." }],
  });
}

export function createApp(core: ServiceCore): Express {
  const app = express();
  app.disable("x-powered-by");
  app.disable("etag");
  const parseJson = express.json({ limit: BODY_LIMIT, type: () => true, strict: true });

  const execute = async (req: Request, res: Response, requestId: string, name: OperationName, body: unknown): Promise<void> => {
    const op = findOperation(name)!;
    try {
      const errors = validate(op.schema, body);
      if (errors.length === 0 && op.refine) errors.push(...op.refine(body as never));
      if (errors.length > 0) {
        const first = errors[0]!;
        throw new ServiceError("application.invalid_input", `Invalid request body: ${first.location} ${first.message}.`, { errors });
      }
      const { store } = core;
      const root = await authenticate(store.direct, req.get("authorization"));
      const now = core.now();
      const ip = clientIp(req.socket.remoteAddress, req.headers["x-forwarded-for"], core.config.trustProxy);
      // The answer is prepared (and serialized) inside the transaction and sent once it committed.
      const run = async (tx: StoreTx): Promise<string> => {
        const result: OpResult<unknown> = await op.run({ tx, root, now, ip, vault: core.vault }, body as never);
        return JSON.stringify(successEnvelope(result.data, requestId, result.pagination));
      };
      const answer = op.access === "direct" ? await run(store.direct) : await store.transaction(run);
      // Committed: apiKeyAuth() fleets on the bus forget what they remember of the changed keys first.
      const invalidation = core.config.invalidate && invalidationAfter(name, body);
      if (invalidation) await core.config.invalidate!.invalidate(invalidation);
      send(res, 200, "application/json", answer);
    } catch (err) {
      if (err instanceof ServiceError) return sendError(req, res, requestId, err);
      if (isStoreUnavailable(err)) {
        core.failures.report(err);
        return sendError(req, res, requestId, storeUnavailableAnswer());
      }
      unexpected(req, res, requestId, err);
    }
  };

  const unexpected = (req: Request, res: Response, requestId: string, err: unknown): void => {
    core.config.logger.error(
      { requestId, path: req.path, error: err instanceof Error ? err.message : String(err) },
      "keyguard/local: unexpected error while handling a request",
    );
    sendError(req, res, requestId, new ServiceError("application.unexpected_error", "An unexpected error occurred. Please try again."));
  };

  app.use((req, res) => {
    const requestId = newId("req");
    try {
      const retryAfter = core.takeFault();
      if (retryAfter !== undefined) {
        const err = new ServiceError("application.service_unavailable", "The service is temporarily unavailable. Please retry later.", {
          headers: { "Retry-After": String(retryAfter) },
        });
        return sendError(req, res, requestId, err);
      }
      const match = /^\/v2\/([^/]+)$/.exec(req.path);
      const name = match?.[1];
      if (name === "liveness") {
        if (req.method !== "GET" && req.method !== "HEAD") return methodNotAllowed(req, res, requestId, "GET, HEAD");
        return send(res, 200, "application/json", JSON.stringify(successEnvelope({ message: "OK" }, requestId)));
      }
      if (name === undefined || !findOperation(name)) {
        return sendError(req, res, requestId, new ServiceError("routing.not_found", `No operation at ${req.method} ${req.path}. Operations are POST /v2/<group>.<operation>.`));
      }
      if (req.method !== "POST") return methodNotAllowed(req, res, requestId, "POST");
      if (!hasBody(req)) return void execute(req, res, requestId, name as OperationName, {});
      if (!req.is(["application/json", "+json"])) {
        const message = "The request body must be JSON (Content-Type: application/json).";
        return sendError(req, res, requestId, new ServiceError("application.invalid_input", message, {
          errors: [{ location: "header.content-type", message, fix: "Set Content-Type: application/json." }],
        }));
      }
      parseJson(req, res, (err?: unknown) => {
        if (err) return sendError(req, res, requestId, parserError(err));
        void execute(req, res, requestId, name as OperationName, req.body === undefined ? {} : req.body);
      });
    } catch (err) {
      unexpected(req, res, requestId, err);
    }
  });
  return app;
}

function methodNotAllowed(req: Request, res: Response, requestId: string, allow: string): void {
  sendError(req, res, requestId, new ServiceError("routing.method_not_allowed", `${req.method} is not allowed here; use ${allow}.`, {
    headers: { Allow: allow },
  }));
}
