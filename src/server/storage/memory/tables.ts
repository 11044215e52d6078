// The memory store's data: one Map per table, the hash lookups, the workspace and `find`-field
// indexes, meta values and rate-limit counters. Every change goes through `write*`, which keeps
// the indexes right and can report the previous value (for a transaction's undo log).
import type { ChainHead } from "../../domain/audit-chain";
import type { WindowCounter } from "../../domain/sliding-window";
import {
  TABLE_NAMES,
  type AuditEvent,
  type IndexedFields,
  type RatelimitCount,
  type WebhookMessage,
  type TableName,
  type Tables,
  type VerificationEvent,
} from "../../records";

export type AnyRecord = Tables[TableName];

/** A counter with what it belongs to. */
interface StoredCounter extends WindowCounter {
  duration: number;
  owner?: string;
}

const INDEXED: { readonly [T in TableName]: ReadonlyArray<IndexedFields[T]> } = {
  workspaces: [],
  rootKeys: [],
  apis: [],
  keys: ["apiId", "identityId"],
  permissions: ["slug"],
  roles: ["name"],
  identities: ["externalId"],
  ratelimitNamespaces: ["name"],
  ratelimitOverrides: ["namespaceId"],
  portals: [],
  portalSessions: [],
};

/** The workspace a record belongs to; a workspace belongs to itself. */
function workspaceOf(table: TableName, record: AnyRecord): string {
  return table === "workspaces" ? record.id : (record as { workspaceId: string }).workspaceId;
}

function fieldKey(table: TableName, field: string, workspaceId: string, value: string): string {
  return `${table}\0${field}\0${workspaceId}\0${value}`;
}

function addTo(index: Map<string, Set<string>>, key: string, id: string): void {
  let ids = index.get(key);
  if (!ids) index.set(key, (ids = new Set()));
  ids.add(id);
}

function removeFrom(index: Map<string, Set<string>>, key: string, id: string): void {
  const ids = index.get(key);
  if (!ids) return;
  ids.delete(id);
  if (ids.size === 0) index.delete(key);
}

export class MemoryTables {
  readonly records = Object.fromEntries(TABLE_NAMES.map((t) => [t, new Map<string, AnyRecord>()])) as Record<
    TableName,
    Map<string, AnyRecord>
  >;
  readonly keyByHash = new Map<string, string>();
  readonly rootKeyByHash = new Map<string, string>();
  readonly meta = new Map<string, string>();
  readonly counters = new Map<string, StoredCounter>();
  /** The webhook outbox, by message id. */
  readonly outbox = new Map<string, WebhookMessage>();
  /** Audit records, in id order (oldest first). */
  audit: AuditEvent[] = [];
  /** Each workspace's audit chain head (domain/audit-chain.ts). */
  readonly auditHeads = new Map<string, ChainHead>();
  /** Verification events, oldest appended first. */
  events: VerificationEvent[] = [];
  /** Counts of ratelimit.limit outcomes, by workspace, namespace and hour (joined by NUL). */
  readonly ratelimitCounts = new Map<string, RatelimitCount>();
  /** Key id → Unix ms of its latest verification event. */
  readonly lastUsed = new Map<string, number>();
  /** `table\0workspace` → ids. */
  private readonly byWorkspace = new Map<string, Set<string>>();
  /** `table\0field\0workspace\0value` → ids. */
  private readonly byField = new Map<string, Set<string>>();

  get<T extends TableName>(table: T, id: string): Tables[T] | undefined {
    return this.records[table].get(id) as Tables[T] | undefined;
  }

  /** Ids of a workspace's records, optionally only those whose indexed field has this value. */
  ids(table: TableName, workspaceId: string, where?: { field: string; value: string }): string[] {
    const set = where
      ? this.byField.get(fieldKey(table, where.field, workspaceId, where.value))
      : this.byWorkspace.get(`${table}\0${workspaceId}`);
    return set ? [...set] : [];
  }

  /** Puts (or, with `next` undefined, removes) a record; returns the one it replaced. */
  write(table: TableName, id: string, next: AnyRecord | undefined): AnyRecord | undefined {
    const map = this.records[table];
    const prev = map.get(id);
    if (prev) this.unindex(table, prev);
    if (next) {
      map.set(id, next);
      this.index(table, next);
    } else {
      map.delete(id);
    }
    return prev;
  }

  /** Sets (or, with `value` undefined, removes) a meta value; returns the previous one. */
  writeMeta(name: string, value: string | undefined): string | undefined {
    const prev = this.meta.get(name);
    if (value === undefined) this.meta.delete(name);
    else this.meta.set(name, value);
    return prev;
  }

  /** Sets (or removes) a counter; returns the previous one. */
  writeCounter(counter: string, value: StoredCounter | undefined): StoredCounter | undefined {
    const prev = this.counters.get(counter);
    if (value === undefined) this.counters.delete(counter);
    else this.counters.set(counter, value);
    return prev;
  }

  private index(table: TableName, record: AnyRecord): void {
    const ws = workspaceOf(table, record);
    addTo(this.byWorkspace, `${table}\0${ws}`, record.id);
    for (const field of INDEXED[table]) {
      const value = (record as unknown as Record<string, unknown>)[field];
      if (typeof value === "string") addTo(this.byField, fieldKey(table, field, ws, value), record.id);
    }
    if (table === "keys") this.keyByHash.set((record as Tables["keys"]).hash, record.id);
    if (table === "rootKeys") this.rootKeyByHash.set((record as Tables["rootKeys"]).hash, record.id);
  }

  private unindex(table: TableName, record: AnyRecord): void {
    const ws = workspaceOf(table, record);
    removeFrom(this.byWorkspace, `${table}\0${ws}`, record.id);
    for (const field of INDEXED[table]) {
      const value = (record as unknown as Record<string, unknown>)[field];
      if (typeof value === "string") removeFrom(this.byField, fieldKey(table, field, ws, value), record.id);
    }
    if (table === "keys") this.keyByHash.delete((record as Tables["keys"]).hash);
    if (table === "rootKeys") this.rootKeyByHash.delete((record as Tables["rootKeys"]).hash);
  }
}
