// The customer portal's operations. Production's five (`portal.createSession`, `portal.exchangeCode`,
// `portal.listKeys`, `portal.rerollKey`, `portal.getVerifications`, marked not yet public in its
// OpenAPI document) as its document gives them; then keyguard's own: the portals an operator
// configures (`portal.createPortal` … `portal.deletePortal`) and what a session's hosted pages need
// beyond production's five (`portal.getSession`, `portal.createKey`, `portal.setKeyEnabled`,
// `portal.deleteKey`).
import * as Type from "typebox";
import { id, nullable, RatelimitList, Roles, Permissions, strict, text, CreditsRefill, MAX_EXPIRES } from "./fields";
import { CreatedKey, EmptyData, KeyInfo } from "./resources";
import { RerollKeyRequest } from "./keys";

/** The scopes a session may carry (production's vocabulary). */
export const PORTAL_SCOPES = Object.freeze(["keys:read", "keys:create", "keys:reroll", "analytics:read"] as const);
export type PortalScope = (typeof PORTAL_SCOPES)[number];

/** A portal by id, as production's ResourceIdentifier (3..255 of letters, digits, `_` and `-`). */
const PortalRef = Type.String({
  minLength: 3,
  maxLength: 255,
  pattern: "^[a-zA-Z0-9_-]+$",
  "x-fix": "Use the portal's id as returned, e.g. portal_….",
});

export const CreatePortalSessionRequest = strict({
  portal: PortalRef,
  /** The end user's id in the provider's system (any string: production takes e-mail addresses too). */
  externalId: text(256),
  scopes: Type.Array(Type.Enum([...PORTAL_SCOPES], { type: "string" }), { minItems: 1 }),
  /** A session for the operator to try the portal with (the pages show it as a preview). */
  preview: Type.Optional(Type.Boolean()),
  /** Where the end user goes back to: an absolute URL on one of the portal's return origins. */
  returnUrl: Type.Optional(Type.String({ maxLength: 500, format: "uri" })),
});
/** `url` carries the single-use exchange code (15 minutes): a credential, never logged. */
export const CreatedPortalSession = Type.Object({ id: Type.String(), url: Type.String() });

export const ExchangePortalCodeRequest = strict({ code: Type.String({ minLength: 1 }) });
/** The access token (24 hours): sent back as the `portal_session` cookie or `Authorization: Bearer`. */
export const PortalAccessToken = Type.Object({ accessToken: Type.String(), expiresAt: Type.Integer() });

export const ListPortalKeysRequest = strict({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  cursor: Type.Optional(Type.String()),
});

export const PortalVerificationsRequest = strict({
  /** Unix ms, inclusive. */
  startTime: Type.Integer(),
  /** Unix ms, exclusive; the bucket (minute, hour or day) follows from the window's length. */
  endTime: Type.Integer(),
  /** Only this key's verifications (one of the end user's keys). */
  keyId: Type.Optional(Type.String()),
});
export const PortalVerificationsPoint = Type.Object({
  time: Type.Integer(),
  total: Type.Integer(),
  valid: Type.Integer(),
  rateLimited: Type.Integer(),
  insufficientPermissions: Type.Integer(),
  forbidden: Type.Integer(),
  disabled: Type.Integer(),
  expired: Type.Integer(),
  usageExceeded: Type.Integer(),
});

/** Production's portal.* operations, by wire name. */
export const portalOperations = {
  "portal.createSession": { request: CreatePortalSessionRequest, response: CreatedPortalSession },
  "portal.exchangeCode": { request: ExchangePortalCodeRequest, response: PortalAccessToken },
  "portal.listKeys": { request: ListPortalKeysRequest, response: Type.Array(KeyInfo, { maxItems: 100 }) },
  "portal.rerollKey": { request: RerollKeyRequest, response: CreatedKey },
  "portal.getVerifications": { request: PortalVerificationsRequest, response: Type.Array(PortalVerificationsPoint) },
} as const;

// ---------------------------------------------------------------------------------------------
// keyguard's own: portals as an operator configures them.

/** An origin a returnUrl may be on: scheme, host and port only (`https://app.example.com`). */
const ReturnOrigin = text(255, {
  pattern: "^https?://[A-Za-z0-9.:\\[\\]-]+$",
  "x-fix": "Use an origin: http(s)://host[:port], no path.",
});
const Hours = 3_600_000;

/** What a key made in the portal (portal.createKey) gets. */
export const PortalKeyTemplate = strict({
  prefix: Type.Optional(text(16, { pattern: "^[a-zA-Z0-9_]+$", "x-fix": "Use letters, digits and _ only." })),
  byteLength: Type.Optional(Type.Integer({ minimum: 16, maximum: 255 })),
  permissions: Type.Optional(Permissions),
  roles: Type.Optional(Roles),
  ratelimits: Type.Optional(RatelimitList),
  credits: Type.Optional(strict({ remaining: Type.Integer({ minimum: 0 }), refill: Type.Optional(CreditsRefill) })),
  /** The key's lifetime from its creation (ms); absent: it does not expire. */
  expiresIn: Type.Optional(Type.Integer({ minimum: 60_000, maximum: MAX_EXPIRES })),
});

export const PortalActions = strict({
  /** portal.createKey (with the keys:create scope). */
  create: Type.Boolean(),
  /** portal.setKeyEnabled. */
  disable: Type.Boolean(),
  /** portal.deleteKey. */
  delete: Type.Boolean(),
});

const PortalFields = {
  name: text(128),
  apiIds: Type.Array(id(), { minItems: 1, maxItems: 20 }),
  enabled: Type.Boolean(),
  logoUrl: text(500, { pattern: "^https://", "x-fix": "Use an https:// URL." }),
  accentColor: text(7, { pattern: "^#[0-9a-fA-F]{6}$", "x-fix": "Use a colour as #rrggbb." }),
  /** Markdown, shown sanitised on the Docs tab. */
  docs: text(20_000),
  returnOrigins: Type.Array(ReturnOrigin, { maxItems: 20 }),
  keyTemplate: PortalKeyTemplate,
  /** How long a rerolled key keeps working, ms (0..30 days; default 24 hours). */
  rerollGraceMs: Type.Integer({ minimum: 0, maximum: 720 * Hours }),
  actions: PortalActions,
};

export const CreatePortalRequest = strict({
  name: PortalFields.name,
  apiIds: PortalFields.apiIds,
  enabled: Type.Optional(PortalFields.enabled),
  logoUrl: Type.Optional(PortalFields.logoUrl),
  accentColor: Type.Optional(PortalFields.accentColor),
  docs: Type.Optional(PortalFields.docs),
  returnOrigins: Type.Optional(PortalFields.returnOrigins),
  keyTemplate: Type.Optional(PortalFields.keyTemplate),
  rerollGraceMs: Type.Optional(PortalFields.rerollGraceMs),
  actions: Type.Optional(PortalFields.actions),
});
export const CreatedPortal = Type.Object({ portalId: Type.String() });

/** An omitted field is unchanged; `null` removes an optional one. */
export const UpdatePortalRequest = strict({
  portalId: id(),
  name: Type.Optional(PortalFields.name),
  apiIds: Type.Optional(PortalFields.apiIds),
  enabled: Type.Optional(PortalFields.enabled),
  logoUrl: Type.Optional(nullable(PortalFields.logoUrl)),
  accentColor: Type.Optional(nullable(PortalFields.accentColor)),
  docs: Type.Optional(nullable(PortalFields.docs)),
  returnOrigins: Type.Optional(PortalFields.returnOrigins),
  keyTemplate: Type.Optional(PortalFields.keyTemplate),
  rerollGraceMs: Type.Optional(PortalFields.rerollGraceMs),
  actions: Type.Optional(PortalFields.actions),
});

export const PortalRequest = strict({ portalId: id() });

export const PortalItem = Type.Object({
  portalId: Type.String(),
  name: Type.String(),
  apiIds: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  logoUrl: Type.Optional(Type.String()),
  accentColor: Type.Optional(Type.String()),
  docs: Type.Optional(Type.String()),
  returnOrigins: Type.Array(Type.String()),
  keyTemplate: PortalKeyTemplate,
  rerollGraceMs: Type.Integer(),
  actions: PortalActions,
  createdAt: Type.Integer(),
  updatedAt: Type.Optional(Type.Integer()),
});

/** What the hosted pages show of a session: its portal's branding and what it may do. */
export const PortalSessionInfo = Type.Object({
  sessionId: Type.String(),
  portalId: Type.String(),
  externalId: Type.String(),
  scopes: Type.Array(Type.String()),
  preview: Type.Boolean(),
  returnUrl: Type.Optional(Type.String()),
  expiresAt: Type.Integer(),
  name: Type.String(),
  logoUrl: Type.Optional(Type.String()),
  accentColor: Type.Optional(Type.String()),
  docs: Type.Optional(Type.String()),
  rerollGraceMs: Type.Integer(),
  actions: PortalActions,
});

export const CreatePortalKeyRequest = strict({
  /** One of the portal's APIs; may be left out when it covers one. */
  apiId: Type.Optional(id()),
  name: Type.Optional(text(255)),
});
export const PortalKeyRequest = strict({ keyId: id() });
export const SetPortalKeyEnabledRequest = strict({ keyId: id(), enabled: Type.Boolean() });

export const portalExtensions = {
  "portal.createPortal": { request: CreatePortalRequest, response: CreatedPortal },
  "portal.getPortal": { request: PortalRequest, response: PortalItem },
  "portal.listPortals": { request: strict({}), response: Type.Array(PortalItem) },
  "portal.updatePortal": { request: UpdatePortalRequest, response: PortalItem },
  "portal.deletePortal": { request: PortalRequest, response: EmptyData },
  "portal.getSession": { request: strict({}), response: PortalSessionInfo },
  "portal.createKey": { request: CreatePortalKeyRequest, response: CreatedKey },
  "portal.setKeyEnabled": { request: SetPortalKeyEnabledRequest, response: EmptyData },
  "portal.deleteKey": { request: PortalKeyRequest, response: EmptyData },
} as const;
