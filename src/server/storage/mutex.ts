// A first-come first-served async lock: what serialises the memory and SQLite stores' transactions.
export class Mutex {
  private held = false;
  private readonly waiting: Array<() => void> = [];

  /** Whether someone holds the lock (or waits for it). */
  get locked(): boolean {
    return this.held;
  }

  /** Resolves once the caller holds the lock; release it with `unlock()`. */
  lock(): Promise<void> {
    if (!this.held) {
      this.held = true;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Hands the lock to the next waiter, or frees it. */
  unlock(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held = false;
  }
}
