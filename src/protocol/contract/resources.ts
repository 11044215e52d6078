// What answers carry: keys, identities, permissions, roles, rate-limit states. Unknown fields
// are allowed in answers (a client must tolerate a newer server), so these objects are not strict.
import * as Type from "typebox";
import { CreditsRefill, freeForm } from "./fields";

/** Free-form JSON metadata attached to a key or an identity. */
export const MetaData = freeForm();

/** Verification outcome codes the protocol names. The list is open: treat an unknown code as invalid. */
export const KnownVerifyCode = Type.Enum([
  "VALID",
  "NOT_FOUND",
  "FORBIDDEN",
  "INSUFFICIENT_PERMISSIONS",
  "USAGE_EXCEEDED",
  "RATE_LIMITED",
  "DISABLED",
  "EXPIRED",
]);
type KnownCode = Type.Static<typeof KnownVerifyCode>;
// `string & {}` keeps editor completion for the known codes while accepting new ones.
export const VerifyCode = Type.Unsafe<KnownCode | (string & {})>(Type.String());

/** A rate limit as reported on a key or an identity. */
export const RatelimitConfig = Type.Object({
  id: Type.String(),
  name: Type.String(),
  limit: Type.Integer(),
  duration: Type.Integer(),
  autoApply: Type.Boolean(),
});

/** State of one rate limit after a verification. */
export const VerifyRatelimitState = Type.Object({
  ...RatelimitConfig.properties,
  remaining: Type.Integer(),
  /** Unix ms at the end of the current window. */
  reset: Type.Integer(),
  exceeded: Type.Boolean(),
});

export const Identity = Type.Object({
  id: Type.String(),
  externalId: Type.String(),
  meta: Type.Optional(MetaData),
  ratelimits: Type.Optional(Type.Array(RatelimitConfig)),
});

export const Permission = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String(),
  description: Type.Optional(Type.String()),
});

export const Role = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  permissions: Type.Optional(Type.Array(Permission)),
});

export const KeyCredits = Type.Object({
  /** Remaining uses; `null` means unlimited. */
  remaining: Type.Union([Type.Integer(), Type.Null()]),
  refill: Type.Optional(CreditsRefill),
});

/** keyguard's own: one report of the key found in public by a code host's secret scanning. */
export const LeakReport = Type.Object({
  /** Unix ms when the report arrived. */
  reportedAt: Type.Integer(),
  /** The host's name for the pattern that matched. */
  type: Type.String(),
  /** Where the key was found (may be empty). */
  url: Type.String(),
  /** What it was found in: `content`, `commit`, `issue_comment`, … */
  source: Type.String(),
});

/** A key as returned by getKey, whoami and listKeys. Never holds the full key. */
export const KeyInfo = Type.Object({
  keyId: Type.String(),
  start: Type.String(),
  enabled: Type.Boolean(),
  name: Type.Optional(Type.String()),
  meta: Type.Optional(MetaData),
  createdAt: Type.Integer(),
  updatedAt: Type.Optional(Type.Integer()),
  /** Unix ms of the key's last verification. Production's is accurate to about 5 minutes; the local service's to about a second (events are written every second). */
  lastUsedAt: Type.Optional(Type.Integer()),
  expires: Type.Optional(Type.Integer()),
  permissions: Type.Optional(Type.Array(Type.String())),
  roles: Type.Optional(Type.Array(Type.String())),
  credits: Type.Optional(KeyCredits),
  identity: Type.Optional(Identity),
  ratelimits: Type.Optional(Type.Array(RatelimitConfig)),
  /** The key itself: only with `decrypt: true`, for a recoverable key of an API that stores keys. */
  plaintext: Type.Optional(Type.String()),
});

/**
 * keyguard's own: a key's settings production's key has not (keys.getKeySettings), kept out of
 * KeyInfo, whose object production's schema closes.
 */
export const KeySettings = Type.Object({
  keyId: Type.String(),
  /** The addresses or CIDR ranges allowed to verify the key (beside its API's list); absent when none. */
  ipWhitelist: Type.Optional(Type.Array(Type.String())),
  /** The key's own key.credits_low threshold (absent: its API's applies). */
  creditsLowThreshold: Type.Optional(Type.Integer()),
  /** The secret-scanning reports of this key (the latest 20), oldest first; absent when none. */
  leakReports: Type.Optional(Type.Array(LeakReport)),
});

/** Answer of operations that answer with nothing (`data: {}`). */
export const EmptyData = Type.Unsafe<Record<string, never>>(Type.Object({}));

/** A new key (or root key): its id and the key itself, returned once. */
export const CreatedKey = Type.Object({
  keyId: Type.String(),
  /** The full key. Returned once, here. */
  key: Type.String(),
});
