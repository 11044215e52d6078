// IETF rate-limit headers (draft-ietf-httpapi-ratelimit-headers, structured-field form) and
// `Retry-After`, built from the rate-limit states of a verification result. Pure.

import type { VerifyRatelimitState } from "../protocol/types";

type RatelimitState = Pick<VerifyRatelimitState, "name" | "limit" | "duration" | "remaining" | "reset" | "exceeded">;

// sf-string: printable ASCII, with `"` and `\` escaped.
function sfString(value: string): string {
  return `"${value.replace(/[^\x20-\x7e]/g, "_").replace(/(["\\])/g, "\\$1")}"`;
}

const windowSeconds = (s: RatelimitState): number => Math.max(1, Math.ceil(s.duration / 1000));

/**
 * Seconds until a window resets, by this server's clock. A window never resets later than one
 * duration from now, so a service clock ahead of ours (clock skew) cannot promise a longer wait.
 */
const secondsUntilReset = (s: RatelimitState, now: number): number =>
  Math.min(windowSeconds(s), Math.max(0, Math.ceil((s.reset - now) / 1000)));

function usable(states: readonly RatelimitState[] | undefined): RatelimitState[] {
  if (!Array.isArray(states)) return [];
  return states.filter(
    (s) =>
      typeof s?.name === "string" &&
      Number.isFinite(s.limit) &&
      Number.isFinite(s.duration) &&
      Number.isFinite(s.remaining) &&
      Number.isFinite(s.reset),
  );
}

/**
 * `RateLimit-Policy: "name";q=<limit>;w=<window s>` and `RateLimit: "name";r=<remaining>;t=<s to reset>`,
 * one list item per rate limit. Empty when the result reports none.
 */
export function rateLimitHeaders(states: readonly RatelimitState[] | undefined, now: number): Record<string, string> {
  const list = usable(states);
  if (list.length === 0) return {};
  const policy = list.map((s) => `${sfString(s.name)};q=${Math.max(0, Math.trunc(s.limit))};w=${windowSeconds(s)}`);
  const current = list.map((s) => `${sfString(s.name)};r=${Math.max(0, Math.trunc(s.remaining))};t=${secondsUntilReset(s, now)}`);
  return { "RateLimit-Policy": policy.join(", "), RateLimit: current.join(", ") };
}

/**
 * Seconds until every exceeded limit has reset (at least 1), or undefined when the result names
 * no exceeded limit: then nothing says when a retry could succeed.
 */
export function retryAfterFromRatelimits(states: readonly RatelimitState[] | undefined, now: number): number | undefined {
  const exceeded = usable(states).filter((s) => s.exceeded === true);
  if (exceeded.length === 0) return undefined;
  return Math.max(1, ...exceeded.map((s) => secondsUntilReset(s, now)));
}
