// Builds the `WWW-Authenticate: Bearer …` challenge (RFC 6750 §3) for a denial, and the RFC 6750
// `scope` (space-separated tokens) for a permission query when one can express it. Pure.

import { parsePermissionQuery, type PermissionQuery } from "../protocol/permission-query";
import type { BearerError } from "./policy";

export interface ChallengeParams {
  realm: string;
  error?: BearerError;
  /** RFC 6750 scope: space-separated scope tokens; sent with `insufficient_scope` only. */
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

/** RFC 6750 scope-token: `1*( %x21 / %x23-5B / %x5D-7E )`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

function andedPermissions(node: PermissionQuery, into: string[]): boolean {
  if (node.type === "permission") {
    if (!SCOPE_TOKEN.test(node.value)) return false;
    if (!into.includes(node.value)) into.push(node.value);
    return true;
  }
  return node.type === "and" && node.operands.every((operand) => andedPermissions(operand, into));
}

/**
 * The `scope` for a permission query: its permissions joined by spaces when the query only ANDs
 * permissions (`a AND (b AND c)` → `a b c`); undefined when it uses OR or does not parse, since
 * a list of scope tokens cannot say "one of".
 */
export function scopeForQuery(query: string): string | undefined {
  let parsed: PermissionQuery;
  try {
    parsed = parsePermissionQuery(query);
  } catch {
    return undefined;
  }
  const tokens: string[] = [];
  return andedPermissions(parsed, tokens) && tokens.length > 0 ? tokens.join(" ") : undefined;
}
