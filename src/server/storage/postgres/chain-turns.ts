// Appends to a workspace's audit chain take their turns in PostgreSQL: each locks the chain's head
// row until its statement's transaction ends (audit.ts). Many sent at once from one instance wait
// there, on the row's lock, and each wait and wake-up costs PostgreSQL more than the append: with
// pgbench on the head's statement alone, 8 clients on one head took 289 to 324 µs of PostgreSQL's
// CPU per transaction, one client 137 µs. So an instance sends at most CHAIN_TURNS one-statement
// writes with an audit record per workspace at a time, and the others wait in the service, in the
// order they came. Two measured best for createKey: one alone leaves PostgreSQL idle between
// statements, three let the lock waits back (docs/benchmarks.md). The lock still orders the chain
// across instances; this only keeps one instance's appends from piling up on it.

/** One-statement writes with an audit record sent at once per workspace, by one instance. */
export const CHAIN_TURNS = 2;

/** At most `limit` calls per key run at once; the others wait, in the order they came. */
export class Turns {
  /** Keys with a call running: how many run, and the calls waiting for a turn. */
  private readonly keys = new Map<string, { running: number; waiting: Array<() => void> }>();

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`Turns: limit must be a positive integer, not ${limit}`);
  }

  /** Runs `fn` when fewer than `limit` calls of `key` run; its result or error is the caller's. */
  async run<R>(key: string, fn: () => Promise<R>): Promise<R> {
    let turn = this.keys.get(key);
    if (turn === undefined) {
      turn = { running: 0, waiting: [] };
      this.keys.set(key, turn);
    }
    const mine = turn;
    // A call that ends hands its turn to the first waiting, so `running` stays as it is then.
    if (mine.running < this.limit) mine.running++;
    else await new Promise<void>((resolve) => mine.waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = mine.waiting.shift();
      if (next !== undefined) next();
      else if (--mine.running === 0) this.keys.delete(key);
    }
  }

  /** How many keys have a call running or waiting (none once every call has ended). */
  get busyKeys(): number {
    return this.keys.size;
  }
}
