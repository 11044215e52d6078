// What a verification asks besides the key: permission query, credit cost, rate limits, tags,
// fixed or computed per request. Also decides whether the answer may come from the cache. The
// static options are resolved once, at factory time (a fixed permission query parsed then); per
// request only the option functions run, and only what they return is checked and parsed.

import { describeValue as show } from "../config-error";
import { checkValue } from "../protocol/contract/check";
import { checkUniqueNames } from "../protocol/contract/cross-field";
import { VerifyKeyRequest } from "../protocol/contract/keys";
import { parsePermissionQuery } from "../protocol/permission-query";
import type { VerifyKeyRequest as VerifyKeyBody } from "../protocol/types";
import { scopeOf } from "./denials";

/** A fixed value, or one computed from the request (sync or async); undefined = not sent. */
export type PerRequest<T, Req> = T | ((req: Req) => T | undefined | Promise<T | undefined>);

/** A rate limit to check and charge during verification (by name, or inline with limit and duration). */
export type VerifyRatelimit = NonNullable<VerifyKeyBody["ratelimits"]>[number];

type VerifyShape = Omit<VerifyKeyBody, "key">;

export interface ResolvedShape {
  readonly body: VerifyShape;
  /** No cost and no rate limits were sent: the answer may be cached and shared. */
  readonly cacheable: boolean;
  /** The part of the cache key that can change the answer: the permission query, or "". */
  readonly query: string;
  /** The RFC 6750 `scope` of an `insufficient_scope` denial for this query, when it can say it. */
  readonly scope: string | undefined;
}

/** A computed option returned a value the service would refuse (this server's misconfiguration). */
export class ShapeError extends Error {
  override readonly name = "ShapeError";
}

/** The options that go into the verifyKey body as they are, with their schemas in the contract. */
const OPTION_SCHEMAS = {
  cost: VerifyKeyRequest.properties.credits.properties.cost,
  ratelimits: VerifyKeyRequest.properties.ratelimits,
  tags: VerifyKeyRequest.properties.tags,
} as const;

type ShapeOptionName = keyof typeof OPTION_SCHEMAS;

/** What to do instead, when the contract gives no remedy of its own. */
const OPTION_FIXES: Readonly<Record<ShapeOptionName, string>> = {
  cost: "Use a whole number of credits, e.g. cost: 1.",
  ratelimits: 'Use an array like [{ name: "requests", limit: 100, duration: 60_000 }] (duration in ms).',
  tags: 'Use an array of short, non-empty strings, e.g. ["checkout"].',
};

/** The value at `location` (`ratelimits[0].name`) within the option's value. */
function valueAt(option: unknown, location: string): unknown {
  let v = option;
  for (const step of location.split(/\.|\[(\d+)\]/).slice(1)) {
    if (step === undefined || step === "") continue;
    v = typeof v === "object" && v !== null && Object.hasOwn(v, step) ? (v as Record<string, unknown>)[step] : undefined;
  }
  return v;
}

/** The value as config errors show it, with its kind when it is a primitive: `0 (a number)`. */
function withKind(value: unknown): string {
  const shown = show(value);
  return value !== null && typeof value !== "object" && typeof value !== "function" ? `${shown} (a ${typeof value})` : shown;
}

/**
 * What the key service would refuse in the value of option `name` (the first problem, as a sentence
 * naming the option's path, the value (described, not quoted, when `quote` is false) and the fix), or undefined. Checked against the contract's
 * keys.verifyKey request, unique rate-limit names included.
 */
export function checkShapeOption(name: ShapeOptionName, value: unknown, quote = true): string | undefined {
  if (value === undefined) return undefined;
  const problem =
    checkValue(OPTION_SCHEMAS[name], value, { location: name, maxErrors: 1 })[0] ??
    (name === "ratelimits" ? checkUniqueNames(name, value as Array<{ name: string }>)[0] : undefined);
  if (problem === undefined) return undefined;
  const fix = problem.fix ?? OPTION_FIXES[name];
  const at = valueAt(value, problem.location);
  if (at === undefined) return `${problem.location} ${problem.message}. ${fix}`;
  const message = problem.message.replace(/, got \w+$/, "");
  // A value computed per request may come from the request: described, never repeated.
  const shown = quote
    ? withKind(at)
    : typeof at === "string"
      ? `a string of ${at.length} character${at.length === 1 ? "" : "s"}`
      : `a ${typeof at}`;
  return `${problem.location} is ${shown}, which the key service refuses: ${message}. ${fix}`;
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
const tagsPart = (tags: readonly string[] | undefined): VerifyShape => (tags === undefined || tags.length === 0 ? {} : { tags: [...tags] });

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
    const problem =
      checkShapeOption("cost", cost, false) ?? checkShapeOption("ratelimits", ratelimits, false) ?? checkShapeOption("tags", tags, false);
    if (problem !== undefined) throw new ShapeError(`computed ${problem}`);
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
