// A denial as an HTTP answer (RFC 9457): the problem+json body, built from the error only (never
// from the key service's body), and the status and headers that go with it (the error's own,
// the problem+json type and `Cache-Control: no-store`). Every adapter answers a denial with these.

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

const PROBLEM_CONTENT_TYPE = "application/problem+json; charset=utf-8";

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

export interface ProblemAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** The denial as the parts of an HTTP answer, for adapters that write responses through their framework. */
export function problemAnswer(err: KeyguardError): ProblemAnswer {
  return {
    status: err.status,
    headers: { ...err.headers, "Content-Type": PROBLEM_CONTENT_TYPE, "Cache-Control": "no-store" },
    body: JSON.stringify(problemBody(err)),
  };
}
