// Routing a request of the service by its path and method: `POST /v2/<group>.<op>` to its
// operation, `GET /v2/liveness` and `GET /v2/readiness`, the console's files (when served), else 404 or 405 answers.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ConsoleHandler } from "./console-files";
import { ServiceError } from "../errors";
import { type AnyOperation, findOperation } from "../operations/table";

/** Where a request goes; a path that goes nowhere, or a wrong method, throws its 404 or 405. */
export type Route = { kind: "liveness" } | { kind: "readiness" } | { kind: "console" } | { kind: "operation"; op: AnyOperation };

const LIVENESS: Route = Object.freeze({ kind: "liveness" });
const READINESS: Route = Object.freeze({ kind: "readiness" });
const CONSOLE: Route = Object.freeze({ kind: "console" });
const GET_OR_HEAD: readonly string[] = Object.freeze(["GET", "HEAD"]);
const POST: readonly string[] = Object.freeze(["POST"]);

/**
 * The route of a request. The console's files are looked for (and served, when one matches)
 * only outside `/v2/`.
 */
export function route(req: IncomingMessage, res: ServerResponse, path: string, consoleFiles: ConsoleHandler | undefined): Route {
  const name = nameOf(path);
  if (name === "liveness") {
    allowOnly(req, GET_OR_HEAD);
    return LIVENESS;
  }
  if (name === "readiness") {
    allowOnly(req, GET_OR_HEAD);
    return READINESS;
  }
  if (name === undefined && consoleFiles?.(req, res, path)) return CONSOLE;
  const op = name === undefined ? undefined : findOperation(name);
  if (name === undefined || !op) {
    // The path is the caller's: described, never repeated (a key pasted into a URL stays out of answers and logs).
    throw new ServiceError(
      "routing.not_found",
      `No operation at ${req.method} <a path of ${path.length} characters>. Operations are POST /v2/<group>.<operation>.`,
    );
  }
  allowOnly(req, POST);
  let to = OPERATION_ROUTES.get(op);
  if (to === undefined) OPERATION_ROUTES.set(op, (to = Object.freeze({ kind: "operation", op })));
  return to;
}

/** Each operation's route, made once. */
const OPERATION_ROUTES = new Map<AnyOperation, Route>();

/** The name a request is counted under in the metrics: its operation, `liveness`, `readiness`, or `unknown`. */
export function metricsNameOf(path: string): string {
  const name = nameOf(path);
  return name !== undefined && (name === "liveness" || name === "readiness" || findOperation(name)) ? name : "unknown";
}

/** The path of a request URL without its query (origin-form or absolute-form). */
export function pathOf(url: string): string {
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

/** `<group>.<op>`, `liveness` or `readiness` from `/v2/<name>`; undefined for any other path. */
function nameOf(path: string): string | undefined {
  if (!path.startsWith("/v2/")) return undefined;
  const name = path.slice(4);
  return name === "" || name.includes("/") ? undefined : name;
}

function allowOnly(req: IncomingMessage, methods: readonly string[]): void {
  if (methods.includes(req.method ?? "")) return;
  const allow = methods.join(", ");
  throw new ServiceError("routing.method_not_allowed", `${req.method} is not allowed here; use ${allow}.`, { headers: { Allow: allow } });
}
