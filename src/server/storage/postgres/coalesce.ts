// Lookups made together share one statement ("smart batching"): while a statement of a kind is
// out, further lookups wait and then leave together in the next one (`= ANY($1)`). An idle service
// sends each lookup at once; under load one PostgreSQL round trip serves several verifications,
// which saves the service a socket write, a wake-up and a result parse per lookup. Every lookup
// leaves in a statement that starts after it was asked, so it sees every write committed before;
// a value asked twice is read once, and each caller gets a record of its own.
import { copy } from "../memory/tx";

/** Runs one statement for distinct lookup values; answers the records found, by value. */
export type BatchRead<V> = (values: string[]) => Promise<Map<string, V>>;

interface Waiter<V> {
  resolve: (record: V | undefined) => void;
  reject: (err: unknown) => void;
}

export class Coalescer<V> {
  /** Lookups waiting for the next statement, by value (one value asked twice is read once). */
  private waiting = new Map<string, Array<Waiter<V>>>();
  private out = 0;

  /**
   * `maxOut`: statements out at once (more lookups wait for one to come back); `maxBatch`: most
   * values per statement.
   */
  constructor(
    private readonly read: BatchRead<V>,
    private readonly maxOut: number,
    private readonly maxBatch: number,
  ) {}

  get(value: string): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      const waiters = this.waiting.get(value);
      if (waiters) waiters.push({ resolve, reject });
      else this.waiting.set(value, [{ resolve, reject }]);
      if (this.out < this.maxOut) this.send();
    });
  }

  private send(): void {
    if (this.waiting.size === 0) return;
    let batch = this.waiting;
    if (batch.size <= this.maxBatch) this.waiting = new Map();
    else {
      batch = new Map();
      for (const [value, waiters] of this.waiting) {
        if (batch.size === this.maxBatch) break;
        batch.set(value, waiters);
        this.waiting.delete(value);
      }
    }
    this.out++;
    let read: Promise<Map<string, V>>;
    try {
      read = this.read([...batch.keys()]);
    } catch (err) {
      read = Promise.reject(err);
    }
    read.then(
      (found) => {
        this.out--;
        for (const [value, waiters] of batch) {
          const record = found.get(value);
          waiters[0]!.resolve(record);
          for (let i = 1; i < waiters.length; i++) waiters[i]!.resolve(copy(record));
        }
        this.send();
      },
      (err: unknown) => {
        this.out--;
        for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
        this.send();
      },
    );
  }
}
