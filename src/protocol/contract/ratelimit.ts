// The ratelimit.* operations: sliding-window limits per namespace and identifier, and overrides.
import * as Type from "typebox";
import { listFields, MAX_LIMIT_DURATION, strict, text } from "./fields";
import { EmptyData } from "./resources";

/** A namespace by name or id. */
const Namespace = text(512);
/** An identifier, or (for overrides) a pattern where `*` matches any sequence of characters. */
const Identifier = text(512);

export const RatelimitLimitRequest = strict({
  namespace: Namespace,
  identifier: Identifier,
  limit: Type.Integer({ minimum: 1 }),
  /** Window length in milliseconds. */
  duration: Type.Integer({ minimum: 1000, maximum: MAX_LIMIT_DURATION }),
  cost: Type.Optional(Type.Integer({ minimum: 0 })),
});

export const RatelimitLimitResult = Type.Object({
  limit: Type.Integer(),
  remaining: Type.Integer(),
  reset: Type.Integer(),
  success: Type.Boolean(),
  /** The override that set `limit` (and the window), when one matched the identifier. */
  overrideId: Type.Optional(Type.String()),
});

/** `ratelimit.multiLimit`'s body: a JSON array (1..100) of `ratelimit.limit` bodies. */
export const RatelimitMultiLimitRequest = Type.Array(RatelimitLimitRequest, { minItems: 1, maxItems: 100 });

export const RatelimitMultiLimitCheck = Type.Object({
  /** As sent (a name or an id). */
  namespace: Type.String(),
  identifier: Type.String(),
  limit: Type.Integer(),
  remaining: Type.Integer(),
  reset: Type.Integer(),
  /** Whether this limit alone passed. */
  passed: Type.Boolean(),
  overrideId: Type.Optional(Type.String()),
});

export const RatelimitMultiLimitResult = Type.Object({
  /** Whether every limit passed; when not, no limit was charged. */
  passed: Type.Boolean(),
  /** In request order. */
  limits: Type.Array(RatelimitMultiLimitCheck),
});

export const RatelimitSetOverrideRequest = strict({
  namespace: Namespace,
  identifier: Identifier,
  /** 0 rejects every request. */
  limit: Type.Integer({ minimum: 0 }),
  /** Window length in milliseconds, at least 1000. */
  duration: Type.Integer({ minimum: 1000 }),
});
export const RatelimitSetOverrideResult = Type.Object({ overrideId: Type.String() });

/** getOverride (an identifier, or a pattern's matches) and deleteOverride (exactly as set). */
export const RatelimitOverrideRequest = strict({ namespace: Namespace, identifier: Identifier });

export const RatelimitOverride = Type.Object({
  overrideId: Type.String(),
  duration: Type.Integer(),
  identifier: Type.String(),
  limit: Type.Integer(),
});

export const RatelimitListOverridesRequest = strict({ namespace: Namespace, ...listFields });

/** keyguard's own: the workspace's rate-limit namespaces the root key may read the overrides of. */
export const RatelimitListNamespacesRequest = strict({ ...listFields });
export const RatelimitNamespace = Type.Object({
  namespaceId: Type.String(),
  name: Type.String(),
  /** Unix ms: when ratelimit.limit (or multiLimit) first named it. */
  createdAt: Type.Integer(),
});

/** keyguard's own: the outcomes of ratelimit.limit in one namespace, per hour or per day (UTC). */
export const RatelimitGetNamespaceUsageRequest = strict({
  namespace: Namespace,
  /** Unix ms, inclusive: taken back to the start of its hour or day. */
  start: Type.Integer({ minimum: 0 }),
  /** Unix ms, exclusive: taken forward to the end of its hour or day. At most 31 days after start by hour, 366 by day. */
  end: Type.Integer({ minimum: 1 }),
  /** One point per hour (the default) or per day, in UTC. */
  granularity: Type.Optional(Type.Enum(["hour", "day"], { type: "string" })),
});
export const RatelimitUsagePoint = Type.Object({
  /** Unix ms: the start of the hour or day. */
  time: Type.Integer(),
  /** ratelimit.limit calls that passed. */
  passed: Type.Integer(),
  /** ratelimit.limit calls that were refused. */
  limited: Type.Integer(),
  /** passed + limited. */
  total: Type.Integer(),
});

export const ratelimitOperations = {
  "ratelimit.limit": { request: RatelimitLimitRequest, response: RatelimitLimitResult },
  "ratelimit.multiLimit": { request: RatelimitMultiLimitRequest, response: RatelimitMultiLimitResult },
  "ratelimit.setOverride": { request: RatelimitSetOverrideRequest, response: RatelimitSetOverrideResult },
  "ratelimit.getOverride": { request: RatelimitOverrideRequest, response: RatelimitOverride },
  "ratelimit.listOverrides": { request: RatelimitListOverridesRequest, response: Type.Array(RatelimitOverride) },
  "ratelimit.deleteOverride": { request: RatelimitOverrideRequest, response: EmptyData },
} as const;

export const ratelimitExtensions = {
  "ratelimit.listNamespaces": { request: RatelimitListNamespacesRequest, response: Type.Array(RatelimitNamespace) },
  "ratelimit.getNamespaceUsage": { request: RatelimitGetNamespaceUsageRequest, response: Type.Array(RatelimitUsagePoint) },
} as const;
