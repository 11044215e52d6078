// A denial as the parts of an HTTP answer, for adapters that write responses through their
// framework: status, the error's headers with the problem+json type and `Cache-Control: no-store`,
// and the body (RFC 9457).

import type { KeyguardError } from "../middleware/errors";
import { problemBody } from "../middleware/respond";

export const PROBLEM_CONTENT_TYPE = "application/problem+json; charset=utf-8";

export interface ProblemAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export function problemAnswer(err: KeyguardError): ProblemAnswer {
  return {
    status: err.status,
    headers: { ...err.headers, "Content-Type": PROBLEM_CONTENT_TYPE, "Cache-Control": "no-store" },
    body: JSON.stringify(problemBody(err)),
  };
}
