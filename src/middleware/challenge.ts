// Builds the `WWW-Authenticate: Bearer …` challenge (RFC 6750 §3) for a denial. Pure.

import type { BearerError } from "./policy";

export interface ChallengeParams {
  realm: string;
  error?: BearerError;
  /** The permission query the request needed; sent as `scope` with `insufficient_scope`. */
  scope?: string;
}

// quoted-string content: printable ASCII; `"` and `\` are escaped.
function quote(value: string): string {
  return `"${value.replace(/[^\x20-\x7e]/g, "?").replace(/(["\\])/g, "\\$1")}"`;
}

/** `Bearer realm="api"`, plus `error="…"` and, for `insufficient_scope`, `scope="…"`. */
export function bearerChallenge(params: ChallengeParams): string {
  let out = `Bearer realm=${quote(params.realm)}`;
  if (params.error !== undefined) out += `, error=${quote(params.error)}`;
  if (params.error === "insufficient_scope" && params.scope !== undefined && params.scope !== "") {
    out += `, scope=${quote(params.scope)}`;
  }
  return out;
}

/** Whether a denial with this status and error carries a challenge: every 401, and any Bearer error. */
export function needsChallenge(status: number, error: BearerError | undefined): boolean {
  return status === 401 || error !== undefined;
}
