// Lookups made together share one statement ("smart batching"): while a statement of a kind is
// out, further lookups wait and then leave together in the next one (`= ANY($1)`). An idle service
// sends each lookup at once; under load one PostgreSQL round trip serves several verifications,
// which saves the service a socket write, a wake-up and a result parse per lookup. Every lookup
// leaves in a statement that starts after it was asked, so it sees every write committed before;
// a value asked twice is read once, and each caller gets a record of its own. A full batch leaves
// at once, and so does any lookup asked once the statements out have been out for `patienceMs`:
// one slow statement (a cold read, a server that hangs until its timeout) holds back only the
// lookups of that moment, never a growing queue.
import { copy } from "../memory/tx";

/** Runs one statement for distinct lookup values; answers the records found, by value. */
export type BatchRead<V> = (values: string[]) => Promise<Map<string, V>>;

interface Waiter<V> {
  resolve: (record: V | undefined) => void;
  reject: (err: unknown) => void;
}

export interface CoalescerSettings {
  /** Statements out at once before lookups wait (unless the last one left `patienceMs` ago). */
  maxOut: number;
  /** Most values per statement. */
  maxBatch: number;
  /** How long lookups wait behind statements out before one more leaves anyway, ms. */
  patienceMs: number;
}

export class Coalescer<V> {
  /** Lookups waiting for the next statement, by value (one value asked twice is read once). */
  private waiting = new Map<string, Array<Waiter<V>>>();
  private out = 0;
  /** When the last statement left (performance.now()). */
  private lastSent = 0;

  constructor(
    private readonly read: BatchRead<V>,
    private readonly settings: CoalescerSettings,
  ) {}

  get(value: string): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      const waiters = this.waiting.get(value);
      if (waiters) waiters.push({ resolve, reject });
      else this.waiting.set(value, [{ resolve, reject }]);
      const { maxOut, maxBatch, patienceMs } = this.settings;
      if (this.out < maxOut || this.waiting.size >= maxBatch || performance.now() - this.lastSent >= patienceMs) this.send();
    });
  }

  /** Sends every lookup waiting, in one statement (a full batch never waits: see `get`). */
  private send(): void {
    if (this.waiting.size === 0) return;
    const batch = this.waiting;
    this.waiting = new Map();
    this.out++;
    this.lastSent = performance.now();
    let read: Promise<Map<string, V>>;
    try {
      read = this.read([...batch.keys()]);
    } catch (err) {
      read = Promise.reject(err);
    }
    read
      .then(
        (found) => {
          for (const [value, waiters] of batch) {
            const record = found.get(value);
            waiters[0]!.resolve(record);
            for (let i = 1; i < waiters.length; i++) waiters[i]!.resolve(copy(record));
          }
        },
        (err: unknown) => {
          for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
        },
      )
      // Answering cannot throw but for a bug; whatever happens, no caller of the batch is left
      // waiting (a promise settles once: those answered keep their answer) and the next leaves.
      .catch((err: unknown) => {
        for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
      })
      .finally(() => {
        this.out--;
        if (this.out < this.settings.maxOut) this.send();
      });
  }
}
