// `GET /v2/readiness`: whether this instance should get traffic now, for a load balancer's health
// check (liveness only says the process answers). Ready: the store answers (PostgreSQL and Redis:
// each asked once, within a time limit) and the service is not shutting down. Else 503 with
// `Retry-After`; the reason is logged (throttled), never sent: the probe needs no key.
import type { IncomingMessage, ServerResponse } from "node:http";
import { successEnvelope } from "./envelope";
import { ServiceError } from "../errors";
import { JSON_TYPE, send, sendError } from "./send";
import type { ServiceCore } from "../service";
import { isStoreUnavailable } from "../storage/store-failures";
import { StoreUnavailableError } from "../errors";

/** How long the store may take to answer the probe, ms. */
const PROBE_LIMIT_MS = 2000;

const notReady = (why: string) =>
  new ServiceError("application.service_unavailable", `The key service is not ready: ${why}. Please retry shortly.`, {
    headers: { "Retry-After": "1" },
  });

export async function answerReadiness(core: ServiceCore, req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
  if (core.draining) return sendError(req, res, requestId, notReady("it is shutting down"));
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      core.store.ping?.(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new StoreUnavailableError(`the store did not answer within ${PROBE_LIMIT_MS} ms`)), PROBE_LIMIT_MS);
      }),
    ]);
  } catch (err) {
    if (isStoreUnavailable(err)) core.failures.report(err);
    else core.config.logger.error({ error: (err as Error)?.message }, "keyguard/server: the readiness probe failed");
    return sendError(req, res, requestId, notReady("its storage is unavailable"));
  } finally {
    clearTimeout(timer);
  }
  send(res, 200, JSON_TYPE, JSON.stringify(successEnvelope({ message: "OK" }, requestId)));
}
