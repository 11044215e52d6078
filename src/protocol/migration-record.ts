// A key's record as another key service answers it (`keys.getKey`, `apis.listKeys`), turned into
// what `keys.migrateKeys` imports under a `sha256` migration: the key's hash and every setting that
// carries over (name, meta, expiry, enabled, permissions, roles, the identity's external id, rate
// limits, credits and refill). Shared by apiKeyAuth({ migrateFrom }) and `keyguard import`.
import type { KeyInfo, MigrateKeyData } from "./types";

/** The record the old service keeps, as `keys.migrateKeys` takes it. */
export function migrationRecord(keyHash: string, info: Readonly<KeyInfo>): MigrateKeyData {
  const out: MigrateKeyData = { hash: keyHash, enabled: info.enabled };
  if (info.name !== undefined) out.name = info.name;
  if (info.meta !== undefined) out.meta = info.meta;
  if (info.expires !== undefined) out.expires = info.expires;
  if (info.permissions !== undefined && info.permissions.length > 0) out.permissions = [...info.permissions];
  if (info.roles !== undefined && info.roles.length > 0) out.roles = [...info.roles];
  if (info.identity !== undefined) out.externalId = info.identity.externalId;
  if (info.ratelimits !== undefined && info.ratelimits.length > 0) {
    out.ratelimits = info.ratelimits.map(({ name, limit, duration, autoApply }) => ({ name, limit, duration, autoApply }));
  }
  const remaining = info.credits?.remaining;
  if (typeof remaining === "number") {
    out.credits = info.credits?.refill === undefined ? { remaining } : { remaining, refill: { ...info.credits.refill } };
  }
  return out;
}
