// Problem Details bodies (RFC 9457, `application/problem+json`) for denials, and writing them.
// The body is built from the error only: the key service's own body is never passed through.

import type { ServerResponse } from "node:http";
import type { KeyguardError } from "./errors";

export interface ProblemBody {
  /** `urn:keyguard:problem:<code in lower case>`. */
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  /** The key service's request id, when a verification call produced the denial. */
  requestId?: string;
}

const HIDDEN_DETAIL = "The request could not be authenticated because of a server error.";

export const PROBLEM_CONTENT_TYPE = "application/problem+json; charset=utf-8";

/** The body for a denial; `detail` is generic unless the error is marked `expose`. */
export function problemBody(err: KeyguardError): ProblemBody {
  const body: ProblemBody = {
    type: `urn:keyguard:problem:${err.code.toLowerCase().replace(/_/g, "-")}`,
    title: err.title,
    status: err.status,
    detail: err.expose ? err.detail : HIDDEN_DETAIL,
    code: err.code,
  };
  if (err.requestId !== undefined) body.requestId = err.requestId;
  return body;
}

/** Writes the denial: status, the error's headers, `Cache-Control: no-store` and the problem body. */
export function sendProblem(res: ServerResponse, err: KeyguardError): void {
  const body = JSON.stringify(problemBody(err));
  res.statusCode = err.status;
  for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
  res.setHeader("Content-Type", PROBLEM_CONTENT_TYPE);
  res.setHeader("Cache-Control", "no-store");
  res.setHeader("Content-Length", Buffer.byteLength(body));
  res.end(body);
}
