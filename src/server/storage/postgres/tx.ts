// The StorageTx of the PostgreSQL + Redis backend over one connection (a transaction) or the pool
// (`direct`). In a transaction every record read is locked (`SELECT … FOR UPDATE`; APIs,
// permissions and roles, which many read and few change, `FOR SHARE`) until it ends,
// and lookups by an indexed value take an advisory lock on that value, so a check-then-insert
// (a permission's slug, an identity's external id) cannot race another transaction.
import type { KeyPosition, KeySort, KeySortColumn } from "../../domain/key-sort";
import type { AuditQuery, MetaReadOptions, StorageTx } from "../seam";
import type { LimitCheck, LimitState } from "../../domain/sliding-window";
import type { DueRefill, SpendOutcome, CreditsCrossings } from "../../domain/credits";
import type { AuditEvent, WebhookMessage, ExpiringKey, IndexedFields, KeyRecord, TableName, Tables } from "../../records";
import { LAYOUTS, filterColumn, toRecord, type RecordRow } from "./rows";
import { putPart } from "./writes";
import { spendCredits } from "./credits";
import { appendAudit, listAudit } from "./audit";
import { enqueueWebhooks, rescheduleWebhooks } from "./outbox";
import { claimExpiryNotices } from "./expiry";
import { lastUsed, markUsed } from "./events";
import { quoteIdent } from "./schema";
import type { RedisLimits } from "./redis-limits";
import { runPart, type Query } from "./query";
import type { RecordCache } from "./record-cache";
import { Coalescer, type CoalescerSettings } from "./coalesce";
import { CreditsBatcher } from "./credits-batch";

/**
 * Whether the record cache may keep a key found by its hash (keys.verifyKey's lookup): not one
 * waiting for its migration (its rehash is written where it is read). One with credits is kept: its
 * balance there is stale (a charge sends no message), but the lookup's reader charges in
 * PostgreSQL and reports the balance the charge answers, or reads the key by id (`keptById`).
 */
/** The SQL value each sort column orders by. */
const PG_SORT_COLUMNS: Record<KeySortColumn, string> = {
  name: `(r.data->>'name') COLLATE "C"`,
  start: `(r.data->>'start') COLLATE "C"`,
  createdAt: "(r.data->>'createdAt')::bigint",
  expires: "(r.data->>'expires')::bigint",
  credits: "r.credits_remaining",
};

const keptByHash = (key: KeyRecord): boolean => key.pendingMigrationId === undefined;

/** Whether the record cache may keep a key read by its id: nor one with credits, whose balance is read as stored. */
const keptById = (key: KeyRecord): boolean => key.credits === undefined && keptByHash(key);

/**
 * How key lookups outside transactions share statements (see coalesce.ts): one statement out at
 * a time, so that under load the lookups of a round trip's time leave together in the next; at
 * most 256 keys per statement; and a lookup asked once the last statement has been out for 10 ms
 * leaves at once, with those waiting.
 */
const KEY_LOOKUPS: CoalescerSettings = { maxOut: 1, maxBatch: 256, patienceMs: 10 };

/** How charges outside transactions share statements (credits-batch.ts): as key lookups do. */
const CHARGES: CoalescerSettings = { maxOut: 1, maxBatch: 256, patienceMs: 10 };

/**
 * Tables whose records a transaction reads `FOR SHARE`, not `FOR UPDATE`: APIs, permissions and
 * roles, which many transactions read at once (every createKey of an API, every grant of a
 * permission or role) and few change. A transaction that changes or deletes one waits for those
 * that read it; two that change the same one at once end in a deadlock PostgreSQL breaks, and the
 * store runs the aborted transaction again. (Identities, which their own operations change, are
 * read `FOR UPDATE`.)
 */
const SHARED: ReadonlySet<TableName> = new Set<TableName>(["apis", "permissions", "roles"]);

interface LinkRow {
  owner: string;
  id: string;
  kind: "p" | "r";
}

export class PgTx implements StorageTx {
  /** A table's schema-qualified name. */
  private readonly t: (table: string) => string;
  /** Start of this schema's advisory-lock names. */
  private readonly lockPrefix: string;
  /** Keys looked up by hash outside a transaction: under load, several per statement. */
  private readonly keysByHash: Coalescer<KeyRecord> | undefined;
  /** Charges made outside a transaction: under load, several per statement. */
  private readonly charges: CreditsBatcher | undefined;

  /**
   * `locking`: inside a transaction (lock what is read). `atomically`: how a multi-statement
   * change (a cascading delete) runs outside one: in a transaction of its own. `cache`: the
   * records that change rarely, read through it outside a transaction. `changed`: told of every
   * write to a table the cache `announces` (a transaction's, after its statement; `direct`'s: awaited).
   */
  constructor(
    private readonly query: Query,
    schema: string,
    private readonly limits: RedisLimits,
    private readonly locking: boolean,
    private readonly changed: () => Promise<void> | void,
    private readonly announces: RecordCache["announces"],
    private readonly atomically?: (fn: (tx: StorageTx) => Promise<void>) => Promise<void>,
    private readonly cache?: RecordCache,
  ) {
    const s = quoteIdent(schema);
    this.t = (table) => `${s}.${table}`;
    this.lockPrefix = `keyguard.${schema}.`;
    if (!locking) {
      this.keysByHash = new Coalescer(
        // One value alone keeps the plain statement (its plan is an index lookup, where the
        // generic plan of `= ANY($1)` may not be).
        async (hashes) => {
          const rows =
            hashes.length === 1 ? await this.read("keys", "r.hash = $1", hashes) : await this.read("keys", "r.hash = ANY($1)", [hashes]);
          return new Map(rows.map((k) => [k.hash, k]));
        },
        KEY_LOOKUPS,
      );
      this.charges = new CreditsBatcher(query, this.t("keys"), CHARGES);
    }
  }

  /** Waits for (and holds until the transaction ends) an advisory lock on `name`. */
  private async lockName(name: string): Promise<void> {
    await this.query("SELECT pg_advisory_xact_lock(hashtext($1))", [this.lockPrefix + name]);
  }

  private async read<T extends TableName>(table: T, where: string, params: readonly unknown[], tail = ""): Promise<Tables[T][]> {
    const t = this.t(LAYOUTS[table].table);
    const cols =
      table === "keys"
        ? "r.id, r.data, r.identity_id, r.credits_remaining::float8 AS credits_remaining, r.credits_last_refill_at::float8 AS credits_last_refill_at, r.credits_refill"
        : "r.id, r.data";
    const linked = table === "keys" || table === "roles";
    if (!this.locking && linked) {
      // One round trip: the links come along as arrays (no lock, so one snapshot is right).
      const arrays =
        table === "keys"
          ? `, ARRAY(SELECT l.permission_id FROM ${this.t("key_permissions")} l WHERE l.key_id = r.id ORDER BY l.position) AS permission_ids` +
            `, ARRAY(SELECT l.role_id FROM ${this.t("key_roles")} l WHERE l.key_id = r.id ORDER BY l.position) AS role_ids`
          : `, ARRAY(SELECT l.permission_id FROM ${this.t("role_permissions")} l WHERE l.role_id = r.id ORDER BY l.position) AS permission_ids`;
      const rows = await this.query<RecordRow & { permission_ids: string[]; role_ids?: string[] }>(
        `SELECT ${cols}${arrays} FROM ${t} r WHERE ${where} ${tail}`,
        params,
      );
      return rows.map((r) => toRecord(table, r, { permissionIds: r.permission_ids, roleIds: r.role_ids ?? [] }));
    }
    const rows = await this.query<RecordRow>(
      `SELECT ${cols} FROM ${t} r WHERE ${where} ${tail}${this.locking ? (SHARED.has(table) ? " FOR SHARE" : " FOR UPDATE") : ""}`,
      params,
    );
    if (!linked || rows.length === 0) return rows.map((r) => toRecord(table, r, { permissionIds: [], roleIds: [] }));
    // Read after the lock, in a statement of its own: it sees every link committed before it.
    const ids = rows.map((r) => r.id);
    const links = await this.query<LinkRow>(
      table === "keys"
        ? `SELECT key_id AS owner, permission_id AS id, 'p' AS kind, position FROM ${this.t("key_permissions")} WHERE key_id = ANY($1)
           UNION ALL SELECT key_id, role_id, 'r', position FROM ${this.t("key_roles")} WHERE key_id = ANY($1) ORDER BY position`
        : `SELECT role_id AS owner, permission_id AS id, 'p' AS kind FROM ${this.t("role_permissions")} WHERE role_id = ANY($1) ORDER BY position`,
      [ids],
    );
    const by = new Map(ids.map((id) => [id, { permissionIds: [] as string[], roleIds: [] as string[] }]));
    for (const l of links) by.get(l.owner)?.[l.kind === "p" ? "permissionIds" : "roleIds"].push(l.id);
    return rows.map((r) => toRecord(table, r, by.get(r.id)!));
  }

  async get<T extends TableName>(table: T, id: string): Promise<Tables[T] | undefined> {
    const load = async () => (await this.read(table, "r.id = $1", [id]))[0];
    if (this.cache?.holds(table)) {
      return this.cache.read(table, id, load, table === "keys" ? (record) => keptById(record as KeyRecord) : undefined);
    }
    return load();
  }

  async keyByHash(hash: string): Promise<KeyRecord | undefined> {
    const batched = this.keysByHash;
    const load = batched ? () => batched.get(hash) : async () => (await this.read("keys", "r.hash = $1", [hash]))[0];
    return this.cache?.holds("keys") ? this.cache.read("keys", `#${hash}`, load, keptByHash) : load();
  }

  async rootKeyByHash(hash: string): Promise<Tables["rootKeys"] | undefined> {
    const load = async () => (await this.read("rootKeys", "r.hash = $1", [hash]))[0];
    return this.cache ? this.cache.read("rootKeys", `#${hash}`, load) : load();
  }

  async find<T extends TableName>(table: T, workspaceId: string, field: IndexedFields[T], value: string): Promise<Tables[T][]> {
    return this.list(table, workspaceId, { where: { field, value } });
  }

  async list<T extends TableName>(
    table: T,
    workspaceId: string,
    options: { from?: string; limit?: number; where?: { field: IndexedFields[T]; value: string } } = {},
  ): Promise<Tables[T][]> {
    if (!LAYOUTS[table].scoped) return [];
    const params: unknown[] = [workspaceId];
    let where = "r.workspace_id = $1";
    if (options.where) {
      const column = filterColumn(table, options.where.field);
      if (this.locking) await this.lockName(`${table}.${workspaceId}.${column}.${options.where.value}`);
      params.push(options.where.value);
      where += ` AND r.${column} = $${params.length}`;
    }
    if (options.from !== undefined) {
      params.push(options.from);
      where += ` AND r.id >= $${params.length}`;
    }
    let tail = "ORDER BY r.id";
    if (options.limit !== undefined) {
      params.push(options.limit);
      tail += ` LIMIT $${params.length}`;
    }
    return this.read(table, where, params, tail);
  }

  async sortedKeys(
    workspaceId: string,
    apiId: string,
    sort: KeySort,
    options: { from?: KeyPosition; limit: number },
  ): Promise<KeyRecord[]> {
    // The same name `list` locks for an API's keys: a key added meanwhile waits.
    if (this.locking) await this.lockName(`keys.${workspaceId}.api_id.${apiId}`);
    const params: unknown[] = [workspaceId, apiId];
    const v = PG_SORT_COLUMNS[sort.by];
    let where = "r.workspace_id = $1 AND r.api_id = $2";
    const at = options.from;
    const p = (value: unknown) => `$${params.push(value)}`;
    const desc = sort.order === "desc";
    if (at !== undefined && at.value === null) {
      where += desc ? ` AND (${v} IS NOT NULL OR r.id <= ${p(at.id)})` : ` AND ${v} IS NULL AND r.id >= ${p(at.id)}`;
    } else if (at !== undefined) {
      const value = p(at.value);
      where += desc
        ? ` AND (${v} < ${value} OR (${v} = ${value} AND r.id <= ${p(at.id)}))`
        : ` AND (${v} IS NULL OR ${v} > ${value} OR (${v} = ${value} AND r.id >= ${p(at.id)}))`;
    }
    const order = desc ? `${v} DESC NULLS FIRST, r.id DESC` : `${v} ASC NULLS LAST, r.id ASC`;
    return this.read("keys", where, params, `ORDER BY ${order} LIMIT ${p(options.limit)}`);
  }

  async put<T extends TableName>(table: T, record: Tables[T]): Promise<void> {
    // A key created was in no cache (only keys found are kept): no message.
    const created = await this.write(table, record);
    if (this.announces(table) && !created) await this.changed();
  }

  /** Writes `record` (writes.ts); whether it was a key created (not one replaced). */
  private async write<T extends TableName>(table: T, record: Tables[T]): Promise<boolean> {
    // One statement: the row and its links are replaced together, atomically even outside a transaction.
    return (await runPart<boolean>(this.query, (p) => putPart(this.t, table, record, p, "w"))) === true;
  }

  async delete(table: TableName, id: string): Promise<void> {
    await this.remove(table, id);
    // An identity deleted leaves its keys without it: announced as keys are.
    if (this.announces(table)) await this.changed();
  }

  private async remove(table: TableName, id: string): Promise<void> {
    if (
      !this.locking &&
      this.atomically &&
      (table === "keys" || table === "apis" || table === "permissions" || table === "roles" || table === "identities")
    ) {
      return this.atomically((tx) => tx.delete(table, id));
    }
    switch (table) {
      case "keys":
        await this.lockForDelete("keys", id, []);
        return this.deleteKeys(table, id);
      case "apis":
        // Its keys are locked once, after it: an API may have millions, and the writers that lock
        // a key and then read its API (keys.rerollKey) are few.
        await this.lockForDelete("apis", id, [["keys", `SELECT id FROM ${this.t("keys")} WHERE api_id = $1`]], false);
        return this.deleteKeys(table, id);
      case "permissions":
        await this.lockForDelete("permissions", id, [
          ["keys", `SELECT key_id FROM ${this.t("key_permissions")} WHERE permission_id = $1`],
          ["roles", `SELECT role_id FROM ${this.t("role_permissions")} WHERE permission_id = $1`],
        ]);
        await this.query(
          `WITH p AS (DELETE FROM ${this.t("permissions")} WHERE id = $1),
           k AS (DELETE FROM ${this.t("key_permissions")} WHERE permission_id = $1),
           r AS (DELETE FROM ${this.t("role_permissions")} WHERE permission_id = $1)
           SELECT 1`,
          [id],
        );
        return;
      case "roles":
        await this.lockForDelete("roles", id, [["keys", `SELECT key_id FROM ${this.t("key_roles")} WHERE role_id = $1`]]);
        await this.query(
          `WITH r AS (DELETE FROM ${this.t("roles")} WHERE id = $1),
           k AS (DELETE FROM ${this.t("key_roles")} WHERE role_id = $1),
           p AS (DELETE FROM ${this.t("role_permissions")} WHERE role_id = $1)
           SELECT 1`,
          [id],
        );
        return;
      case "identities":
        // Its keys are not locked first: the update below waits for a transaction changing one of
        // them and then clears the identity it wrote; a key joins an identity only with it locked.
        await this.lockForDelete("identities", id, []);
        await this.query(
          `WITH i AS (DELETE FROM ${this.t("identities")} WHERE id = $1),
           k AS (UPDATE ${this.t("keys")} SET identity_id = NULL WHERE identity_id = $1)
           SELECT 1`,
          [id],
        );
        await this.limits.dropCounters({ owner: id });
        return;
      case "ratelimitNamespaces":
        // One statement: the namespace and its overrides go together, atomically even outside a transaction.
        await this.query(
          `WITH n AS (DELETE FROM ${this.t("ratelimit_namespaces")} WHERE id = $1),
           o AS (DELETE FROM ${this.t("ratelimit_overrides")} WHERE namespace_id = $1)
           SELECT 1`,
          [id],
        );
        return;
      default:
        await this.query(`DELETE FROM ${this.t(LAYOUTS[table].table)} WHERE id = $1`, [id]);
    }
  }

  /**
   * Locks what a cascading delete changes, each step in a statement of its own, before the
   * cascade's statement: the records that point at the row (`dependents`: their ids selected from
   * the row's id), then the row itself `FOR UPDATE`, then the dependents again (those that came
   * to point at it meanwhile). A transaction that read the row (an API while it creates a key
   * there, a permission or role while it grants it, an identity while it joins a key to it) has
   * ended by then, and the cascade, a statement started after, sees what it wrote: a
   * statement sees what was committed when it started, so a cascade that waited for those
   * transactions inside its own statement would miss their rows. A transaction reading the row
   * after this one committed does not find it. The dependents come first because a writer locks
   * its own record (a key) before the one it points at: the other order would deadlock with it
   * (`dependentsFirst: false` locks them after the row only).
   */
  private async lockForDelete(
    table: "keys" | "apis" | "permissions" | "roles" | "identities",
    id: string,
    dependents: ReadonlyArray<readonly ["keys" | "roles", string]>,
    dependentsFirst = true,
  ): Promise<void> {
    if (dependentsFirst) for (const [t, sql] of dependents) await this.lockRows(t, sql, id);
    await this.query(`SELECT 1 FROM ${this.t(LAYOUTS[table].table)} WHERE id = $1 FOR UPDATE`, [id]);
    for (const [t, sql] of dependents) await this.lockRows(t, sql, id);
  }

  /** Locks the rows of `table` whose ids `idsSql` selects, in id order, before a cascade changes their links. */
  private async lockRows(table: "keys" | "roles", idsSql: string, id: string): Promise<void> {
    if (!this.locking) return;
    await this.query(`SELECT 1 FROM ${this.t(table)} WHERE id IN (${idsSql}) ORDER BY id FOR UPDATE`, [id]);
  }

  /** Deletes a key (or an API and its keys) with their links, then their rate-limit counters. */
  private async deleteKeys(table: "keys" | "apis", id: string): Promise<void> {
    const rows = await this.query<{ id: string; limit_ids: string[] | null }>(
      `WITH ${table === "apis" ? `a AS (DELETE FROM ${this.t("apis")} WHERE id = $1),` : ""}
       d AS (DELETE FROM ${this.t("keys")} WHERE ${table === "apis" ? "api_id" : "id"} = $1 RETURNING id, data),
       p AS (DELETE FROM ${this.t("key_permissions")} WHERE key_id IN (SELECT id FROM d)),
       r AS (DELETE FROM ${this.t("key_roles")} WHERE key_id IN (SELECT id FROM d))
       SELECT id, ARRAY(SELECT jsonb_array_elements(d.data->'ratelimits')->>'id') AS limit_ids FROM d`,
      [id],
    );
    if (rows.length === 0) return;
    await this.limits.dropCounters({ owners: rows.map((r) => r.id) });
    const limitIds = rows.flatMap((r) => r.limit_ids ?? []);
    if (limitIds.length > 0) await this.limits.dropCounters({ limitIds });
  }

  spendCredits(
    keyId: string,
    cost: number,
    now: number,
    refill?: DueRefill,
    crossings?: CreditsCrossings,
  ): Promise<SpendOutcome | undefined> {
    if (this.charges) return this.charges.spend(keyId, cost, now, refill, crossings);
    return spendCredits(this.query, this.t("keys"), keyId, cost, now, refill, crossings);
  }

  limit(checks: readonly LimitCheck[], now: number): Promise<{ passed: boolean; states: LimitState[] }> {
    return this.limits.limit(checks, now);
  }

  dropCounters(target: { limitIds: readonly string[] } | { owner: string }): Promise<void> {
    return this.limits.dropCounters(target);
  }

  lastUsed(keyIds: readonly string[]): Promise<Map<string, number>> {
    return lastUsed(this.query, this.t, keyIds);
  }

  markUsed(uses: ReadonlyMap<string, number>): Promise<void> {
    return markUsed(this.query, this.t, uses);
  }

  appendAudit(event: AuditEvent): Promise<void> {
    // The chain's head is locked until the transaction ends: outside one, a transaction of its own.
    if (!this.locking) return this.atomically!((tx) => tx.appendAudit(event));
    return appendAudit(this.query, this.t, event);
  }

  listAudit(query: AuditQuery): Promise<AuditEvent[]> {
    return listAudit(this.query, this.t, query);
  }

  enqueueWebhooks(messages: readonly WebhookMessage[]): Promise<void> {
    return enqueueWebhooks(this.query, this.t, messages);
  }

  rescheduleWebhooks(workspaceId: string, endpointId: string, dueAt: number): Promise<number> {
    return rescheduleWebhooks(this.query, this.t, workspaceId, endpointId, dueAt);
  }

  claimExpiryNotices(from: number, until: number, limit: number): Promise<ExpiringKey[]> {
    return claimExpiryNotices(this.query, this.t("keys"), from, until, limit);
  }

  async getMeta(name: string, options?: MetaReadOptions): Promise<string | undefined> {
    // In a transaction, a read of a meta value serialises with other transactions reading it: two
    // instances starting together see one bootstrap, not two.
    if (this.locking) await this.lockName(`meta.${name}`);
    const load = async () => (await this.query<{ value: string }>(`SELECT value FROM ${this.t("meta")} WHERE name = $1`, [name]))[0]?.value;
    if (this.locking || !this.cache || options?.cached !== true) return load();
    // An absent value is kept too, wrapped: most workspaces have no webhook endpoints, and every
    // audited call reads them.
    return (await this.cache.read("meta", name, async () => ({ value: await load() })))?.value;
  }

  async setMeta(name: string, value: string): Promise<void> {
    await this.query(
      `INSERT INTO ${this.t("meta")} (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`,
      [name, value],
    );
    // A meta value may be cached outside transactions (`cached`).
    await this.changed();
  }
}
