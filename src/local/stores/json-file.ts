// The JSON data file (`dataFile`): the memory store loaded from the file, the whole state written
// back atomically after each transaction that changed something. A change that cannot be written
// is undone and its error thrown. Every write runs in a transaction, `direct` writes included.
import { exportFrom, loadState, saveState } from "../state-file";
import type { DueRefill, LimitCheck, Store, StoreTx, TableName, Tables } from "../storage";
import { memoryStore, type MemoryStore } from "./memory";

/** A transaction's view that notes whether anything was written. */
class TrackedTx implements StoreTx {
  changed = false;
  constructor(private readonly tx: StoreTx) {}

  get: StoreTx["get"] = (table, id) => this.tx.get(table, id);
  keyByHash: StoreTx["keyByHash"] = (hash) => this.tx.keyByHash(hash);
  rootKeyByHash: StoreTx["rootKeyByHash"] = (hash) => this.tx.rootKeyByHash(hash);
  find: StoreTx["find"] = (table, workspaceId, field, value) => this.tx.find(table, workspaceId, field, value);
  list: StoreTx["list"] = (table, workspaceId, options) => this.tx.list(table, workspaceId, options);
  getMeta: StoreTx["getMeta"] = (name) => this.tx.getMeta(name);

  put<T extends TableName>(table: T, record: Tables[T]): Promise<void> {
    this.changed = true;
    return this.tx.put(table, record);
  }
  delete(table: TableName, id: string): Promise<void> {
    this.changed = true;
    return this.tx.delete(table, id);
  }
  setMeta(name: string, value: string): Promise<void> {
    this.changed = true;
    return this.tx.setMeta(name, value);
  }
  dropCounters(target: Parameters<StoreTx["dropCounters"]>[0]): Promise<void> {
    this.changed = true;
    return this.tx.dropCounters(target);
  }
  async spendCredits(keyId: string, cost: number, now: number, refill?: DueRefill) {
    const outcome = await this.tx.spendCredits(keyId, cost, now, refill);
    if (outcome) this.changed = true;
    return outcome;
  }
  async limit(checks: readonly LimitCheck[], now: number) {
    const result = await this.tx.limit(checks, now);
    // Counters are not in the file, but a charge that could not be saved is not kept either.
    if (result.passed) this.changed = true;
    return result;
  }
}

class JsonFileStore implements Store {
  readonly kind = "json-file";
  readonly direct: StoreTx;

  constructor(
    private readonly file: string,
    private readonly memory: MemoryStore,
  ) {
    const reads = memory.direct;
    const inTx = <A extends unknown[], R>(call: (tx: StoreTx, ...args: A) => Promise<R>) =>
      (...args: A): Promise<R> => this.transaction((tx) => call(tx, ...args));
    this.direct = {
      get: (table, id) => reads.get(table, id),
      keyByHash: (hash) => reads.keyByHash(hash),
      rootKeyByHash: (hash) => reads.rootKeyByHash(hash),
      find: (table, workspaceId, field, value) => reads.find(table, workspaceId, field, value),
      list: (table, workspaceId, options) => reads.list(table, workspaceId, options),
      getMeta: (name) => reads.getMeta(name),
      put: inTx((tx, table: TableName, record: Tables[TableName]) => tx.put(table, record)),
      delete: inTx((tx, table: TableName, id: string) => tx.delete(table, id)),
      setMeta: inTx((tx, name: string, value: string) => tx.setMeta(name, value)),
      dropCounters: inTx((tx, target: Parameters<StoreTx["dropCounters"]>[0]) => tx.dropCounters(target)),
      spendCredits: inTx((tx, keyId: string, cost: number, now: number, refill?: DueRefill) => tx.spendCredits(keyId, cost, now, refill)),
      limit: inTx((tx, checks: readonly LimitCheck[], now: number) => tx.limit(checks, now)),
    };
  }

  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    return this.memory.transaction(async (tx) => {
      const tracked = new TrackedTx(tx);
      const out = await fn(tracked);
      if (tracked.changed) saveState(this.file, JSON.stringify(await exportFrom(tx)));
      return out;
    });
  }

  close(): Promise<void> {
    return this.memory.close();
  }
}

/**
 * The store of `dataFile`: the state read from `file` (nothing is written until the first
 * change). `restored`: whether the file existed.
 */
export function jsonFileStore(file: string): { store: Store; restored: boolean } {
  const loaded = loadState(file);
  return { store: new JsonFileStore(file, memoryStore(loaded)), restored: loaded !== undefined };
}
