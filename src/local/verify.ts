// keys.verifyKey: the order of checks. Lookup, workspace and root-key grant (NOT_FOUND) → DISABLED
// → EXPIRED → API IP allowlist (FORBIDDEN) → permission query → rate limits → credits.
import { createHash } from "node:crypto";
import {
  PermissionQuerySyntaxError,
  evaluatePermissionQuery,
  parsePermissionQuery,
} from "../protocol/permission-query";
import type { VerifyKeyRequest, VerifyKeyResult, VerifyRatelimitState } from "../protocol/types";
import { canOnApi, requireSomeApiGrant } from "./auth";
import { encodeBase58 } from "./base58";
import { applyRefill, charge } from "./credits";
import { ServiceError } from "./envelope";
import { hashKey } from "./key-material";
import type { OpContext } from "./operation";
import { checkLimits, limitCounter, type LimitCheck } from "./ratelimit";
import { getRecord, type KeyRecord, type RatelimitRecord } from "./store";
import { effectivePermissionSlugs, identityView, keyIdentity, roleNames } from "./views";

const NOT_FOUND: VerifyKeyResult = Object.freeze({ valid: false, code: "NOT_FOUND" });

/** Id of an inline (request-defined) rate limit: stable per key and name. */
function inlineLimitId(keyId: string, name: string): string {
  const digest = createHash("sha256").update(`${keyId}\0${name}`).digest();
  return `rl_${encodeBase58(digest.subarray(0, 12))}`;
}

/** Normalises `::ffff:127.0.0.1` to `127.0.0.1`. */
function plainIp(ip: string): string {
  return ip.startsWith("::ffff:") ? ip.slice(7) : ip;
}

interface SelectedLimit {
  config: RatelimitRecord;
  cost: number;
  /** The key or identity the limit belongs to. */
  owner: string;
}

function selectLimits(ctx: OpContext, key: KeyRecord, body: VerifyKeyRequest): SelectedLimit[] {
  const identity = keyIdentity(ctx.store, key);
  // The key's own limit replaces its identity's limit of the same name.
  const inherited = (identity?.ratelimits ?? []).filter((rl) => !key.ratelimits.some((own) => own.name === rl.name));
  const configured = [
    ...key.ratelimits.map((config) => ({ config, owner: key.id })),
    ...inherited.map((config) => ({ config, owner: identity!.id })),
  ];
  const selected = new Map<string, SelectedLimit>();
  for (const c of configured) if (c.config.autoApply) selected.set(c.config.id, { ...c, cost: 1 });
  for (const req of body.ratelimits ?? []) {
    const found = configured.find((c) => c.config.name === req.name);
    if (found) {
      const config = { ...found.config, limit: req.limit ?? found.config.limit, duration: req.duration ?? found.config.duration };
      selected.set(found.config.id, { config, cost: req.cost ?? 1, owner: found.owner });
    } else if (req.limit !== undefined && req.duration !== undefined) {
      const id = inlineLimitId(key.id, req.name);
      const config = { id, name: req.name, limit: req.limit, duration: req.duration, autoApply: false };
      selected.set(id, { config, cost: req.cost ?? 1, owner: key.id });
    } else {
      throw new ServiceError(
        "application.precondition_failed",
        `The rate limit ${JSON.stringify(req.name)} is not configured on this key or its identity. Configure it, or pass limit and duration for an inline limit.`,
      );
    }
  }
  return [...selected.values()];
}

/** Runs every check in order and returns the verification outcome (HTTP 200 in every case). */
export function verifyKey(ctx: OpContext, body: VerifyKeyRequest): VerifyKeyResult {
  const { store, root, now } = ctx;
  requireSomeApiGrant(root, "verify_key");
  const key = store.keyByHashValue(hashKey(body.key));
  // A key of another workspace, or of an API this root key may not verify, is not found:
  // not even DISABLED or EXPIRED is revealed.
  if (!key || key.workspaceId !== root.workspaceId || !canOnApi(root, "verify_key", key.apiId)) return { ...NOT_FOUND };
  if (applyRefill(key.credits, now)) store.touch();
  const outcome = (code: string, extra: Partial<VerifyKeyResult> = {}): VerifyKeyResult => describe(ctx, key, code, extra);
  if (!key.enabled) return outcome("DISABLED");
  if (key.expires !== undefined && key.expires <= now) return outcome("EXPIRED");

  const api = getRecord(store.state.apis, key.apiId);
  if (api?.ipWhitelist && !api.ipWhitelist.includes(plainIp(ctx.ip))) return outcome("FORBIDDEN");

  if (body.permissions !== undefined) {
    let query;
    try {
      query = parsePermissionQuery(body.permissions);
    } catch (err) {
      if (!(err instanceof PermissionQuerySyntaxError)) throw err;
      throw new ServiceError("bad_request.permissions_query_syntax_error", `Invalid permission query: ${err.message}`, {
        errors: [{ location: "body.permissions", message: err.message, fix: "Use permission names joined by AND, OR and parentheses." }],
      });
    }
    if (!evaluatePermissionQuery(query, effectivePermissionSlugs(store, key))) {
      return outcome("INSUFFICIENT_PERMISSIONS");
    }
  }

  const limits = selectLimits(ctx, key, body);
  let states: VerifyRatelimitState[] | undefined;
  if (limits.length > 0) {
    const checks: LimitCheck[] = limits.map((l) => ({
      counter: limitCounter(l.config.id, l.config.duration),
      limit: l.config.limit,
      duration: l.config.duration,
      cost: l.cost,
      owner: l.owner,
    }));
    const result = checkLimits(store.state.windows, checks, now);
    states = limits.map((l, i) => {
      const s = result.states[i]!;
      return { ...l.config, remaining: s.remaining, reset: s.reset, exceeded: !s.passed };
    });
    if (!result.passed) return outcome("RATE_LIMITED", { ratelimits: states });
    store.touch();
  }

  const charged = charge(key.credits, body.credits?.cost ?? 1);
  const extra = states ? { ratelimits: states } : {};
  if (!charged.ok) return outcome("USAGE_EXCEEDED", extra);
  if (key.credits) store.touch();
  return outcome("VALID", extra);
}

function describe(ctx: OpContext, key: KeyRecord, code: string, extra: Partial<VerifyKeyResult>): VerifyKeyResult {
  const out: VerifyKeyResult = { valid: code === "VALID", code, keyId: key.id };
  if (key.name !== undefined) out.name = key.name;
  if (key.meta !== undefined) out.meta = key.meta;
  if (key.expires !== undefined) out.expires = key.expires;
  if (key.credits) out.credits = key.credits.remaining;
  out.enabled = key.enabled;
  const permissions = effectivePermissionSlugs(ctx.store, key);
  if (permissions.length > 0) out.permissions = permissions;
  const roles = roleNames(ctx.store, key);
  if (roles.length > 0) out.roles = roles;
  const identity = keyIdentity(ctx.store, key);
  if (identity) out.identity = identityView(identity);
  if (extra.ratelimits) out.ratelimits = extra.ratelimits;
  return out;
}
