// What a verification asks besides the key: permission query, credit cost, rate limits, tags,
// fixed or computed per request. Also decides whether the answer may come from the cache. The
// permission query is parsed here, once per shape (so once at factory time when it is fixed).

import { parsePermissionQuery } from "../protocol/permission-query";
import type { VerifyKeyRequest } from "../protocol/types";
import { scopeOf } from "./denials";
import type { PerRequest, VerifyRatelimit } from "./options";

export type VerifyShape = Omit<VerifyKeyRequest, "key">;

export interface ResolvedShape {
  readonly body: VerifyShape;
  /** No cost and no rate limits were sent: the answer may be cached and shared. */
  readonly cacheable: boolean;
  /** The part of the cache key that can change the answer: the permission query, or "". */
  readonly query: string;
  /** The RFC 6750 `scope` of an `insufficient_scope` denial for this query, when it can say it. */
  readonly scope: string | undefined;
}

/** A computed option returned a value the service would reject (this server's misconfiguration). */
export class ShapeError extends Error {
  override readonly name = "ShapeError";
}

const MAX_COST = 1e12;
const MAX_TAGS = 20;

/** A problem with a cost value (as a phrase to follow the option's name), or undefined. */
export function checkCost(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > MAX_COST) {
    return `is ${JSON.stringify(v)}; use a whole number of credits from 0 to 1e12.`;
  }
  return undefined;
}

export function checkRatelimits(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) return `is ${JSON.stringify(v)}; use an array like [{ name: "requests" }].`;
  for (const [i, r] of v.entries()) {
    const item = r as Partial<VerifyRatelimit> | null;
    if (typeof item !== "object" || item === null || typeof item.name !== "string" || item.name === "") {
      return `[${i}] needs a non-empty name, e.g. { name: "requests" }.`;
    }
    for (const field of ["cost", "limit", "duration"] as const) {
      const n = item[field];
      if (n !== undefined && (typeof n !== "number" || !Number.isInteger(n) || n < 0)) {
        return `[${i}].${field} is ${JSON.stringify(n)}; use a whole number ≥ 0.`;
      }
    }
  }
  return undefined;
}

export function checkTags(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.length > MAX_TAGS || v.some((t) => typeof t !== "string" || t === "")) {
    return `is ${JSON.stringify(v)}; use at most ${MAX_TAGS} non-empty strings.`;
  }
  return undefined;
}

async function valueOf<T, Req>(option: PerRequest<T, Req> | undefined, req: Req): Promise<T | undefined> {
  return typeof option === "function" ? (option as (req: Req) => T | undefined | Promise<T | undefined>)(req) : option;
}

export interface ShapeOptions<Req> {
  readonly permissions: PerRequest<string, Req> | undefined;
  readonly cost: PerRequest<number, Req> | undefined;
  readonly ratelimits: PerRequest<VerifyRatelimit[], Req> | undefined;
  readonly tags: PerRequest<string[], Req> | undefined;
}

/**
 * Computes the request shape for one request. Errors thrown by the option functions propagate;
 * a returned value the service would reject throws {@link ShapeError}.
 */
export async function resolveShape<Req>(options: ShapeOptions<Req>, req: Req): Promise<ResolvedShape> {
  const [permissions, cost, ratelimits, tags] = await Promise.all([
    valueOf(options.permissions, req),
    valueOf(options.cost, req),
    valueOf(options.ratelimits, req),
    valueOf(options.tags, req),
  ]);
  return buildShape(permissions, cost, ratelimits, tags);
}

/**
 * The shape shared by every request when no option is a function, computed once at factory
 * time; undefined when some option depends on the request.
 */
export function staticShape<Req>(options: ShapeOptions<Req>): ResolvedShape | undefined {
  const values = [options.permissions, options.cost, options.ratelimits, options.tags];
  if (values.some((v) => typeof v === "function")) return undefined;
  return buildShape(
    options.permissions as string | undefined,
    options.cost as number | undefined,
    options.ratelimits as VerifyRatelimit[] | undefined,
    options.tags as string[] | undefined,
  );
}

function buildShape(
  permissions: string | undefined,
  cost: number | undefined,
  ratelimits: VerifyRatelimit[] | undefined,
  tags: string[] | undefined,
): ResolvedShape {
  const body: VerifyShape = {};
  let scope: string | undefined;
  if (permissions !== undefined && permissions !== "") {
    if (typeof permissions !== "string") throw new ShapeError(`permissions returned ${typeof permissions}, not a query string`);
    try {
      scope = scopeOf(parsePermissionQuery(permissions));
    } catch (e) {
      throw new ShapeError(`permissions returned an invalid query: ${(e as Error).message}`);
    }
    body.permissions = permissions;
  }
  const problem = checkCost(cost) ?? checkRatelimits(ratelimits) ?? checkTags(tags);
  if (problem !== undefined) throw new ShapeError(`a computed cost, ratelimits or tags value ${problem}`);
  if (cost !== undefined) body.credits = { cost };
  if (ratelimits !== undefined && ratelimits.length > 0) body.ratelimits = ratelimits.map((r) => ({ ...r }));
  if (tags !== undefined && tags.length > 0) body.tags = [...tags];
  return Object.freeze({
    body,
    cacheable: body.credits === undefined && body.ratelimits === undefined,
    query: body.permissions ?? "",
    scope,
  });
}
