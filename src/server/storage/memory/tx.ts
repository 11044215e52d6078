// One view of the memory store's tables as a StorageTx: a transaction's (each write noted in an
// undo log) or `direct`'s (each call waits for no transaction to run, then runs synchronously).
import { spendFrom, type DueRefill, type SpendOutcome, type CreditsCrossings } from "../../domain/credits";
import { evaluateLimits, isLimitCounterOf, type LimitCheck, type LimitState } from "../../domain/sliding-window";
import { matchesAudit } from "../audit-query";
import { sortKeys, type KeyPosition, type KeySort } from "../../domain/key-sort";
import { chainAfter, GENESIS_HASH } from "../../domain/audit-chain";
import type { AuditQuery, StorageTx } from "../seam";
import type { WebhookMessage, AuditEvent, ExpiringKey, IndexedFields, KeyRecord, TableName, Tables } from "../../records";
import type { AnyRecord, MemoryTables } from "./tables";

/** What a view needs of its store. */
export interface MemoryTxHost {
  /** Runs `fn` at once when no transaction runs, else right after the ones started before. */
  whenIdle<T>(fn: () => T): Promise<T>;
  /** Drops counters of windows that ended (at most once a minute of service time). */
  pruneCounters(now: number): void;
}

/**
 * A deep copy of plain JSON data (records are nothing else): faster than structuredClone. An
 * object is spread first (a record's shape is copied whole), then only its object fields are
 * replaced by their copies: a store by computed name costs more than the spread.
 */
export function copy<T>(value: T): T {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      out[i] = typeof v === "object" && v !== null ? copy(v) : v;
    }
    return out as T;
  }
  return copyFields({ ...value });
}

/**
 * Replaces the object fields of a spread copy by their copies. The spread took own enumerable
 * properties only; a "__proto__" key (possible in meta) is an own property of it, which the
 * assignment then sets (it shadows the prototype's setter).
 */
function copyFields<T extends object>(spread: T): T {
  const out = spread as Record<string, unknown>;
  for (const k in out) {
    const v = out[k];
    if (typeof v === "object" && v !== null && Object.hasOwn(out, k)) out[k] = copy(v);
  }
  return spread;
}

/**
 * The tables a verification reads, each record copied by a spread of the table's own: a spread is
 * fast while it meets few shapes, and the one in `copy` meets every table's and every nested value's.
 */
const RECORD_COPIES: { [T in TableName]?: (record: Tables[T]) => Tables[T] } = {
  keys: (record) => copyFields({ ...record }),
  apis: (record) => copyFields({ ...record }),
  rootKeys: (record) => copyFields({ ...record }),
};

/** A copy of a record of `table`, as `copy` makes it. */
function copyRecord<T extends TableName>(table: T, record: Tables[T]): Tables[T] {
  const copier = RECORD_COPIES[table] as ((record: Tables[T]) => Tables[T]) | undefined;
  return copier ? copier(record) : copy(record);
}

/** `fn()` as a promise: its value, or its throw as a rejection. */
export function settle<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err);
  }
}

/** One view of the tables: a transaction's (with an undo log) or `direct`'s (without). */
export class MemoryTx implements StorageTx {
  /** Set when the transaction ended: using it after that is a bug. */
  ended = false;

  constructor(
    private readonly store: MemoryTxHost,
    private readonly data: MemoryTables,
    /** Undo steps of the transaction; undefined on `direct`. */
    private readonly undo: Array<() => void> | undefined,
  ) {}

  /** Runs a step: inside the transaction at once; on `direct` as soon as no transaction runs. */
  private step<T>(fn: () => T): Promise<T> {
    if (this.ended) return Promise.reject(new Error("keyguard/server: memory store transaction used after it ended."));
    return this.undo ? settle(fn) : this.store.whenIdle(fn);
  }

  private write(table: TableName, id: string, next: AnyRecord | undefined): void {
    const prev = this.data.write(table, id, next);
    this.undo?.push(() => this.data.write(table, id, prev));
  }

  private writeCounter(counter: string, value: Parameters<MemoryTables["writeCounter"]>[1]): void {
    const prev = this.data.writeCounter(counter, value);
    this.undo?.push(() => this.data.writeCounter(counter, prev));
  }

  get<T extends TableName>(table: T, id: string): Promise<Tables[T] | undefined> {
    return this.step(() => {
      const found = this.data.get(table, id);
      return found && copyRecord(table, found);
    });
  }

  keyByHash(hash: string): Promise<KeyRecord | undefined> {
    return this.step(() => {
      const id = this.data.keyByHash.get(hash);
      const found = id === undefined ? undefined : this.data.get("keys", id);
      return found && copyRecord("keys", found);
    });
  }

  rootKeyByHash(hash: string): Promise<Tables["rootKeys"] | undefined> {
    return this.step(() => {
      const id = this.data.rootKeyByHash.get(hash);
      const found = id === undefined ? undefined : this.data.get("rootKeys", id);
      return found && copyRecord("rootKeys", found);
    });
  }

  find<T extends TableName>(table: T, workspaceId: string, field: IndexedFields[T], value: string): Promise<Tables[T][]> {
    return this.list(table, workspaceId, { where: { field, value } });
  }

  list<T extends TableName>(
    table: T,
    workspaceId: string,
    options: { from?: string; limit?: number; where?: { field: IndexedFields[T]; value: string } } = {},
  ): Promise<Tables[T][]> {
    return this.step(() => {
      const ids = this.data.ids(table, workspaceId, options.where as { field: string; value: string } | undefined).sort();
      const from = options.from;
      const start = from === undefined ? 0 : ids.findIndex((id) => id >= from);
      if (start < 0) return [];
      const end = options.limit === undefined ? ids.length : start + options.limit;
      return ids.slice(start, end).map((id) => copy(this.data.get(table, id)!));
    });
  }

  sortedKeys(workspaceId: string, apiId: string, sort: KeySort, options: { from?: KeyPosition; limit: number }): Promise<KeyRecord[]> {
    return this.step(() => {
      const keys = this.data.ids("keys", workspaceId, { field: "apiId", value: apiId }).map((id) => this.data.get("keys", id)!);
      return sortKeys(keys, sort, options.from)
        .slice(0, options.limit)
        .map((key) => copy(key));
    });
  }

  put<T extends TableName>(table: T, record: Tables[T]): Promise<void> {
    const stored = copy(record);
    return this.step(() => this.write(table, stored.id, stored));
  }

  delete(table: TableName, id: string): Promise<void> {
    return this.step(() => this.cascade(table, id));
  }

  /** Deletes a record and what depends on it (see `StorageTx.delete`). */
  private cascade(table: TableName, id: string): void {
    const record = this.data.get(table, id);
    if (!record) return;
    const ws = (record as { workspaceId?: string }).workspaceId ?? id;
    if (table === "apis") {
      for (const keyId of this.data.ids("keys", ws, { field: "apiId", value: id })) this.cascade("keys", keyId);
    } else if (table === "ratelimitNamespaces") {
      for (const overrideId of this.data.ids("ratelimitOverrides", ws, { field: "namespaceId", value: id })) {
        this.write("ratelimitOverrides", overrideId, undefined);
      }
    } else if (table === "keys" || table === "identities") {
      this.dropOwned(id);
    }
    if (table === "identities") {
      for (const keyId of this.data.ids("keys", ws, { field: "identityId", value: id })) {
        const { identityId: _, ...unlinked } = this.data.get("keys", keyId)!;
        this.write("keys", keyId, unlinked);
      }
    }
    if (table === "permissions" || table === "roles") {
      const field = table === "permissions" ? "permissionIds" : "roleIds";
      for (const key of this.data.records.keys.values() as Iterable<KeyRecord>) {
        if (key.workspaceId === ws && key[field].includes(id)) {
          this.write("keys", key.id, { ...key, [field]: key[field].filter((x) => x !== id) });
        }
      }
    }
    if (table === "permissions") {
      for (const role of this.data.records.roles.values() as Iterable<Tables["roles"]>) {
        if (role.workspaceId === ws && role.permissionIds.includes(id)) {
          this.write("roles", role.id, { ...role, permissionIds: role.permissionIds.filter((x) => x !== id) });
        }
      }
    }
    this.write(table, id, undefined);
  }

  spendCredits(
    keyId: string,
    cost: number,
    now: number,
    refill?: DueRefill,
    crossings?: CreditsCrossings,
  ): Promise<SpendOutcome | undefined> {
    return this.step(() => {
      const key = this.data.get("keys", keyId);
      const before = key?.credits;
      if (!before) return undefined;
      const credits = { ...before };
      const outcome = spendFrom(credits, cost, now, refill, crossings);
      if (credits.remaining !== before.remaining || credits.lastRefillAt !== before.lastRefillAt) {
        // Only the credits change: no index to update. Records are never shared with callers.
        key.credits = credits;
        this.undo?.push(() => (key.credits = before));
      }
      return outcome;
    });
  }

  limit(checks: readonly LimitCheck[], now: number): Promise<{ passed: boolean; states: LimitState[] }> {
    return this.step(() => {
      this.store.pruneCounters(now);
      const { passed, states, writes } = evaluateLimits((counter) => this.data.counters.get(counter), checks, now);
      for (const { check, value } of writes) {
        this.writeCounter(check.counter, { ...value, duration: check.duration, ...(check.owner !== undefined && { owner: check.owner }) });
      }
      return { passed, states };
    });
  }

  dropCounters(target: { limitIds: readonly string[] } | { owner: string }): Promise<void> {
    return this.step(() => {
      if ("owner" in target) return this.dropOwned(target.owner);
      if (target.limitIds.length === 0) return;
      for (const counter of [...this.data.counters.keys()]) {
        if (target.limitIds.some((id) => isLimitCounterOf(counter, id))) this.writeCounter(counter, undefined);
      }
    });
  }

  private dropOwned(owner: string): void {
    for (const [counter, value] of [...this.data.counters]) if (value.owner === owner) this.writeCounter(counter, undefined);
  }

  lastUsed(keyIds: readonly string[]): Promise<Map<string, number>> {
    return this.step(() => {
      const out = new Map<string, number>();
      for (const id of keyIds) {
        const at = this.data.lastUsed.get(id);
        if (at !== undefined) out.set(id, at);
      }
      return out;
    });
  }

  markUsed(uses: ReadonlyMap<string, number>): Promise<void> {
    return this.step(() => {
      for (const [id, at] of uses) {
        const last = this.data.lastUsed.get(id);
        if (last === undefined || at > last) this.data.lastUsed.set(id, at);
      }
    });
  }

  appendAudit(event: AuditEvent): Promise<void> {
    return this.step(() => {
      const audit = this.data.audit;
      const heads = this.data.auditHeads;
      const before = heads.get(event.workspaceId);
      const placed = chainAfter(copy(event), before ?? { seq: 0, hash: GENESIS_HASH });
      heads.set(event.workspaceId, placed.head);
      const kept = placed.event;
      // Ids of one process sort in the order they were made; records of a state read back may interleave.
      let at = audit.length;
      while (at > 0 && audit[at - 1]!.id > kept.id) at--;
      audit.splice(at, 0, kept);
      this.undo?.push(() => {
        const i = audit.indexOf(kept);
        if (i !== -1) audit.splice(i, 1);
        if (before === undefined) heads.delete(event.workspaceId);
        else heads.set(event.workspaceId, before);
      });
    });
  }

  listAudit(query: AuditQuery): Promise<AuditEvent[]> {
    return this.step(() => {
      const out: AuditEvent[] = [];
      const audit = this.data.audit;
      for (let i = audit.length - 1; i >= 0 && out.length < query.limit; i--) {
        if (matchesAudit(audit[i]!, query)) out.push(copy(audit[i]!));
      }
      return out;
    });
  }

  enqueueWebhooks(messages: readonly WebhookMessage[]): Promise<void> {
    return this.step(() => {
      for (const m of messages) {
        this.data.outbox.set(m.id, copy(m));
        this.undo?.push(() => this.data.outbox.delete(m.id));
      }
    });
  }

  rescheduleWebhooks(workspaceId: string, endpointId: string, dueAt: number): Promise<number> {
    return this.step(() => {
      let n = 0;
      for (const m of this.data.outbox.values()) {
        if (m.workspaceId !== workspaceId || m.endpointId !== endpointId || m.status !== "pending") continue;
        const before = m.nextAttemptAt;
        m.nextAttemptAt = dueAt;
        this.undo?.push(() => void (m.nextAttemptAt = before));
        n++;
      }
      return n;
    });
  }

  claimExpiryNotices(from: number, until: number, limit: number): Promise<ExpiringKey[]> {
    return this.step(() => {
      // Every key is looked at: the memory store holds demo- and test-sized states.
      const due = ([...this.data.records.keys.values()] as KeyRecord[])
        .filter((k) => k.expires !== undefined && k.expires > from && k.expires <= until && k.expiryNoticeFor !== k.expires)
        .sort((a, b) => a.expires! - b.expires! || (a.id < b.id ? -1 : 1))
        .slice(0, limit);
      for (const k of due) this.write("keys", k.id, { ...copy(k), expiryNoticeFor: k.expires! });
      return due.map((k) => ({ keyId: k.id, workspaceId: k.workspaceId, apiId: k.apiId, expires: k.expires! }));
    });
  }

  getMeta(name: string): Promise<string | undefined> {
    return this.step(() => this.data.meta.get(name));
  }

  setMeta(name: string, value: string): Promise<void> {
    return this.step(() => {
      const prev = this.data.writeMeta(name, value);
      this.undo?.push(() => this.data.writeMeta(name, prev));
    });
  }
}
