// The customer portal's operations. Production's five: portal.createSession (a root key mints a
// session for one end user, two-stage authorised), portal.exchangeCode (the single-use code for a
// 24-hour access token), and the session's own portal.listKeys, portal.rerollKey and
// portal.getVerifications. keyguard's own: the portals an operator configures
// (portal.createPortal … deletePortal) and what the hosted pages need beyond production's five
// (portal.getSession, portal.createKey, portal.setKeyEnabled, portal.deleteKey). Every session
// operation sees only the keys of the session's identity (externalId) in the portal's APIs: any
// other key id is "not found".
import { ServiceError } from "../errors";
import { newId } from "../domain/ids";
import { described } from "../domain/caller-value";
import { keyHash } from "../../protocol/key-hash";
import { paginate } from "../domain/pagination";
import { BUCKET_MS, type AnalyticsPlan, type BucketUnit, type Condition } from "../analytics/plan";
import { PORTAL_SCOPES } from "../../protocol/contract/portal";
import { canOnApi, maskedRefusal, type RootContext } from "./auth";
import { fromRoot, fromStore, permission } from "./authorization";
import { createKeyIn, rerollKeyRecord } from "./create-key";
import { apiNotFound, findApi, readKeyInfo } from "./lookup";
import { defineExtension, defineOperation, type OpContext } from "./operation";
import { CODE_TTL_MS, TOKEN_TTL_MS, newAccessToken, newExchangeCode, requireScope, requireSession, sessionNotFound } from "./portal-auth";
import { creditsAt } from "../domain/credits";
import type { PortalItem } from "../../protocol/types";
import type { StorageTx } from "../storage/seam";
import type { ApiRecord, KeyRecord, PortalRecord, PortalSessionRecord } from "../records";
import type { PortalPrincipal } from "./auth";

/** A reroll's grace when a portal does not say: 24 hours. */
const DEFAULT_REROLL_GRACE_MS = 24 * 3_600_000;
/** Portals per workspace. */
const MAX_PORTALS = 100;

const portalNotFound = () => new ServiceError("data.portal_not_found", "Portal not found.");
const keyNotFound = () => new ServiceError("data.key_not_found", "The specified key was not found.");
const forbidden = (detail: string) => new ServiceError("authorization.forbidden", detail);

/** A portal of the root key's workspace, or 404. */
async function findPortal(tx: StorageTx, workspaceId: string, portalId: string): Promise<PortalRecord> {
  const portal = await tx.get("portals", portalId);
  if (!portal || portal.workspaceId !== workspaceId) throw portalNotFound();
  return portal;
}

/** The portal as the operations answer it. */
function portalItem(p: PortalRecord): PortalItem {
  const item: PortalItem = {
    portalId: p.id,
    name: p.name,
    apiIds: p.apiIds,
    enabled: p.enabled,
    returnOrigins: p.returnOrigins,
    keyTemplate: p.keyTemplate,
    rerollGraceMs: p.rerollGraceMs,
    actions: p.actions,
    createdAt: p.createdAt,
  };
  if (p.logoUrl !== undefined) item.logoUrl = p.logoUrl;
  if (p.accentColor !== undefined) item.accentColor = p.accentColor;
  if (p.docs !== undefined) item.docs = p.docs;
  if (p.updatedAt !== undefined) item.updatedAt = p.updatedAt;
  return item;
}

/** Each of `apiIds` must be an API of the workspace (404 naming none of them). */
async function requireApis(tx: StorageTx, workspaceId: string, apiIds: readonly string[]): Promise<void> {
  for (const apiId of apiIds) if (!(await findApi(tx, workspaceId, apiId))) throw apiNotFound(apiId);
}

// ---------------------------------------------------------------------------------------------
// keyguard's own: portals as an operator configures them.

export const createPortalOperation = defineExtension("portal.createPortal", {
  access: "write",
  authorize: permission("portal.*.create_portal"),
  audit: (_body, data) => ({ targets: [data.portalId] }),
  async run({ tx, root, now }, body) {
    await requireApis(tx, root.workspaceId, body.apiIds);
    if ((await tx.list("portals", root.workspaceId, { limit: MAX_PORTALS })).length >= MAX_PORTALS) {
      throw new ServiceError("application.precondition_failed", `A workspace has at most ${MAX_PORTALS} portals. Delete one first.`);
    }
    const portal: PortalRecord = {
      id: newId("portal"),
      workspaceId: root.workspaceId,
      name: body.name,
      apiIds: [...new Set(body.apiIds)],
      enabled: body.enabled ?? true,
      returnOrigins: [...new Set(body.returnOrigins ?? [])],
      keyTemplate: body.keyTemplate ?? {},
      rerollGraceMs: body.rerollGraceMs ?? DEFAULT_REROLL_GRACE_MS,
      actions: body.actions ?? { create: false, disable: false, delete: false },
      createdAt: now,
    };
    if (body.logoUrl !== undefined) portal.logoUrl = body.logoUrl;
    if (body.accentColor !== undefined) portal.accentColor = body.accentColor;
    if (body.docs !== undefined) portal.docs = body.docs;
    await tx.put("portals", portal);
    return { data: { portalId: portal.id } };
  },
});

export const getPortalOperation = defineExtension("portal.getPortal", {
  access: "read",
  authorize: permission("portal.*.read_portal"),
  async run({ tx, root }, body) {
    return { data: portalItem(await findPortal(tx, root.workspaceId, body.portalId)) };
  },
});

export const listPortalsOperation = defineExtension("portal.listPortals", {
  access: "read",
  authorize: permission("portal.*.read_portal"),
  async run({ tx, root }) {
    return { data: (await tx.list("portals", root.workspaceId)).map(portalItem) };
  },
});

export const updatePortalOperation = defineExtension("portal.updatePortal", {
  access: "write",
  authorize: permission("portal.*.update_portal"),
  audit: (body) => ({ targets: [body.portalId] }),
  async run({ tx, root, now }, body) {
    const portal = await findPortal(tx, root.workspaceId, body.portalId);
    if (body.apiIds !== undefined) {
      await requireApis(tx, root.workspaceId, body.apiIds);
      portal.apiIds = [...new Set(body.apiIds)];
    }
    if (body.name !== undefined) portal.name = body.name;
    if (body.enabled !== undefined) portal.enabled = body.enabled;
    if (body.returnOrigins !== undefined) portal.returnOrigins = [...new Set(body.returnOrigins)];
    if (body.keyTemplate !== undefined) portal.keyTemplate = body.keyTemplate;
    if (body.rerollGraceMs !== undefined) portal.rerollGraceMs = body.rerollGraceMs;
    if (body.actions !== undefined) portal.actions = body.actions;
    for (const field of ["logoUrl", "accentColor", "docs"] as const) {
      const value = body[field];
      if (value === null) delete portal[field];
      else if (value !== undefined) portal[field] = value;
    }
    portal.updatedAt = now;
    await tx.put("portals", portal);
    return { data: portalItem(portal) };
  },
});

export const deletePortalOperation = defineExtension("portal.deletePortal", {
  access: "write",
  authorize: permission("portal.*.delete_portal"),
  audit: (body) => ({ targets: [body.portalId] }),
  async run({ tx, root }, body) {
    const portal = await findPortal(tx, root.workspaceId, body.portalId);
    // Its sessions stop working at once (a session's portal must exist); they are deleted with it.
    for (const s of await tx.list("portalSessions", root.workspaceId))
      if (s.portalId === portal.id) await tx.delete("portalSessions", s.id);
    await tx.delete("portals", portal.id);
    return { data: {} };
  },
});

// ---------------------------------------------------------------------------------------------
// Production's: minting a session, and exchanging its code.

/** The root-key tuples a scope needs on one API, as production lists them (each also as `api.*.…`). */
function scopeActions(scope: string, api: ApiRecord): string[] {
  if (scope === "keys:read") return ["read_key", "read_api"];
  if (scope === "keys:reroll" || scope === "keys:create") return api.storeKeys ? ["create_key", "encrypt_key"] : ["create_key"];
  return ["read_analytics"];
}

/**
 * Production's two stages: without `portal.*.create_portal_session` or
 * `portal.<id>.create_portal_session`, 404 (whether the portal exists is not said); then every
 * scope asked for needs its permissions on every API of the portal, else 403 for the whole request.
 * A disabled portal is a 403.
 */
const maySessionPortal = fromStore(
  "portal.<portalId>.create_portal_session, and each scope's permissions on the portal's APIs",
  async ({ tx, root }: OpContext, body: { portal: string; scopes: string[] }): Promise<{ portal: PortalRecord; apis: ApiRecord[] }> => {
    const portal = await tx.get("portals", body.portal);
    const mine = portal !== undefined && portal.workspaceId === root.workspaceId;
    const allowed =
      root.permissions.has("portal.*.create_portal_session") || root.permissions.has(`portal.${body.portal}.create_portal_session`);
    if (!allowed) throw maskedRefusal(portalNotFound());
    if (!mine) throw portalNotFound();
    if (!portal.enabled) throw forbidden("Portal is disabled.");
    const apis: ApiRecord[] = [];
    for (const apiId of portal.apiIds) {
      const api = await findApi(tx, root.workspaceId, apiId);
      // A portal whose API was deleted since: nothing to mint a session on.
      if (!api)
        throw new ServiceError("application.precondition_failed", "The portal names an API that no longer exists. Update the portal.");
      apis.push(api);
    }
    const missing = new Set<string>();
    for (const scope of new Set(body.scopes)) {
      for (const api of apis) {
        for (const action of scopeActions(scope, api)) if (!canOnApi(root, action, api.id)) missing.add(`api.${api.id}.${action}`);
      }
    }
    if (missing.size > 0) {
      throw new ServiceError(
        "authorization.insufficient_permissions",
        `A session cannot carry a scope the root key does not hold. Missing: ${[...missing].join(", ")} (or their api.*.… forms).`,
      );
    }
    return { portal, apis };
  },
);

/** 400 unless `returnUrl` is an absolute http(s) URL on one of the portal's return origins. */
function checkReturnUrl(portal: PortalRecord, returnUrl: string): void {
  let origin: string | undefined;
  try {
    const url = new URL(returnUrl);
    if (url.protocol === "https:" || url.protocol === "http:") origin = url.origin;
  } catch {
    origin = undefined;
  }
  if (origin === undefined || !portal.returnOrigins.some((o) => new URL(o).origin === origin)) {
    const message = "is not on one of the portal's return origins";
    throw new ServiceError("application.invalid_input", `Invalid request body: body.returnUrl ${message}.`, {
      errors: [{ location: "body.returnUrl", message, fix: "Add its origin to the portal's returnOrigins (portal.updatePortal)." }],
    });
  }
}

export const createSessionOperation = defineOperation("portal.createSession", {
  access: "write",
  authorize: maySessionPortal,
  audit: (body, data) => ({
    targets: [data.id, body.portal],
    change: { portal: body.portal, scopes: body.scopes, preview: body.preview ?? false },
  }),
  async run(ctx, body) {
    const { tx, root, now, resource } = ctx;
    const { portal } = resource;
    if (body.returnUrl !== undefined) checkReturnUrl(portal, body.returnUrl);
    const id = newId("ps");
    const code = newExchangeCode(id);
    const session: PortalSessionRecord = {
      id,
      workspaceId: root.workspaceId,
      portalId: portal.id,
      externalId: body.externalId,
      scopes: [...new Set(body.scopes)].sort((a, b) => PORTAL_SCOPES.indexOf(a) - PORTAL_SCOPES.indexOf(b)),
      apiIds: portal.apiIds,
      preview: body.preview ?? false,
      codeHash: keyHash(code),
      codeExpiresAt: now + CODE_TTL_MS,
      createdBy: root.rootKeyId,
      createdAt: now,
    };
    if (body.returnUrl !== undefined) session.returnUrl = body.returnUrl;
    await tx.put("portalSessions", session);
    return { data: { id, url: `${ctx.origin}/portal/?code=${code}` } };
  },
});

export const exchangeCodeOperation = defineOperation("portal.exchangeCode", {
  access: "write",
  caller: "portalCode",
  // The pipeline found the session by its code (401 otherwise): nothing more to authorise.
  authorize: fromRoot("portal.<session>.exchange_code (the code in the body)", (root): string => root.portal!.sessionId),
  audit: (_body, _data, sessionId) => ({ targets: [sessionId], change: { exchanged: true } }),
  async run({ tx, root, now }) {
    // Read again in the transaction, which holds it: of two exchanges of one code, one wins.
    const session = await tx.get("portalSessions", root.portal!.sessionId);
    if (!session || session.exchangedAt !== undefined || session.codeExpiresAt <= now) throw sessionNotFound();
    const accessToken = newAccessToken(session.id);
    session.exchangedAt = now;
    session.tokenHash = keyHash(accessToken);
    session.tokenExpiresAt = now + TOKEN_TTL_MS;
    await tx.put("portalSessions", session);
    return { data: { accessToken, expiresAt: session.tokenExpiresAt } };
  },
});

// ---------------------------------------------------------------------------------------------
// A session's own: its end user's keys and their use.

/** The session's end user, when it holds `scope` (403 otherwise; a root key is refused as not a session). */
const sessionWith = (scope: string) =>
  fromRoot(`portal.<session>.${scope.replace(":", "_")} (a session with ${scope})`, (root: RootContext): PortalPrincipal => {
    requireScope(root, scope);
    return root.portal!;
  });

/** The identity of the session's end user, when there is one. */
async function identityOf(tx: StorageTx, workspaceId: string, externalId: string) {
  return (await tx.find("identities", workspaceId, "externalId", externalId))[0];
}

/** The end user's keys in the portal's APIs, by id. */
async function ownKeys(tx: StorageTx, workspaceId: string, session: PortalPrincipal): Promise<KeyRecord[]> {
  const identity = await identityOf(tx, workspaceId, session.externalId);
  if (!identity) return [];
  return (await tx.find("keys", workspaceId, "identityId", identity.id)).filter((k) => session.apiIds.includes(k.apiId));
}

/** One of the end user's keys in the portal's APIs; any other id (another identity's key included) is 404. */
async function ownKey(ctx: OpContext, session: PortalPrincipal, keyId: string): Promise<KeyRecord> {
  const { tx, root, now } = ctx;
  const key = await tx.get("keys", keyId);
  const identity = key?.identityId === undefined ? undefined : await tx.get("identities", key.identityId);
  if (!key || key.workspaceId !== root.workspaceId || !session.apiIds.includes(key.apiId) || identity?.externalId !== session.externalId) {
    throw keyNotFound();
  }
  if (key.credits) key.credits = creditsAt(key.credits, now);
  return key;
}

export const listKeysOperation = defineOperation("portal.listKeys", {
  access: "read",
  caller: "portalSession",
  authorize: sessionWith("keys:read"),
  async run(ctx, body) {
    const { tx, root, now } = ctx;
    const page = paginate(await ownKeys(tx, root.workspaceId, ctx.resource), body.cursor, body.limit);
    const lastUsed = await tx.lastUsed(page.items.map((k) => k.id));
    const data = await Promise.all(page.items.map((k) => readKeyInfo(tx, k, now, lastUsed)));
    return { data, pagination: page.pagination };
  },
});

export const rerollKeyOperation = defineOperation("portal.rerollKey", {
  access: "write",
  caller: "portalSession",
  authorize: sessionWith("keys:reroll"),
  audit: (body, data) => ({ targets: [data.keyId, body.keyId] }),
  async run(ctx, body) {
    const old = await ownKey(ctx, ctx.resource, body.keyId);
    if (old.encrypted !== undefined && !ctx.vault) throw keyNotFound();
    // The end user may shorten the portal's grace, never lengthen it: two keys live no longer than
    // the operator allows.
    const portal = await ctx.tx.get("portals", ctx.resource.portalId);
    return rerollKeyRecord(ctx, old, Math.min(body.expiration, portal?.rerollGraceMs ?? DEFAULT_REROLL_GRACE_MS));
  },
});

/** The bucket production picks for a window: minutes up to 3 hours, hours up to 4 days, else days. */
function bucketOf(windowMs: number): BucketUnit {
  if (windowMs <= 3 * 3_600_000) return "minute";
  if (windowMs <= 4 * 86_400_000) return "hour";
  return "day";
}

const OUTCOMES = Object.freeze({
  valid: "VALID",
  rateLimited: "RATE_LIMITED",
  insufficientPermissions: "INSUFFICIENT_PERMISSIONS",
  forbidden: "FORBIDDEN",
  disabled: "DISABLED",
  expired: "EXPIRED",
  usageExceeded: "USAGE_EXCEEDED",
} as const);

const column = (c: "time" | "external_id" | "key_id" | "outcome") => ({ kind: "column", column: c }) as const;
const literal = (value: string | number) => ({ kind: "literal", value }) as const;

export const getVerificationsOperation = defineOperation("portal.getVerifications", {
  access: "read",
  caller: "portalSession",
  authorize: sessionWith("analytics:read"),
  async run(ctx, body) {
    const { root, analytics } = ctx;
    const session = ctx.resource;
    const bad = (message: string, fix: string) =>
      new ServiceError("application.invalid_input", message, { errors: [{ location: "body.endTime", message, fix }] });
    if (body.endTime <= body.startTime) throw bad("`endTime` must be greater than `startTime`.", "Send an endTime after startTime.");
    const windowMs = body.endTime - body.startTime;
    if (windowMs > analytics.retentionMs) {
      const days = Math.round(analytics.retentionMs / 86_400_000);
      throw bad(`The requested time window is too large. The maximum window is ${days} days.`, "Ask for a shorter window.");
    }
    const unit = bucketOf(windowMs);
    const step = BUCKET_MS[unit];
    const first = Math.floor(body.startTime / step) * step;
    const buckets = Math.ceil((body.endTime - first) / step);
    // Another identity's key, or no key of the end user's: no rows (the series is all zeros).
    const conditions: Condition[] = [
      { kind: "compare", op: "=", left: column("external_id"), right: literal(session.externalId) },
      { kind: "compare", op: ">=", left: column("time"), right: literal(body.startTime) },
      { kind: "compare", op: "<", left: column("time"), right: literal(body.endTime) },
    ];
    if (body.keyId !== undefined) conditions.push({ kind: "compare", op: "=", left: column("key_id"), right: literal(body.keyId) });
    const plan: AnalyticsPlan = {
      outputs: [
        { name: "time", value: { kind: "scalar", scalar: { kind: "bucket", unit } } },
        { name: "total", value: { kind: "aggregate", aggregate: { kind: "count" } } },
        ...Object.entries(OUTCOMES).map(([name, outcome]) => ({
          name,
          value: {
            kind: "aggregate" as const,
            aggregate: {
              kind: "countIf" as const,
              condition: { kind: "compare" as const, op: "=" as const, left: column("outcome"), right: literal(outcome) },
            },
          },
        })),
      ],
      where: { kind: "and", args: conditions },
      groupBy: [{ kind: "bucket", unit }],
      orderBy: [{ output: 0, descending: false }],
      limit: buckets,
    };
    const rows = await analytics.query(plan, { workspaceId: root.workspaceId, keySpaceIds: session.apiIds });
    const byTime = new Map(rows.map((r) => [Number(r.time), r]));
    const data = Array.from({ length: buckets }, (_, i) => {
      const time = first + i * step;
      const row = byTime.get(time);
      const point = { time, total: Number(row?.total ?? 0) } as Record<string, number>;
      for (const name of Object.keys(OUTCOMES)) point[name] = Number(row?.[name] ?? 0);
      return point as { time: number; total: number } & Record<keyof typeof OUTCOMES, number>;
    });
    return { data };
  },
});

// ---------------------------------------------------------------------------------------------
// keyguard's own session operations, for the hosted pages.

export const getSessionOperation = defineExtension("portal.getSession", {
  access: "read",
  caller: "portalSession",
  authorize: fromRoot("portal.<session>.read_session (any session)", requireSession),
  async run({ tx, root, resource: session }) {
    const portal = await findPortal(tx, root.workspaceId, session.portalId);
    const data = {
      sessionId: session.sessionId,
      portalId: portal.id,
      externalId: session.externalId,
      scopes: [...session.scopes],
      preview: session.preview,
      expiresAt: session.expiresAt,
      name: portal.name,
      rerollGraceMs: portal.rerollGraceMs,
      actions: portal.actions,
    } as Record<string, unknown>;
    if (session.returnUrl !== undefined) data.returnUrl = session.returnUrl;
    if (portal.logoUrl !== undefined) data.logoUrl = portal.logoUrl;
    if (portal.accentColor !== undefined) data.accentColor = portal.accentColor;
    if (portal.docs !== undefined) data.docs = portal.docs;
    return { data: data as never };
  },
});

/** The session's portal, when the operator allows `action` (403 otherwise). */
async function portalAllowing(ctx: OpContext, session: PortalPrincipal, action: "create" | "disable" | "delete"): Promise<PortalRecord> {
  const portal = await findPortal(ctx.tx, ctx.root.workspaceId, session.portalId);
  if (!portal.actions[action]) throw forbidden(`This portal does not allow end users to ${action} keys.`);
  return portal;
}

export const createKeyOperation = defineExtension("portal.createKey", {
  access: "write",
  caller: "portalSession",
  authorize: sessionWith("keys:create"),
  audit: (_body, data) => ({ targets: [data.keyId] }),
  async run(ctx, body) {
    const session = ctx.resource;
    const portal = await portalAllowing(ctx, session, "create");
    let apiId = body.apiId;
    if (apiId === undefined) {
      if (session.apiIds.length !== 1) {
        const message = "is required: the portal covers several APIs";
        throw new ServiceError("application.invalid_input", `Invalid request body: body.apiId ${message}.`, {
          errors: [{ location: "body.apiId", message, fix: "Name one of the portal's APIs." }],
        });
      }
      apiId = session.apiIds[0]!;
    }
    const api = session.apiIds.includes(apiId) ? await findApi(ctx.tx, ctx.root.workspaceId, apiId) : undefined;
    if (!api)
      throw new ServiceError("data.api_not_found", `The API named by ${described("body.apiId", apiId)} is not one of the portal's.`);
    const t = portal.keyTemplate;
    return createKeyIn(ctx, api, {
      apiId: api.id,
      externalId: session.externalId,
      ...(body.name !== undefined && { name: body.name }),
      ...(t.prefix !== undefined && { prefix: t.prefix }),
      ...(t.byteLength !== undefined && { byteLength: t.byteLength }),
      ...(t.permissions !== undefined && { permissions: t.permissions }),
      ...(t.roles !== undefined && { roles: t.roles }),
      ...(t.ratelimits !== undefined && { ratelimits: t.ratelimits }),
      ...(t.credits !== undefined && { credits: t.credits }),
      ...(t.expiresIn !== undefined && { expires: ctx.now + t.expiresIn }),
    });
  },
});

export const setKeyEnabledOperation = defineExtension("portal.setKeyEnabled", {
  access: "write",
  caller: "portalSession",
  authorize: sessionWith("keys:read"),
  audit: (body) => ({ targets: [body.keyId], change: { enabled: body.enabled } }),
  async run(ctx, body) {
    await portalAllowing(ctx, ctx.resource, "disable");
    const key = await ownKey(ctx, ctx.resource, body.keyId);
    key.enabled = body.enabled;
    key.updatedAt = ctx.now;
    await ctx.tx.put("keys", key);
    return { data: {} };
  },
});

export const deleteKeyOperation = defineExtension("portal.deleteKey", {
  access: "write",
  caller: "portalSession",
  authorize: sessionWith("keys:read"),
  audit: (body) => ({ targets: [body.keyId] }),
  async run(ctx, body) {
    await portalAllowing(ctx, ctx.resource, "delete");
    const key = await ownKey(ctx, ctx.resource, body.keyId);
    await ctx.tx.delete("keys", key.id);
    return { data: {} };
  },
});
