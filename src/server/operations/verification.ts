// keys.verifyKey: the order of checks. The checksum of a key that claims the checksummed format,
// before any store read (NOT_FOUND) → lookup, workspace and root-key grant (NOT_FOUND) → DISABLED
// → EXPIRED → the API's, then the key's IP allow-list (FORBIDDEN) → permission query → rate limits
// → credits.
// Runs on `Storage.direct`: its only writes are the atomic `limit` and `spendCredits` (a charge that
// crosses a credits threshold runs in a transaction of its own, with its webhook messages). Every outcome
// for a key of the caller's workspace is noted as a verification event (NOT_FOUND is not: no key).
import { createHash } from "node:crypto";
import { PermissionQuerySyntaxError, evaluatePermissionQuery, parsePermissionQuery } from "../../protocol/permission-query";
import type { VerifyKeyRequest, VerifyKeyResult, VerifyRatelimitState } from "../../protocol/types";
import type { ApiGrant } from "./authorization";
import { encodeBase58 } from "../../protocol/base58";
import { creditsAt, dueRefill } from "../domain/credits";
import { creditsEvents, lowThreshold } from "../webhooks/credits-events";
import { ServiceError } from "../errors";
import { described } from "../domain/caller-value";
import { keyHash } from "../../protocol/key-hash";
import { failsChecksum } from "../../protocol/key-checksum";
import { allowsAddress } from "../domain/ip-allowlist";
import { verifyMigratedKey } from "./key-migrations";
import type { OpContext } from "./operation";
import { CHECKSUM_REJECTED } from "../domain/key-material";
import { limitCounter, type LimitCheck } from "../domain/sliding-window";
import type { IdentityRecord, KeyRecord, RatelimitRecord } from "../records";
import { identityView, type KeyRelations } from "../domain/views";
import { keyRelations } from "./lookup";

const NOT_FOUND: VerifyKeyResult = Object.freeze({ valid: false, code: "NOT_FOUND" });

const NO_TAGS: readonly string[] = Object.freeze([]);

/** The relations of a key without any: only read (`describe` copies no empty list into an answer). */
const NO_RELATIONS: KeyRelations = { permissions: [], roles: [], identity: undefined };

/** Id of an inline (request-defined) rate limit: stable per key and name. */
export function inlineLimitId(keyId: string, name: string): string {
  const digest = createHash("sha256").update(`${keyId}\0${name}`).digest();
  return `rl_${encodeBase58(digest.subarray(0, 12))}`;
}

interface SelectedLimit {
  config: RatelimitRecord;
  cost: number;
  /** The key or identity the limit belongs to. */
  owner: string;
}

const NO_LIMITS: readonly SelectedLimit[] = Object.freeze([]);

function selectLimits(key: KeyRecord, identity: IdentityRecord | undefined, body: VerifyKeyRequest): readonly SelectedLimit[] {
  // Most verifications: no limit configured, none asked for.
  if (key.ratelimits.length === 0 && (identity === undefined || identity.ratelimits.length === 0) && !body.ratelimits?.length) {
    return NO_LIMITS;
  }
  // The key's own limit replaces its identity's limit of the same name.
  const inherited = (identity?.ratelimits ?? []).filter((rl) => !key.ratelimits.some((own) => own.name === rl.name));
  const configured = [
    ...key.ratelimits.map((config) => ({ config, owner: key.id })),
    ...inherited.map((config) => ({ config, owner: identity!.id })),
  ];
  const selected = new Map<string, SelectedLimit>();
  for (const c of configured) if (c.config.autoApply) selected.set(c.config.id, { ...c, cost: 1 });
  for (const [i, req] of (body.ratelimits ?? []).entries()) {
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
        `${described(`body.ratelimits[${i}].name`, req.name)} is not a rate limit of this key or its identity. Configure it, or pass limit and duration for an inline limit.`,
      );
    }
  }
  return [...selected.values()];
}

function parseQuery(permissions: string) {
  try {
    return parsePermissionQuery(permissions);
  } catch (err) {
    if (!(err instanceof PermissionQuerySyntaxError)) throw err;
    throw new ServiceError("bad_request.permissions_query_syntax_error", `Invalid permission query: ${err.message}`, {
      errors: [{ location: "body.permissions", message: err.message, fix: "Use permission names joined by AND, OR and parentheses." }],
    });
  }
}

/**
 * Runs every check in order and returns the verification outcome (HTTP 200 in every case).
 * `verifiable`: the APIs whose keys the root key may verify (the operation's authorisation).
 */
export async function verifyKey(ctx: OpContext, body: VerifyKeyRequest, verifiable: ApiGrant): Promise<VerifyKeyResult> {
  const { tx, root, now } = ctx;
  // A mistyped or made-up key of the checksummed format is refused before any lookup.
  if (failsChecksum(body.key)) return CHECKSUM_REJECTED;
  const mayVerify = (k: KeyRecord) => verifiable(k.apiId);
  let key = await tx.keyByHash(keyHash(body.key));
  // A key imported in another system's hash form verifies (and is rehashed) under its migration.
  if (!key && body.migrationId) key = await verifyMigratedKey(tx, root.workspaceId, body.migrationId, body.key, mayVerify);
  // A key of another workspace, or of an API this root key may not verify (no verify grant at
  // all included), is not found: not even DISABLED or EXPIRED is revealed.
  if (!key || key.workspaceId !== root.workspaceId || !mayVerify(key)) return { ...NOT_FOUND };
  // Most keys have no roles, permissions or identity: only their API is read.
  const plain = key.roleIds.length === 0 && key.permissionIds.length === 0 && key.identityId === undefined;
  const [rel, api] = plain
    ? [NO_RELATIONS, await tx.get("apis", key.apiId)]
    : await Promise.all([keyRelations(tx, key), tx.get("apis", key.apiId)]);
  // A key whose API is gone is not found, whatever rows a store may have left.
  if (!api) return { ...NOT_FOUND };
  // Until charged, the balance shown is the one a refill that fell due gives.
  let credits = key.credits && creditsAt(key.credits, now).remaining;
  let spentCredits = 0;
  const outcome = (code: string, ratelimits?: VerifyRatelimitState[]): VerifyKeyResult => {
    ctx.record({
      time: now,
      workspaceId: key.workspaceId,
      keySpaceId: key.apiId,
      keyId: key.id,
      identityId: rel.identity?.id ?? "",
      externalId: rel.identity?.externalId ?? "",
      outcome: code,
      // The request's own array (nothing changes it after parsing); the stores copy or serialise it.
      tags: body.tags ?? NO_TAGS,
      spentCredits,
      requestId: ctx.requestId,
      region: "local",
    });
    return describe(key, rel, code, credits, ratelimits);
  };
  // A refusal before the charge reports the balance as stored: the key found by its hash may be a
  // store's kept copy (the PostgreSQL store's record cache), whose balance lags the charges; read
  // by its id it never does. Only keys with credits pay this read, and only when refused.
  const refuse = async (code: string, ratelimits?: VerifyRatelimitState[]): Promise<VerifyKeyResult> => {
    if (key.credits) {
      const stored = (await tx.get("keys", key.id))?.credits;
      credits = stored && creditsAt(stored, now).remaining;
    }
    return outcome(code, ratelimits);
  };
  if (!key.enabled) return refuse("DISABLED");
  if (key.expires !== undefined && key.expires <= now) return refuse("EXPIRED");
  if (api?.ipWhitelist && !allowsAddress(api.ipWhitelist, ctx.ip)) return refuse("FORBIDDEN");
  if (key.ipWhitelist && !allowsAddress(key.ipWhitelist, ctx.ip)) return refuse("FORBIDDEN");
  if (body.permissions !== undefined && !evaluatePermissionQuery(parseQuery(body.permissions), rel.permissions)) {
    return refuse("INSUFFICIENT_PERMISSIONS");
  }

  const limits = selectLimits(key, rel.identity, body);
  let states: VerifyRatelimitState[] | undefined;
  if (limits.length > 0) {
    const checks: LimitCheck[] = limits.map((l) => ({
      counter: limitCounter(l.config.id, l.config.duration),
      limit: l.config.limit,
      duration: l.config.duration,
      cost: l.cost,
      owner: l.owner,
    }));
    const result = await tx.limit(checks, now);
    states = limits.map((l, i) => {
      const s = result.states[i]!;
      return { ...l.config, remaining: s.remaining, reset: s.reset, exceeded: !s.passed };
    });
    if (!result.passed) return refuse("RATE_LIMITED", states);
  }

  if (key.credits) {
    const cost = body.credits?.cost ?? 1;
    const refill = dueRefill(key.credits, now);
    let spent = await tx.spendCredits(key.id, cost, now, refill, { lowThreshold: lowThreshold(key, api) });
    // A charge that crosses the low threshold or reaches 0 causes webhook events: it is made in a
    // transaction of its own with their messages (rare: once per crossing).
    if (spent && !spent.ok && spent.crossing) {
      spent = await ctx.webhooks.chargeWithEvents(key.id, cost, now, refill, (charged) =>
        creditsEvents(key, api, cost, charged.remaining, now),
      );
    }
    // undefined: the key lost its credits (or was deleted) since it was read; nothing to charge.
    credits = spent?.remaining;
    if (spent && !spent.ok) return outcome("USAGE_EXCEEDED", states);
    if (spent) spentCredits = cost;
  }
  return outcome("VALID", states);
}

function describe(
  key: KeyRecord,
  rel: KeyRelations,
  code: string,
  credits: number | undefined,
  ratelimits: VerifyRatelimitState[] | undefined,
): VerifyKeyResult {
  const out: VerifyKeyResult = { valid: code === "VALID", code, keyId: key.id };
  if (key.name !== undefined) out.name = key.name;
  if (key.meta !== undefined) out.meta = key.meta;
  if (key.expires !== undefined) out.expires = key.expires;
  if (credits !== undefined) out.credits = credits;
  out.enabled = key.enabled;
  if (rel.permissions.length > 0) out.permissions = rel.permissions;
  if (rel.roles.length > 0) out.roles = rel.roles;
  if (rel.identity) out.identity = identityView(rel.identity);
  if (ratelimits) out.ratelimits = ratelimits;
  return out;
}
