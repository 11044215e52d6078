// The memory backend: the whole state in Maps (see tables.ts), for demos and tests, and
// under the JSON data file. Transactions run one at a time (an async lock) and undo their
// writes when they throw; calls on `direct` are synchronous inside, so each is atomic.
import { evaluatePlan } from "../../analytics/evaluate";
import type { AnalyticsPlan, AnalyticsScope } from "../../analytics/plan";
import { windowEnded } from "../../domain/sliding-window";
import { stateMeta } from "../state-file";
import { type AuditChainCursor, type RatelimitCountQuery, type Storage, type StorageTx, type WebhookQuery } from "../seam";
import { GENESIS_HASH, type ChainHead } from "../../domain/audit-chain";
import {
  TABLE_NAMES,
  type AuditEvent,
  type WebhookMessage,
  type LocalState,
  type RatelimitCount,
  type VerificationEvent,
} from "../../records";
import { MemoryTables, type AnyRecord } from "./tables";
import { MemoryTx, copy, settle, type MemoryTxHost } from "./tx";
import { Mutex } from "../mutex";

/** How often (in service-clock ms, as `limit` sees it) counters of ended windows are dropped. */
const PRUNE_EVERY_MS = 60_000;

/** The memory backend. `memoryStorage()` makes one; `counterCount` is there for diagnostics and tests. */
class MemoryStore implements Storage, MemoryTxHost {
  readonly kind = "memory";
  readonly direct: StorageTx;
  private readonly data = new MemoryTables();
  private readonly mutex = new Mutex();
  private lastPrune = -Infinity;

  constructor(initial?: LocalState) {
    this.direct = new MemoryTx(this, this.data, undefined);
    if (initial) {
      for (const table of TABLE_NAMES) {
        for (const record of Object.values(initial[table]) as AnyRecord[]) this.data.write(table, record.id, copy(record));
      }
      for (const [name, value] of stateMeta(initial)) this.data.writeMeta(name, value);
    }
  }

  async transaction<T>(fn: (tx: StorageTx) => Promise<T>): Promise<T> {
    await this.mutex.lock();
    const undo: Array<() => void> = [];
    const tx = new MemoryTx(this, this.data, undo);
    try {
      return await fn(tx);
    } catch (err) {
      for (let i = undo.length - 1; i >= 0; i--) undo[i]!();
      throw err;
    } finally {
      tx.ended = true;
      this.mutex.unlock();
    }
  }

  /** Runs `fn` at once when no transaction runs, else right after the ones started before. */
  whenIdle<T>(fn: () => T): Promise<T> {
    if (!this.mutex.locked) return settle(fn);
    return this.mutex.lock().then(() => {
      try {
        return fn();
      } finally {
        this.mutex.unlock();
      }
    });
  }

  /** Drops counters of windows that ended, at most once a minute of service time. */
  pruneCounters(now: number): void {
    if (now >= this.lastPrune && now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    for (const [counter, value] of this.data.counters) {
      if (windowEnded(value.window, value.duration, now)) this.data.counters.delete(counter);
    }
  }

  /** How many rate-limit counters the store holds. */
  counterCount(): number {
    return this.data.counters.size;
  }

  async appendVerifications(events: readonly VerificationEvent[]): Promise<void> {
    for (const e of events) {
      this.data.events.push({ ...e, tags: [...e.tags] });
      const last = this.data.lastUsed.get(e.keyId);
      if (last === undefined || e.time > last) this.data.lastUsed.set(e.keyId, e.time);
    }
  }

  async deleteVerificationsBefore(before: number, signal?: AbortSignal): Promise<number> {
    if (signal?.aborted) return 0;
    const kept = this.data.events.filter((e) => e.time >= before);
    const deleted = this.data.events.length - kept.length;
    this.data.events = kept;
    return deleted;
  }

  async queryVerifications(plan: AnalyticsPlan, scope: AnalyticsScope): Promise<Array<Record<string, unknown>>> {
    return evaluatePlan(plan, scope, this.data.events);
  }

  async addRatelimitCounts(counts: readonly RatelimitCount[]): Promise<void> {
    for (const c of counts) {
      const id = `${c.workspaceId}\u0000${c.namespaceId}\u0000${c.hour}`;
      const row = this.data.ratelimitCounts.get(id);
      if (row) {
        row.passed += c.passed;
        row.limited += c.limited;
      } else this.data.ratelimitCounts.set(id, { ...c });
    }
  }

  async ratelimitCounts(query: RatelimitCountQuery): Promise<RatelimitCount[]> {
    const ids = new Set(query.namespaceIds);
    const out: RatelimitCount[] = [];
    for (const c of this.data.ratelimitCounts.values()) {
      if (c.workspaceId === query.workspaceId && ids.has(c.namespaceId) && c.hour >= query.from && c.hour < query.until) out.push({ ...c });
    }
    return out;
  }

  async deleteAuditBefore(before: number): Promise<number> {
    return this.whenIdle(() => {
      const kept = this.data.audit.filter((e) => e.time >= before);
      const deleted = this.data.audit.length - kept.length;
      this.data.audit = kept;
      return deleted;
    });
  }

  auditHeads(): Promise<Map<string, ChainHead>> {
    return this.whenIdle(() => {
      const heads = new Map<string, ChainHead>();
      for (const e of this.data.audit) heads.set(e.workspaceId, { seq: 0, hash: GENESIS_HASH });
      for (const [ws, head] of this.data.auditHeads) heads.set(ws, { ...head });
      return heads;
    });
  }

  readAuditChain(workspaceId: string, after: AuditChainCursor | undefined, limit: number): Promise<AuditEvent[]> {
    return this.whenIdle(() => {
      const order = (e: AuditEvent): [number, string] => [e.seq ?? -1, e.id];
      const [seq, id] = after === undefined ? [-Infinity, ""] : [after.seq ?? -1, after.id];
      return this.data.audit
        .filter((e) => e.workspaceId === workspaceId)
        .filter((e) => {
          const [s, i] = order(e);
          return s > seq || (s === seq && i > id);
        })
        .sort((a, b) => order(a)[0] - order(b)[0] || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        .slice(0, limit)
        .map(copy);
    });
  }

  claimWebhooks(now: number, limit: number, leaseMs: number): Promise<WebhookMessage[]> {
    return this.whenIdle(() => {
      const due = [...this.data.outbox.values()]
        .filter((m) => m.status === "pending" && m.nextAttemptAt <= now)
        .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || (a.id < b.id ? -1 : 1))
        .slice(0, limit);
      for (const m of due) m.nextAttemptAt = now + leaseMs;
      return due.map(copy);
    });
  }

  settleWebhook(message: WebhookMessage): Promise<void> {
    return this.whenIdle(() => void this.data.outbox.set(message.id, copy(message)));
  }

  getWebhook(messageId: string): Promise<WebhookMessage | undefined> {
    return this.whenIdle(() => {
      const m = this.data.outbox.get(messageId);
      return m && copy(m);
    });
  }

  listWebhooks(q: WebhookQuery): Promise<WebhookMessage[]> {
    return this.whenIdle(() =>
      [...this.data.outbox.values()]
        .filter(
          (m) =>
            m.workspaceId === q.workspaceId &&
            (q.endpointId === undefined || m.endpointId === q.endpointId) &&
            (q.status === undefined || m.status === q.status) &&
            (q.from === undefined || m.id <= q.from),
        )
        .sort((a, b) => (a.id < b.id ? 1 : -1))
        .slice(0, q.limit)
        .map(copy),
    );
  }

  async close(): Promise<void> {}
}

/**
 * A store that keeps everything in memory (lost on exit), optionally starting from a state
 * (e.g. one read from a file).
 */
export function memoryStorage(initial?: LocalState): MemoryStore {
  return new MemoryStore(initial);
}
