// Writing the service's answers: a body that is already JSON text, and error envelopes in the
// content type the caller accepts (problem+json unless it asks for application/json).
import type { IncomingMessage, ServerResponse } from "node:http";
import { errorContentType, errorEnvelope } from "./envelope";
import { type ServiceError } from "../errors";

export const JSON_TYPE = "application/json; charset=utf-8";
const PROBLEM_TYPE = "application/problem+json; charset=utf-8";

/** Sends a body that is already JSON text (nothing when an answer already went out). */
export function send(
  res: ServerResponse,
  status: number,
  contentType: string,
  json: string,
  headers?: Readonly<Record<string, string>>,
): void {
  if (res.headersSent) return;
  // writeHead with the headers at hand, rather than a setHeader each: node:http then writes them
  // as given (merged into any set before), with no store of its own to fill and read back.
  const length = Buffer.byteLength(json);
  res.writeHead(
    status,
    headers
      ? { ...headers, "Content-Type": contentType, "Content-Length": length }
      : { "Content-Type": contentType, "Content-Length": length },
  );
  res.end(json);
}

/** Sends the error's envelope with its status and headers. */
export function sendError(req: IncomingMessage, res: ServerResponse, requestId: string, err: ServiceError): void {
  req.resume(); // an unread body is drained, so the answer goes out on a usable connection
  const type = errorContentType(req.headers.accept) === "application/json" ? JSON_TYPE : PROBLEM_TYPE;
  send(res, err.status, type, JSON.stringify(errorEnvelope(err, requestId)), err.headers);
}
