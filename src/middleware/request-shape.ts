// What a verification asks besides the key: permission query, credit cost, rate limits, tags,
// fixed or computed per request. Also decides whether the answer may come from the cache. The
// static options are resolved once, at factory time (a fixed permission query parsed then); per
// request only the option functions run, and only what they return is checked and parsed.

import { parsePermissionQuery } from "../protocol/permission-query";
import type { VerifyKeyRequest } from "../protocol/types";
import { scopeOf } from "./denials";
import type { PerRequest, VerifyRatelimit } from "./options";

type VerifyShape = Omit<VerifyKeyRequest, "key">;

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

export interface ShapeOptions<Req> {
  readonly permissions: PerRequest<string, Req> | undefined;
  readonly cost: PerRequest<number, Req> | undefined;
  readonly ratelimits: PerRequest<VerifyRatelimit[], Req> | undefined;
  readonly tags: PerRequest<string[], Req> | undefined;
}

/** How each request's shape is found, decided once at factory time. */
export interface ShapePlan<Req> {
  /** The shape of every request when no option is a function; undefined otherwise. */
  readonly fixed: ResolvedShape | undefined;
  /**
   * One request's shape: calls the option functions and checks only what they return; the static
   * options were checked, copied and parsed once. Errors thrown by the functions propagate; a
   * returned value the service would reject throws {@link ShapeError}.
   */
  readonly resolve: (req: Req) => Promise<ResolvedShape>;
}

type Computed<T, Req> = ((req: Req) => T | undefined | Promise<T | undefined>) | undefined;

const computed = <T, Req>(option: PerRequest<T, Req> | undefined): Computed<T, Req> =>
  typeof option === "function" ? (option as Computed<T, Req>) : undefined;

async function valueOf<T, Req>(fn: Computed<T, Req>, req: Req): Promise<T | undefined> {
  return fn === undefined ? undefined : fn(req);
}

/** The body's part for a permission query, and its `scope`; "" or undefined sends none. */
function permissionPart(permissions: string | undefined): { body: VerifyShape; scope: string | undefined } {
  if (permissions === undefined || permissions === "") return { body: {}, scope: undefined };
  return { body: { permissions }, scope: scopeOf(parsePermissionQuery(permissions)) };
}

function computedPermissions(value: unknown): { body: VerifyShape; scope: string | undefined } {
  if (value !== undefined && value !== "" && typeof value !== "string") {
    throw new ShapeError(`permissions returned ${typeof value}, not a query string`);
  }
  try {
    return permissionPart(value);
  } catch (e) {
    throw new ShapeError(`permissions returned an invalid query: ${(e as Error).message}`);
  }
}

const costPart = (cost: number | undefined): VerifyShape => (cost === undefined ? {} : { credits: { cost } });
const ratelimitsPart = (ratelimits: readonly VerifyRatelimit[] | undefined): VerifyShape =>
  ratelimits === undefined || ratelimits.length === 0 ? {} : { ratelimits: ratelimits.map((r) => ({ ...r })) };
const tagsPart = (tags: readonly string[] | undefined): VerifyShape =>
  tags === undefined || tags.length === 0 ? {} : { tags: [...tags] };

function shapeOf(body: VerifyShape, scope: string | undefined): ResolvedShape {
  return Object.freeze({
    body,
    cacheable: body.credits === undefined && body.ratelimits === undefined,
    query: body.permissions ?? "",
    scope,
  });
}

/**
 * Plans the request shape once, at factory time. The static options must already be valid (the
 * options' parser checks them): here they are resolved into the parts of the body they give.
 */
export function planShape<Req>(options: ShapeOptions<Req>): ShapePlan<Req> {
  const fn = {
    permissions: computed(options.permissions),
    cost: computed(options.cost),
    ratelimits: computed(options.ratelimits),
    tags: computed(options.tags),
  };
  const fixedPermissions = fn.permissions === undefined ? permissionPart(options.permissions as string | undefined) : undefined;
  const fixedCost = fn.cost === undefined ? costPart(options.cost as number | undefined) : undefined;
  const fixedRatelimits = fn.ratelimits === undefined ? ratelimitsPart(options.ratelimits as VerifyRatelimit[] | undefined) : undefined;
  const fixedTags = fn.tags === undefined ? tagsPart(options.tags as string[] | undefined) : undefined;

  if (fixedPermissions !== undefined && fixedCost !== undefined && fixedRatelimits !== undefined && fixedTags !== undefined) {
    const fixed = shapeOf({ ...fixedPermissions.body, ...fixedCost, ...fixedRatelimits, ...fixedTags }, fixedPermissions.scope);
    return Object.freeze({ fixed, resolve: () => Promise.resolve(fixed) });
  }

  const resolve = async (req: Req): Promise<ResolvedShape> => {
    const [permissions, cost, ratelimits, tags] = await Promise.all([
      valueOf(fn.permissions, req),
      valueOf(fn.cost, req),
      valueOf(fn.ratelimits, req),
      valueOf(fn.tags, req),
    ]);
    const query = fixedPermissions ?? computedPermissions(permissions);
    const problem = checkCost(cost) ?? checkRatelimits(ratelimits) ?? checkTags(tags);
    if (problem !== undefined) throw new ShapeError(`a computed cost, ratelimits or tags value ${problem}`);
    return shapeOf(
      {
        ...query.body,
        ...(fixedCost ?? costPart(cost)),
        ...(fixedRatelimits ?? ratelimitsPart(ratelimits)),
        ...(fixedTags ?? tagsPart(tags)),
      },
      query.scope,
    );
  };
  return Object.freeze({ fixed: undefined, resolve });
}
