// Request fields shared by several operations, with the limits the service enforces: ids, slugs,
// metadata, credits, rate limits, paging. `x-fix` is keyguard's own keyword: the remedy a 400 gives.
import * as Type from "typebox";

/** Deepest nesting of objects and arrays accepted in free-form metadata (the object itself is level 1). */
export const MAX_META_DEPTH = 32;
/** Largest free-form metadata accepted, in bytes of its JSON encoding. */
export const MAX_META_BYTES = 64 * 1024;
/** Latest accepted `expires` (and rerollKey `expiration`): 2100-01-01T00:00:00Z in Unix ms. */
export const MAX_EXPIRES = 4102444800000;
/** Longest window of `ratelimit.limit`: 30 days in ms. */
export const MAX_LIMIT_DURATION = 30 * 24 * 60 * 60 * 1000;
/** Largest credit cost of one verification. */
export const MAX_COST = 1e12;

/** A non-empty string (the default of every string field) of at most `max` characters. */
export const text = (maxLength?: number, options: Record<string, unknown> = {}) =>
  Type.String({ minLength: 1, ...(maxLength === undefined ? {} : { maxLength }), ...options });

/** A request body or nested request object: unknown fields are refused. */
export const strict = <P extends Type.TProperties>(properties: P) => Type.Object(properties, { additionalProperties: false });

/** A field that may be sent as `null` (to clear it). */
export const nullable = <T extends Type.TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** A permission slug: 1..128 of letters, digits and `_ : - . *`. */
export const Slug = text(128, { pattern: "^[a-zA-Z0-9_:\\-\\.\\*]+$", "x-fix": "Use letters, digits and _ : - . * only." });

/** A resource id as production checks it: 3..255 of letters, digits and `_` (`min` 8 for getApi/deleteApi). */
export const id = (minLength = 3) =>
  Type.String({
    minLength,
    maxLength: 255,
    pattern: "^[a-zA-Z0-9_]+$",
    "x-fix": "Use the id as returned, e.g. key_… (letters, digits and underscores).",
  });

/** Unix ms, up to 2100-01-01. */
export const Expires = Type.Integer({ minimum: 0, maximum: MAX_EXPIRES });

/** The caller's own id of an identity: 1..255 of letters, digits and `_ . -` (an e-mail address is refused). */
export const ExternalId = text(255, {
  pattern: "^[a-zA-Z0-9_.-]+$",
  "x-fix": "Use letters, digits and _ . - only (e.g. a user id, not an e-mail address).",
});

/**
 * A free-form JSON object. Written as plain JSON Schema rather than `Type.Record`, whose builder
 * would bring TypeBox's type engine (about 40 KB) into the middleware's bundle.
 */
export const freeForm = (options: Record<string, unknown> = {}) =>
  Type.Unsafe<Record<string, unknown>>({ type: "object", additionalProperties: true, ...options });

/** Free-form JSON metadata of a key or an identity: at most 100 top-level fields, 32 levels, 64 KiB of JSON. */
export const Meta = freeForm({ maxProperties: 100, "x-maxDepth": MAX_META_DEPTH, "x-maxJsonBytes": MAX_META_BYTES });

/** A role name in a key's `roles[]`, createRole, getRole and deleteRole. */
export const RoleName = text(128);

/** A rate limit as configured on a key or an identity. */
export const RatelimitRequest = strict({
  name: text(128, { minLength: 3 }),
  limit: Type.Integer({ minimum: 1 }),
  /** Window length in milliseconds, at least 1000. */
  duration: Type.Integer({ minimum: 1000 }),
  autoApply: Type.Boolean(),
});

/** The rate limits of a key or an identity: at most 50, names unique (checked beside the operations). */
export const RatelimitList = Type.Array(RatelimitRequest, { maxItems: 50 });

export const RefillInterval = Type.Enum(["daily", "monthly"], { type: "string" });

export const CreditsRefill = strict({
  interval: RefillInterval,
  amount: Type.Integer({ minimum: 1 }),
  /** Day of the month (1..31) for monthly refills; clamped to the month's last day. */
  refillDay: Type.Optional(Type.Integer({ minimum: 1, maximum: 31 })),
});

export const Credits = strict({
  /** Remaining uses; `null` means unlimited. */
  remaining: nullable(Type.Integer({ minimum: 0 })),
  refill: Type.Optional(CreditsRefill),
});

/** Paging parameters shared by every list operation. */
export const listFields = {
  cursor: Type.Optional(text(255)),
  /** 1..100, default 100. */
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
};

/** A key's `roles[]` and `permissions[]` as createKey, updateKey and migrateKeys take them. */
export const Roles = Type.Array(RoleName, { maxItems: 100 });
export const Permissions = Type.Array(Slug, { maxItems: 1000 });

/**
 * Addresses allowed to verify keys (others get FORBIDDEN): IPv4 or IPv6 addresses or CIDR ranges
 * (`203.0.113.0/24`, `2001:db8::/32`), checked beside the operations; at most 100.
 */
export const IpWhitelist = Type.Array(text(64), { maxItems: 100 });

/**
 * keyguard's own: a charge that takes a key's remaining credits from above this to at or below it
 * sends the `key.credits_low` webhook event (an API's setting, or a key's own; docs/events.md).
 */
export const CreditsLowThreshold = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
