// The time limit of one analytics query: a store that cannot answer within it gives up and throws
// AnalyticsTimeoutError, which getVerifications answers as production does (422
// query_execution_timeout).

/** Default time limit of one analytics query, ms (the stores' `analyticsTimeoutMs`). */
export const DEFAULT_ANALYTICS_TIMEOUT_MS = 10_000;

export class AnalyticsTimeoutError extends Error {
  readonly code = "ANALYTICS_TIMEOUT";
  constructor(readonly limitMs: number) {
    super(`The analytics query did not finish within ${limitMs} ms.`);
    this.name = "AnalyticsTimeoutError";
  }
}
