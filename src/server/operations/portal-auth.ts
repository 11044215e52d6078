// Portal sessions as callers: the exchange code and the access token (made, parsed and checked),
// and the authentication of a request by either. A code and a token each name their session and
// carry a secret (`pst_<session>_<secret>`, `pat_<session>_<secret>`): the session is read by id,
// the secret checked against the hash it keeps. Neither is ever stored, logged or repeated.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { encodeBase58 } from "../../protocol/base58";
import { keyHash } from "../../protocol/key-hash";
import { ServiceError } from "../errors";
import type { StorageTx } from "../storage/seam";
import type { PortalRecord, PortalSessionRecord } from "../records";
import { maskedRefusal, type PortalPrincipal, type RootContext } from "./auth";

/** How long a session's exchange code is valid (production: 15 minutes). */
export const CODE_TTL_MS = 15 * 60_000;
/** How long an access token is valid (production: 24 hours). */
export const TOKEN_TTL_MS = 24 * 3_600_000;
/** The cookie production's portal keeps the access token in. */
export const PORTAL_COOKIE = "portal_session";

const CODE_PREFIX = "pst_";
const TOKEN_PREFIX = "pat_";
const SESSION_PREFIX = "ps_";

/** A new code or token for a session: its prefix, the session id's own part, 24 random bytes. */
function newSecret(prefix: string, sessionId: string): string {
  return `${prefix}${sessionId.slice(SESSION_PREFIX.length)}_${encodeBase58(randomBytes(24))}`;
}

export const newExchangeCode = (sessionId: string): string => newSecret(CODE_PREFIX, sessionId);
export const newAccessToken = (sessionId: string): string => newSecret(TOKEN_PREFIX, sessionId);

/** The session id a code or token names, or undefined for text of another shape. */
function sessionIdOf(prefix: string, secret: string): string | undefined {
  if (!secret.startsWith(prefix) || secret.length > 200) return undefined;
  const rest = secret.slice(prefix.length);
  const at = rest.indexOf("_");
  if (at <= 0 || at === rest.length - 1 || !/^[A-Za-z0-9]+_[A-Za-z0-9]+$/.test(rest)) return undefined;
  return SESSION_PREFIX + rest.slice(0, at);
}

/** Whether `secret`'s hash is the one kept (compared in constant time). */
function matches(secret: string, hash: string | undefined): boolean {
  if (hash === undefined) return false;
  const a = Buffer.from(keyHash(secret));
  const b = Buffer.from(hash);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Production's one answer for every session that is not usable: which case it was is never said. */
export const sessionNotFound = (): ServiceError =>
  new ServiceError("authentication.portal_session_not_found", "The portal session is invalid or has expired.");

/** The portal a session belongs to, when it still exists and is enabled. */
async function livePortal(tx: StorageTx, session: PortalSessionRecord): Promise<PortalRecord> {
  const portal = await tx.get("portals", session.portalId);
  if (!portal || portal.workspaceId !== session.workspaceId || !portal.enabled) throw sessionNotFound();
  return portal;
}

/** The caller a session makes: its end user, holding no root-key permission. */
export function sessionCaller(session: PortalSessionRecord, expiresAt: number): RootContext {
  const caller: RootContext = {
    rootKeyId: session.id,
    workspaceId: session.workspaceId,
    permissions: new Set(),
    name: session.externalId,
    portal: {
      sessionId: session.id,
      portalId: session.portalId,
      externalId: session.externalId,
      scopes: session.scopes,
      apiIds: session.apiIds,
      preview: session.preview,
      expiresAt,
    },
  };
  if (session.returnUrl !== undefined) caller.portal!.returnUrl = session.returnUrl;
  return caller;
}

/**
 * The session an exchange code names, when the code is its own, unexpired and not exchanged yet
 * (portal.exchangeCode checks the last again in its transaction); else 401.
 */
export async function sessionByCode(tx: StorageTx, code: string, now: number): Promise<PortalSessionRecord> {
  const id = sessionIdOf(CODE_PREFIX, code);
  const session = id === undefined ? undefined : await tx.get("portalSessions", id);
  if (!session || !matches(code, session.codeHash) || session.codeExpiresAt <= now || session.exchangedAt !== undefined) {
    throw sessionNotFound();
  }
  await livePortal(tx, session);
  return session;
}

/** What a request carries a portal access token in: `Authorization: Bearer pat_…`, else the `portal_session` cookie. */
export interface PortalCredentials {
  authorization: string | undefined;
  cookie: string | undefined;
}

/** The `portal_session` cookie's value, or undefined. */
function cookieToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === PORTAL_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** A bearer token that is a portal access token (`pat_…`); undefined for a root key or none. */
export function bearerPortalToken(authorization: string | undefined): string | undefined {
  const value = authorization?.trim();
  if (!value?.startsWith("Bearer ")) return undefined;
  const token = value.slice(7).trim();
  return token.startsWith(TOKEN_PREFIX) ? token : undefined;
}

/**
 * Authenticates a portal session operation's caller by its access token: 401
 * `portal_token_missing` without one, 401 `portal_session_not_found` for a token that is unknown,
 * expired, or whose portal is gone or disabled.
 */
export async function authenticatePortalSession(tx: StorageTx, credentials: PortalCredentials, now: number): Promise<RootContext> {
  const token = bearerPortalToken(credentials.authorization) ?? cookieToken(credentials.cookie);
  if (token === undefined || token === "") {
    throw new ServiceError("authentication.portal_token_missing", "A valid portal session token is required.");
  }
  const id = sessionIdOf(TOKEN_PREFIX, token);
  const session = id === undefined ? undefined : await tx.get("portalSessions", id);
  if (!session || !matches(token, session.tokenHash) || session.tokenExpiresAt === undefined || session.tokenExpiresAt <= now) {
    throw sessionNotFound();
  }
  await livePortal(tx, session);
  return sessionCaller(session, session.tokenExpiresAt);
}

/** The caller's session; a root key on a session's operation is refused (403) and audited as a refusal. */
export function requireSession(caller: RootContext): PortalPrincipal {
  if (!caller.portal) {
    throw maskedRefusal(new ServiceError("authorization.forbidden", "This endpoint is only accessible with a portal session."));
  }
  return caller.portal;
}

/** 403 unless the caller is a session holding `scope` (production's capability check). */
export function requireScope(caller: RootContext, scope: string): void {
  if (!requireSession(caller).scopes.includes(scope)) {
    throw new ServiceError("authorization.insufficient_permissions", `Missing permission: '${scope}'`);
  }
}
