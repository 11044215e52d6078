// A first-come first-served async lock, held by one caller at a time or by `slots`: what serialises
// the memory and SQLite stores' transactions, and what lets the PostgreSQL store's audit appends of
// one workspace out two at a time (postgres/chain-turns.ts).
export class Mutex {
  private holders = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly slots = 1) {}

  /** Whether every slot is held (callers of `lock()` now wait). */
  get locked(): boolean {
    return this.holders >= this.slots;
  }

  /** Whether no one holds it (and so no one waits for it). */
  get idle(): boolean {
    return this.holders === 0;
  }

  /** Resolves once the caller holds a slot; release it with `unlock()`. */
  lock(): Promise<void> {
    if (this.holders < this.slots) {
      this.holders++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Hands the slot to the next waiter, or frees it. */
  unlock(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.holders--;
  }
}
