// The status policy: which HTTP status and Bearer `error` each outcome gets, as a data table.
// Pure. The default table is frozen; user overrides are merged entry by entry at factory time.

import type { Logger } from "../logger";
import { optionChecks, type OptionChecks } from "../option-checks";
import type { KnownVerifyCode } from "../protocol/types";
import { findUnknownOptions } from "../unknown-options";
import { ConfigError, ERROR_CODES } from "./errors";

/** The `error` parameter of `WWW-Authenticate: Bearer …` (RFC 6750 §3.1). */
export type BearerError = "invalid_request" | "invalid_token" | "insufficient_scope";

export interface StatusRule {
  /** HTTP status, 400..599. */
  readonly status: number;
  /** Bearer `error` parameter; omitted from the challenge when undefined. */
  readonly error?: BearerError;
}

/**
 * Outcomes of the table: every verification code the service reports except `VALID`, plus
 * `MISSING_KEY` (no key presented), `INVALID_REQUEST` (malformed credentials),
 * `INVALID_CHECKSUM` (a key of the checksummed format that fails its checksum) and `UNKNOWN`
 * (any code the table does not list: the service's list of codes is open).
 */
export type PolicyOutcome =
  | "MISSING_KEY"
  | "INVALID_REQUEST"
  | "INVALID_CHECKSUM"
  | "NOT_FOUND"
  | "EXPIRED"
  | "DISABLED"
  | "FORBIDDEN"
  | "INSUFFICIENT_PERMISSIONS"
  | "RATE_LIMITED"
  | "USAGE_EXCEEDED"
  | "UNKNOWN";

export type StatusPolicy = Readonly<Record<PolicyOutcome, StatusRule>> & Readonly<Record<string, StatusRule>>;

/**
 * Overrides merged over the default table. A number is shorthand for `{ status }` with the
 * Bearer error that fits it (401 → `invalid_token`, 403 → `insufficient_scope`,
 * 400 → `invalid_request`; none for `MISSING_KEY` or other statuses).
 * Codes not in {@link PolicyOutcome} are allowed, for codes the service may add (with a warning,
 * once, in case of a typo). `VALID`, `SERVICE_UNAVAILABLE`, `VERIFICATION_FAILED`, `TOO_MANY_UNKNOWN_KEYS` and
 * `INSUFFICIENT_SCOPE` cannot be set: their answers are not in the table.
 */
export type StatusPolicyOverrides = Partial<Record<PolicyOutcome | (string & {}), StatusRule | number>> & {
  readonly [K in FixedOutcome]?: never;
};

/** Outcomes the middleware answers itself, outside the table (see `FIXED_OUTCOMES`). */
type FixedOutcome = "VALID" | "SERVICE_UNAVAILABLE" | "VERIFICATION_FAILED" | "INSUFFICIENT_SCOPE" | "TOO_MANY_UNKNOWN_KEYS";

const rule = (status: number, error?: BearerError): StatusRule => Object.freeze(error === undefined ? { status } : { status, error });

/** The default table. */
export const DEFAULT_STATUS_POLICY: StatusPolicy = Object.freeze({
  MISSING_KEY: rule(401),
  INVALID_REQUEST: rule(400, "invalid_request"),
  INVALID_CHECKSUM: rule(401, "invalid_token"),
  NOT_FOUND: rule(401, "invalid_token"),
  EXPIRED: rule(401, "invalid_token"),
  DISABLED: rule(401, "invalid_token"),
  FORBIDDEN: rule(403, "insufficient_scope"),
  INSUFFICIENT_PERMISSIONS: rule(403, "insufficient_scope"),
  RATE_LIMITED: rule(429),
  USAGE_EXCEEDED: rule(429),
  UNKNOWN: rule(401, "invalid_token"),
});

// Every code the service is known to report, except VALID, has a row: the compiler checks it.
const SERVICE_CODES_HAVE_ROWS: Exclude<KnownVerifyCode, "VALID"> extends PolicyOutcome ? true : never = true;
void SERVICE_CODES_HAVE_ROWS;

/**
 * Outcomes whose answer is not in the table, so `policy` cannot change them: the middleware sets
 * their status itself. Each with the reason given to a user who tries.
 */
const FIXED_OUTCOMES: Readonly<Record<string, string>> = Object.freeze({
  VALID: "a valid key always passes",
  [ERROR_CODES.serviceUnavailable]: "a key service that cannot answer is always 503 with Retry-After",
  [ERROR_CODES.verificationFailed]: "a verification that fails by misconfiguration is always 500",
  [ERROR_CODES.insufficientScope]: 'a guard\'s refusal is always 403 error="insufficient_scope"',
  [ERROR_CODES.tooManyUnknownKeys]: "an address over unknownKeyLimit is always 429 with Retry-After",
} satisfies Record<FixedOutcome, string>);

/**
 * Ready-made overrides. `forbidden`: the spec's "403 for anything except NOT_FOUND": every
 * rejected key is 403 except an unknown one (401); a missing key stays 401.
 */
export const STATUS_PRESETS = Object.freeze({
  default: Object.freeze({}) as StatusPolicyOverrides,
  forbidden: Object.freeze({
    EXPIRED: rule(403, "invalid_token"),
    DISABLED: rule(403, "invalid_token"),
    FORBIDDEN: rule(403, "insufficient_scope"),
    INSUFFICIENT_PERMISSIONS: rule(403, "insufficient_scope"),
    RATE_LIMITED: rule(403),
    USAGE_EXCEEDED: rule(403),
    UNKNOWN: rule(403, "invalid_token"),
  }) as StatusPolicyOverrides,
});

const BEARER_ERRORS: readonly BearerError[] = Object.freeze(["invalid_request", "invalid_token", "insufficient_scope"]);

const check: OptionChecks = optionChecks("apiKeyAuth", ConfigError);

function errorForStatus(outcome: string, status: number): BearerError | undefined {
  if (outcome === "MISSING_KEY") return undefined;
  if (status === 401) return "invalid_token";
  if (status === 403) return "insufficient_scope";
  if (status === 400) return "invalid_request";
  return undefined;
}

function toRule(outcome: string, value: unknown): StatusRule {
  const where = `policy.${outcome}`;
  const raw = typeof value === "number" ? { status: value } : value;
  if (typeof raw !== "object" || raw === null)
    check.invalid(where, value, 'Use a status like 401 or { status: 401, error: "invalid_token" }.');
  const { status, error } = raw as { status?: unknown; error?: unknown };
  const checked = check.integer(`${where}.status`, status, { min: 400, max: 599, note: "a denial's status" });
  const bearerError = typeof value === "number" ? errorForStatus(outcome, checked) : check.oneOf(`${where}.error`, error, BEARER_ERRORS);
  return rule(checked, bearerError);
}

/**
 * Merges overrides over the default table into a new frozen table. Throws {@link ConfigError};
 * warns once on `logger` about codes that neither the table nor the service's protocol knows
 * (a typo, or a code a newer service may send: such an entry is kept).
 */
export function buildStatusPolicy(overrides: StatusPolicyOverrides | undefined, logger: Logger): StatusPolicy {
  if (overrides === undefined) return DEFAULT_STATUS_POLICY;
  check.object("policy", overrides, "Pass an object of overrides, e.g. { EXPIRED: 403 } or STATUS_PRESETS.forbidden.");
  const table: Record<string, StatusRule> = { ...DEFAULT_STATUS_POLICY };
  for (const [outcome, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    const fixed = Object.hasOwn(FIXED_OUTCOMES, outcome) ? FIXED_OUTCOMES[outcome] : undefined;
    if (fixed !== undefined) {
      const hook = outcome === "VALID" ? "" : ` To answer it differently, use onDenied (err.code === "${outcome}").`;
      check.fail(`policy.${outcome}`, `policy.${outcome} cannot be set; ${fixed}.${hook} Remove it.`);
    }
    if (!/^[A-Z][A-Z0-9_]*$/.test(outcome)) {
      check.fail("policy", `policy key ${JSON.stringify(outcome)} is not a code; codes are upper case, e.g. EXPIRED or MISSING_KEY.`);
    }
    table[outcome] = toRule(outcome, value);
  }
  const found = findUnknownOptions(Object.keys(table), Object.keys(DEFAULT_STATUS_POLICY));
  if (found !== undefined) {
    logger.warn(
      { unknownCodes: found.names, didYouMean: found.didYouMean },
      `apiKeyAuth: policy names unknown code(s) ${found.names.join(", ")} (neither a row of the status table nor a code the key service is known to send); each applies only if the service answers it`,
    );
  }
  return Object.freeze(table) as StatusPolicy;
}

/** The rule for an outcome; codes the table does not list use `UNKNOWN`. */
export function ruleFor(policy: StatusPolicy, outcome: string): StatusRule {
  return Object.hasOwn(policy, outcome) && outcome !== "VALID" ? policy[outcome]! : policy.UNKNOWN;
}
