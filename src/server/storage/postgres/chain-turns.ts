// Appends to a workspace's audit chain take their turns in PostgreSQL: each locks the chain's head
// row until its statement's transaction ends (audit.ts). Many sent at once from one instance wait
// there, on the row's lock, and each wait and wake-up costs PostgreSQL more than the append: with
// pgbench on the head's statement alone, 8 clients on one head took 289 to 324 µs of PostgreSQL's
// CPU per transaction, one client 137 µs. So an instance sends at most CHAIN_TURNS one-statement
// writes with an audit record per workspace at a time, and the others wait in the service, in the
// order they came. Two measured best for createKey: one alone leaves PostgreSQL idle between
// statements, three let the lock waits back (docs/benchmarks.md). The lock still orders the chain
// across instances; this only keeps one instance's appends from piling up on it.
import { Mutex } from "../mutex";

/** One-statement writes with an audit record sent at once per workspace, by one instance. */
export const CHAIN_TURNS = 2;

/** At most `limit` calls per key run at once; the others wait, in the order they came. */
export class Turns {
  /** A lock of `limit` slots per key with a call running or waiting. */
  private readonly locks = new Map<string, Mutex>();

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`Turns: limit must be a positive integer, not ${limit}`);
  }

  /** Runs `fn` when fewer than `limit` calls of `key` run; its result or error is the caller's. */
  async run<R>(key: string, fn: () => Promise<R>): Promise<R> {
    let lock = this.locks.get(key);
    if (lock === undefined) {
      lock = new Mutex(this.limit);
      this.locks.set(key, lock);
    }
    await lock.lock();
    try {
      return await fn();
    } finally {
      lock.unlock();
      if (lock.idle) this.locks.delete(key);
    }
  }

  /** How many keys have a call running or waiting (none once every call has ended). */
  get busyKeys(): number {
    return this.locks.size;
  }
}
