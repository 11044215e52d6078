// How each record of the seam is laid out in PostgreSQL rows (see schema.ts): which
// columns a table has, and the conversion between a record and its row, both ways.
import type { CreditsRefill } from "../../../protocol/types";
import type { IndexedFields, KeyRecord, RoleRecord, TableName, Tables } from "../../records";

interface TableLayout {
  /** Unquoted table name. */
  table: string;
  /** Indexed columns (besides id and data): record field → column. */
  columns: Readonly<Record<string, string>>;
  /** Whether the table has a `workspace_id` column (all but workspaces). */
  scoped: boolean;
}

export const LAYOUTS: { readonly [T in TableName]: TableLayout } = {
  workspaces: { table: "workspaces", columns: {}, scoped: false },
  rootKeys: { table: "root_keys", columns: { workspaceId: "workspace_id", hash: "hash" }, scoped: true },
  apis: { table: "apis", columns: { workspaceId: "workspace_id" }, scoped: true },
  permissions: { table: "permissions", columns: { workspaceId: "workspace_id", slug: "slug" }, scoped: true },
  roles: { table: "roles", columns: { workspaceId: "workspace_id", name: "name" }, scoped: true },
  identities: { table: "identities", columns: { workspaceId: "workspace_id", externalId: "external_id" }, scoped: true },
  keys: { table: "keys", columns: { workspaceId: "workspace_id", apiId: "api_id", hash: "hash" }, scoped: true },
  ratelimitNamespaces: { table: "ratelimit_namespaces", columns: { workspaceId: "workspace_id", name: "name" }, scoped: true },
  ratelimitOverrides: {
    table: "ratelimit_overrides",
    columns: { workspaceId: "workspace_id", namespaceId: "namespace_id" },
    scoped: true,
  },
  portals: { table: "portals", columns: { workspaceId: "workspace_id" }, scoped: true },
  portalSessions: { table: "portal_sessions", columns: { workspaceId: "workspace_id" }, scoped: true },
};

/** The column of an indexed field that `find`/`list` may filter on; throws for any other name. */
export function filterColumn<T extends TableName>(table: T, field: IndexedFields[T]): string {
  const column = (FILTERS[table] as Record<string, string>)[field as string];
  if (column === undefined) throw new TypeError(`keyguard/server: ${table} cannot be looked up by ${String(field)}.`);
  return column;
}

const FILTERS: { readonly [T in TableName]: Readonly<Record<string, string>> } = {
  workspaces: {},
  rootKeys: {},
  apis: {},
  keys: { apiId: "api_id", identityId: "identity_id" },
  permissions: { slug: "slug" },
  roles: { name: "name" },
  identities: { externalId: "external_id" },
  ratelimitNamespaces: { name: "name" },
  ratelimitOverrides: { namespaceId: "namespace_id" },
  portals: {},
  portalSessions: {},
};

/** A row as read: `data` plus the columns a key or role is rebuilt from. */
export interface RecordRow {
  id: string;
  data: Record<string, unknown>;
  identity_id?: string | null;
  credits_remaining?: number | null;
  credits_last_refill_at?: number | null;
  credits_refill?: CreditsRefill | null;
}

/** A key as its columns: what lives outside `data`. */
interface KeyColumns {
  data: Omit<KeyRecord, "permissionIds" | "roleIds" | "identityId" | "credits">;
  identityId: string | null;
  remaining: number | null;
  lastRefillAt: number | null;
  refill: CreditsRefill | null;
}

export function keyColumns(key: KeyRecord): KeyColumns {
  const { permissionIds: _p, roleIds: _r, identityId, credits, ...data } = key;
  return {
    data,
    identityId: identityId ?? null,
    remaining: credits ? credits.remaining : null,
    lastRefillAt: credits ? credits.lastRefillAt : null,
    refill: credits?.refill ?? null,
  };
}

export function roleData(role: RoleRecord): Omit<RoleRecord, "permissionIds"> {
  const { permissionIds: _p, ...data } = role;
  return data;
}

/** The record of `row`, given the link ids read for it (keys: permissions and roles; roles: permissions). */
export function toRecord<T extends TableName>(table: T, row: RecordRow, links: { permissionIds: string[]; roleIds: string[] }): Tables[T] {
  if (table !== "keys" && table !== "roles") return row.data as unknown as Tables[T];
  // Object.assign, then the members: V8 copies a spread followed by more members by a slow path.
  const record = Object.assign({}, row.data) as unknown as RoleRecord;
  record.permissionIds = links.permissionIds;
  if (table === "roles") return record as Tables[T];
  const key = record as unknown as KeyRecord;
  key.roleIds = links.roleIds;
  if (row.identity_id != null) key.identityId = row.identity_id;
  if (row.credits_remaining != null) {
    key.credits = { remaining: Number(row.credits_remaining), lastRefillAt: Number(row.credits_last_refill_at ?? 0) };
    if (row.credits_refill != null) key.credits.refill = row.credits_refill;
  }
  return key as Tables[T];
}
