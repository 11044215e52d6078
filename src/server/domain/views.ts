// Records → wire objects. Absent optional fields are omitted (never `null`, except the
// nullable `credits.remaining`).
import type {
  ApiInfo,
  ApiSettings,
  AuditEventItem,
  Identity,
  KeyInfo,
  KeySettings,
  Permission,
  RatelimitConfig,
  Role,
} from "../../protocol/types";
import { creditsAt } from "./credits";
import {
  DEFAULT_LEAK_RESPONSE,
  type ApiRecord,
  type AuditEvent,
  type IdentityRecord,
  type KeyRecord,
  type PermissionRecord,
  type RatelimitRecord,
  type RoleRecord,
} from "../records";

/** An API as production's apis.getApi answers it: its id and name, nothing more. */
export function apiView(api: ApiRecord): ApiInfo {
  return { id: api.id, name: api.name };
}

/** An API with its settings (keyguard's extension fields), defaults spelled out; `ipWhitelist` and `creditsLowThreshold` only when set. */
export function apiSettingsView(api: ApiRecord): ApiSettings {
  const out: ApiSettings = apiView(api);
  if (api.ipWhitelist !== undefined) out.ipWhitelist = [...api.ipWhitelist];
  out.storeKeys = api.storeKeys === true;
  out.keyFormat = api.keyFormat ?? "plain";
  out.leakResponse = api.leakResponse ?? DEFAULT_LEAK_RESPONSE;
  if (api.creditsLowThreshold !== undefined) out.creditsLowThreshold = api.creditsLowThreshold;
  return out;
}

export function permissionView(p: PermissionRecord): Permission {
  const out: Permission = { id: p.id, name: p.name, slug: p.slug };
  if (p.description !== undefined) out.description = p.description;
  return out;
}

/** A role; with these permission records when given (absent or empty: no `permissions` field). */
export function roleView(r: RoleRecord, permissions?: readonly PermissionRecord[]): Role {
  const out: Role = { id: r.id, name: r.name };
  if (r.description !== undefined) out.description = r.description;
  if (permissions && permissions.length > 0) out.permissions = permissions.map(permissionView);
  return out;
}

function ratelimitView(r: RatelimitRecord): RatelimitConfig {
  return { id: r.id, name: r.name, limit: r.limit, duration: r.duration, autoApply: r.autoApply };
}

export function identityView(i: IdentityRecord): Identity {
  const out: Identity = { id: i.id, externalId: i.externalId };
  if (i.meta !== undefined) out.meta = i.meta;
  if (i.ratelimits.length > 0) out.ratelimits = i.ratelimits.map(ratelimitView);
  return out;
}

/** What a key's answers report besides the key itself: its access and its identity. */
export interface KeyRelations {
  /** Slugs of the key's permissions, direct and through its roles, without duplicates. */
  permissions: string[];
  /** Names of the key's roles. */
  roles: string[];
  identity: IdentityRecord | undefined;
}

/**
 * The `start` answered for a key imported by hash (`keys.migrateKeys`) before its first verification
 * under a migration: the service never saw its first characters, and production's document wants a
 * non-empty `start`. Not a possible key start (it holds parentheses), so no one mistakes it for one.
 */
const IMPORTED_START = "(imported)";

/**
 * A key as getKey, whoami and listKeys report it at `now`, with its relations and its last use
 * (Unix ms, when it was ever verified). Never holds the key itself.
 */
export function keyInfoView(key: KeyRecord, rel: KeyRelations, now: number, lastUsedAt: number | undefined): KeyInfo {
  const out: KeyInfo = { keyId: key.id, start: key.start || IMPORTED_START, enabled: key.enabled, createdAt: key.createdAt };
  if (key.name !== undefined) out.name = key.name;
  if (key.meta !== undefined) out.meta = key.meta;
  if (key.updatedAt !== undefined) out.updatedAt = key.updatedAt;
  // The latest verification event written to the store (events are written every second).
  if (lastUsedAt !== undefined) out.lastUsedAt = lastUsedAt;
  if (key.expires !== undefined) out.expires = key.expires;
  if (rel.permissions.length > 0) out.permissions = rel.permissions;
  if (rel.roles.length > 0) out.roles = rel.roles;
  if (key.credits) {
    // The balance a refill that fell due gives (the next spend writes it).
    out.credits = { remaining: creditsAt(key.credits, now).remaining };
    if (key.credits.refill) out.credits.refill = { ...key.credits.refill };
  }
  if (rel.identity) out.identity = identityView(rel.identity);
  if (key.ratelimits.length > 0) out.ratelimits = key.ratelimits.map(ratelimitView);
  return out;
}

/** A key's settings production's key has not (keyguard's keys.getKeySettings); each only when set. */
export function keySettingsView(key: KeyRecord): KeySettings {
  const out: KeySettings = { keyId: key.id };
  if (key.ipWhitelist !== undefined) out.ipWhitelist = [...key.ipWhitelist];
  if (key.creditsLowThreshold !== undefined) out.creditsLowThreshold = key.creditsLowThreshold;
  if (key.leakReports !== undefined && key.leakReports.length > 0) out.leakReports = key.leakReports.map((r) => ({ ...r }));
  return out;
}

/** An audit record as audit.listEvents answers and exports it (its chain fields included): what its hash covers. */
export function auditView(e: AuditEvent): AuditEventItem {
  const item: AuditEventItem = {
    id: e.id,
    time: e.time,
    actorId: e.actorId,
    operation: e.operation,
    targets: e.targets,
    outcome: e.outcome,
    requestId: e.requestId,
    ip: e.ip,
    change: e.change,
  };
  if (e.actorName !== undefined) item.actorName = e.actorName;
  if (e.seq !== undefined) item.seq = e.seq;
  if (e.prevHash !== undefined) item.prevHash = e.prevHash;
  if (e.hash !== undefined) item.hash = e.hash;
  return item;
}
