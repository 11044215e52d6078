// Records ↔ rows of the SQLite store: reads, writes and cascading deletes of the tables, each one
// prepared statement (cached) or a few. Synchronous, like the drivers; the store runs them inside
// its transactions.
import type { IndexedFields, KeyRecord, RoleRecord, TableName, Tables } from "../../records";
import type { SqlConnection, SqlRow, SqlStatement, SqlValue } from "./driver";
import type { KeyPosition, KeySort, KeySortColumn } from "../../domain/key-sort";

interface TableSpec {
  /** SQL table name. */
  name: string;
  /** Column holding the workspace id (a workspace is its own workspace). */
  workspace: string;
  /** Columns after `id` and the workspace, with their values taken from a record. */
  columns: Array<[column: string, value: (record: never) => SqlValue]>;
  /** Indexed record fields → columns. */
  fields: Record<string, string>;
  /** What a SELECT lists, the table aliased `t`: decoded by `decode`. */
  select: string;
  decode(row: SqlRow): unknown;
  /** The record's JSON text, without what columns and link tables hold. */
  data(record: never): string;
}

const linkList = (table: string, column: string, owner: string) =>
  `(SELECT json_group_array(${column} ORDER BY position) FROM ${table} WHERE ${owner} = t.id)`;

const plain = (name: string, extra: TableSpec["columns"] = [], fields: Record<string, string> = {}): TableSpec => ({
  name,
  workspace: "workspace_id",
  columns: extra,
  fields,
  select: "t.data",
  decode: (row) => JSON.parse(row.data as string),
  data: (record) => JSON.stringify(record),
});

/**
 * `record` as JSON without `keys` (the members its columns and link tables hold): they are set to
 * undefined on a copy, which JSON leaves out; a `delete` would turn the copy into a slow dictionary.
 */
function jsonWithout<T extends object>(record: T, keys: ReadonlyArray<keyof T>): string {
  const copy = Object.assign({}, record);
  for (const k of keys) copy[k] = undefined as T[keyof T];
  return JSON.stringify(copy);
}

const SPECS: { [T in TableName]: TableSpec } = {
  workspaces: { ...plain("workspaces"), workspace: "id" },
  rootKeys: plain("root_keys", [["hash", (r: Tables["rootKeys"]) => r.hash]]),
  apis: plain("apis"),
  permissions: plain("permissions", [["slug", (r: Tables["permissions"]) => r.slug]], { slug: "slug" }),
  identities: plain("identities", [["external_id", (r: Tables["identities"]) => r.externalId]], { externalId: "external_id" }),
  ratelimitNamespaces: plain("ratelimit_namespaces", [["name", (r: Tables["ratelimitNamespaces"]) => r.name]], { name: "name" }),
  ratelimitOverrides: plain("ratelimit_overrides", [["namespace_id", (r: Tables["ratelimitOverrides"]) => r.namespaceId]], {
    namespaceId: "namespace_id",
  }),
  portals: plain("portals"),
  portalSessions: plain("portal_sessions"),
  roles: {
    ...plain("roles", [["name", (r: RoleRecord) => r.name]], { name: "name" }),
    select: `t.data, ${linkList("role_permissions", "permission_id", "role_id")} AS p`,
    decode(row) {
      // Members added after the parse: V8 copies a spread followed by more members by a slow path.
      const role = JSON.parse(row.data as string) as RoleRecord;
      role.permissionIds = JSON.parse(row.p as string);
      return role;
    },
    data: (r: RoleRecord) => jsonWithout(r, ["permissionIds"]),
  },
  keys: {
    name: "keys",
    workspace: "workspace_id",
    columns: [
      ["api_id", (r: KeyRecord) => r.apiId],
      ["identity_id", (r: KeyRecord) => r.identityId ?? null],
      ["hash", (r: KeyRecord) => r.hash],
      ["credits_remaining", (r: KeyRecord) => r.credits?.remaining ?? null],
      ["credits_last_refill_at", (r: KeyRecord) => r.credits?.lastRefillAt ?? null],
      ["credits_refill", (r: KeyRecord) => (r.credits?.refill ? JSON.stringify(r.credits.refill) : null)],
    ],
    fields: { apiId: "api_id", identityId: "identity_id" },
    select:
      "t.data, t.credits_remaining AS cr, t.credits_last_refill_at AS cl, t.credits_refill AS cf, " +
      `${linkList("key_permissions", "permission_id", "key_id")} AS p, ${linkList("key_roles", "role_id", "key_id")} AS r`,
    decode(row) {
      const key = JSON.parse(row.data as string) as KeyRecord;
      key.permissionIds = JSON.parse(row.p as string);
      key.roleIds = JSON.parse(row.r as string);
      if (row.cr !== null) {
        key.credits = { remaining: Number(row.cr), lastRefillAt: Number(row.cl) };
        if (row.cf !== null) key.credits.refill = JSON.parse(row.cf as string);
      }
      return key;
    },
    data: (r: KeyRecord) => jsonWithout(r, ["permissionIds", "roleIds", "credits"]),
  },
};

/** The SQL texts of one table, built once: the statement cache is keyed by them. */
interface TableSql {
  get: string;
  /** A page of a workspace's records: unfiltered under "", else filtered by the indexed field. */
  list: ReadonlyMap<string, string>;
  put: string;
}

const selectWhere = (spec: TableSpec, condition: string) => `SELECT ${spec.select} FROM ${spec.name} t WHERE ${condition}`;

function tableSql(spec: TableSpec): TableSql {
  const page = (filter: string) => selectWhere(spec, `t.${spec.workspace} = ?${filter} AND t.id >= ? ORDER BY t.id LIMIT ?`);
  const list = new Map([["", page("")]]);
  for (const [field, column] of Object.entries(spec.fields)) list.set(field, page(` AND t.${column} = ?`));
  const names = ["id", ...(spec.workspace === "id" ? [] : [spec.workspace]), ...spec.columns.map(([c]) => c), "data"];
  const updates = names.slice(1).map((c) => `${c} = excluded.${c}`);
  return {
    get: selectWhere(spec, "t.id = ?"),
    list,
    put:
      `INSERT INTO ${spec.name} (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")}) ` +
      `ON CONFLICT (id) DO UPDATE SET ${updates.join(", ")}`,
  };
}

const SQL = Object.fromEntries(Object.entries(SPECS).map(([table, spec]) => [table, tableSql(spec)])) as {
  [T in TableName]: TableSql;
};
const BY_HASH = { keys: selectWhere(SPECS.keys, "t.hash = ?"), rootKeys: selectWhere(SPECS.rootKeys, "t.hash = ?") };

/** The SQL value each sort column orders by. */
const SORT_COLUMNS: Record<KeySortColumn, string> = {
  name: "json_extract(t.data, '$.name')",
  start: "json_extract(t.data, '$.start')",
  createdAt: "json_extract(t.data, '$.createdAt')",
  expires: "json_extract(t.data, '$.expires')",
  credits: "t.credits_remaining",
};

/** Missing values after every value; ties by id. */
const orderBy = (v: string, sort: KeySort) =>
  sort.order === "desc" ? `ORDER BY ${v} DESC NULLS FIRST, t.id DESC` : `ORDER BY ${v} ASC NULLS LAST, t.id ASC`;

/** The condition "at or after `at` in the order of `sort`", its values pushed onto `params`. */
function fromPosition(v: string, sort: KeySort, at: KeyPosition, params: SqlValue[]): string {
  const desc = sort.order === "desc";
  if (at.value === null) {
    params.push(at.id);
    return desc ? ` AND (${v} IS NOT NULL OR (${v} IS NULL AND t.id <= ?))` : ` AND ${v} IS NULL AND t.id >= ?`;
  }
  params.push(at.value, at.value, at.id);
  return desc ? ` AND (${v} < ? OR (${v} = ? AND t.id <= ?))` : ` AND (${v} IS NULL OR ${v} > ? OR (${v} = ? AND t.id >= ?))`;
}

/** The tables of one connection. Every method runs synchronously on it. */
export class SqliteTables {
  private readonly cache = new Map<string, SqlStatement>();

  constructor(private readonly db: SqlConnection) {}

  /** A prepared statement, prepared once per connection. */
  stmt(sql: string): SqlStatement {
    let s = this.cache.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.cache.set(sql, s);
    }
    return s;
  }

  get<T extends TableName>(table: T, id: string): Tables[T] | undefined {
    const row = this.stmt(SQL[table].get).get(id);
    return row ? (SPECS[table].decode(row) as Tables[T]) : undefined;
  }

  byHash<T extends "keys" | "rootKeys">(table: T, hash: string): Tables[T] | undefined {
    const row = this.stmt(BY_HASH[table]).get(hash);
    return row ? (SPECS[table].decode(row) as Tables[T]) : undefined;
  }

  list<T extends TableName>(
    table: T,
    workspaceId: string,
    options: { from?: string; limit?: number; where?: { field: IndexedFields[T]; value: string } } = {},
  ): Array<Tables[T]> {
    const spec = SPECS[table];
    const params: SqlValue[] = [workspaceId];
    const field = options.where ? String(options.where.field) : "";
    const sql = SQL[table].list.get(field);
    if (sql === undefined) throw new TypeError(`the ${table} table has no indexed field ${field}`);
    if (options.where) params.push(options.where.value);
    params.push(options.from ?? "", options.limit ?? -1);
    return this.stmt(sql)
      .all(...params)
      .map((row) => spec.decode(row) as Tables[T]);
  }

  /** keyguard's sorted listing of an API's keys (see `StorageTx.sortedKeys`). */
  sortedKeys(workspaceId: string, apiId: string, sort: KeySort, options: { from?: KeyPosition; limit: number }): KeyRecord[] {
    const params: SqlValue[] = [workspaceId, apiId];
    const from = options.from === undefined ? "" : fromPosition(SORT_COLUMNS[sort.by], sort, options.from, params);
    params.push(options.limit);
    const sql = `${selectWhere(SPECS.keys, `t.workspace_id = ? AND t.api_id = ?${from}`)} ${orderBy(SORT_COLUMNS[sort.by], sort)} LIMIT ?`;
    return this.stmt(sql)
      .all(...params)
      .map((row) => SPECS.keys.decode(row) as KeyRecord);
  }

  put<T extends TableName>(table: T, record: Tables[T]): void {
    const spec = SPECS[table];
    const values: SqlValue[] = [record.id];
    if (spec.workspace !== "id") values.push((record as { workspaceId: string }).workspaceId);
    for (const [, value] of spec.columns) values.push(value(record as never));
    values.push(spec.data(record as never));
    this.stmt(SQL[table].put).run(...values);
    if (table === "keys") {
      const key = record as KeyRecord;
      this.setLinks("key_permissions", "key_id", "permission_id", key.id, key.permissionIds);
      this.setLinks("key_roles", "key_id", "role_id", key.id, key.roleIds);
    } else if (table === "roles") {
      const role = record as RoleRecord;
      this.setLinks("role_permissions", "role_id", "permission_id", role.id, role.permissionIds);
    }
  }

  private setLinks(table: string, owner: string, column: string, id: string, targets: readonly string[]): void {
    this.stmt(`DELETE FROM ${table} WHERE ${owner} = ?`).run(id);
    const insert = this.stmt(`INSERT INTO ${table} (${owner}, position, ${column}) VALUES (?, ?, ?)`);
    targets.forEach((target, position) => insert.run(id, position, target));
  }

  /** Deletes a record and what depends on it, as `StorageTx.delete` documents. */
  delete(table: TableName, id: string): void {
    const run = (sql: string, ...params: SqlValue[]) => this.stmt(sql).run(...params);
    switch (table) {
      case "keys":
        run("DELETE FROM counters WHERE owner = ?", id);
        run("DELETE FROM key_permissions WHERE key_id = ?", id);
        run("DELETE FROM key_roles WHERE key_id = ?", id);
        break;
      case "apis": {
        const api = this.get("apis", id);
        if (!api) return;
        const ofApi = "(SELECT id FROM keys WHERE workspace_id = ? AND api_id = ?)";
        run(`DELETE FROM counters WHERE owner IN ${ofApi}`, api.workspaceId, id);
        run(`DELETE FROM key_permissions WHERE key_id IN ${ofApi}`, api.workspaceId, id);
        run(`DELETE FROM key_roles WHERE key_id IN ${ofApi}`, api.workspaceId, id);
        run("DELETE FROM keys WHERE workspace_id = ? AND api_id = ?", api.workspaceId, id);
        break;
      }
      case "permissions":
        run("DELETE FROM key_permissions WHERE permission_id = ?", id);
        run("DELETE FROM role_permissions WHERE permission_id = ?", id);
        break;
      case "roles":
        run("DELETE FROM key_roles WHERE role_id = ?", id);
        run("DELETE FROM role_permissions WHERE role_id = ?", id);
        break;
      case "identities":
        run("UPDATE keys SET identity_id = NULL, data = json_remove(data, '$.identityId') WHERE identity_id = ?", id);
        run("DELETE FROM counters WHERE owner = ?", id);
        break;
      case "ratelimitNamespaces":
        run("DELETE FROM ratelimit_overrides WHERE namespace_id = ?", id);
        break;
      default:
        break;
    }
    run(`DELETE FROM ${SPECS[table].name} WHERE id = ?`, id);
  }

  getMeta(name: string): string | undefined {
    const row = this.stmt("SELECT value FROM meta WHERE name = ?").get(name);
    return row ? String(row.value) : undefined;
  }

  setMeta(name: string, value: string): void {
    this.stmt("INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value").run(name, value);
  }

  /** Whether the database holds no record and no meta value: what an import needs. */
  isEmpty(): boolean {
    const tables = ["meta", ...Object.values(SPECS).map((s) => s.name)];
    return tables.every((t) => this.stmt(`SELECT 1 AS x FROM ${t} LIMIT 1`).get() === undefined);
  }
}
