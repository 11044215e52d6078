// Verification events on their way to the store: buffered in memory and appended in batches (when
// a batch is full, every FLUSH_EVERY_MS, and on close), and the retention sweep that deletes the
// events older than the retention. A verification only pushes to an array: it never waits for the store.
import type { Logger } from "../logger";
import type { Store, VerificationEvent } from "./storage";
import { isStoreUnavailable, type StoreFailureLog } from "./store-failures";

/** A batch is appended once it holds this many events. */
const BATCH_SIZE = 1000;
/** Events wait at most this long (wall clock) before they are appended. */
const FLUSH_EVERY_MS = 1000;
/** Events kept while the store cannot take them; past that (a batch more at most) the oldest are dropped (and counted in the log). */
const MAX_BUFFERED = 100_000;
/** The retention sweep runs at most this often (service clock) and at least this often (wall clock). */
const SWEEP_EVERY_MS = 5 * 60_000;

export class VerificationRecorder {
  private buffer: VerificationEvent[] = [];
  private flushing: Promise<void> | undefined;
  private lastSweep = -Infinity;
  private dropped = 0;
  private failing = false;
  private readonly timers: NodeJS.Timeout[] = [];
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly retentionMs: number,
    private readonly now: () => number,
    private readonly logger: Logger,
    /** Where an unavailable store is reported: one line per kind of failure at most every 10 s, shared with the requests. */
    private readonly failures: StoreFailureLog,
  ) {
    const flush = setInterval(() => void this.flush(), FLUSH_EVERY_MS);
    const sweep = setInterval(() => void this.sweep(true), SWEEP_EVERY_MS);
    flush.unref();
    sweep.unref();
    this.timers.push(flush, sweep);
  }

  /** Notes one event; appended with the next batch. */
  record(event: VerificationEvent): void {
    if (this.closed) return;
    this.buffer.push(event);
    // Trimmed a batch at a time (not per event: each trim moves the whole buffer).
    if (this.buffer.length > MAX_BUFFERED + BATCH_SIZE) this.trim();
    if (this.buffer.length >= BATCH_SIZE && !this.flushing) void this.flush();
  }

  /** Drops the oldest events beyond MAX_BUFFERED (counted for the log). */
  private trim(): void {
    const over = this.buffer.length - MAX_BUFFERED;
    if (over <= 0) return;
    this.buffer.splice(0, over);
    this.dropped += over;
  }

  /** Appends every event noted so far (in batches), then, when it wrote some, runs the retention sweep if due. Never rejects. */
  flush(): Promise<void> {
    this.flushing ??= this.drain().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async drain(): Promise<void> {
    let wrote = false;
    this.trim();
    while (this.buffer.length > 0) {
      // Taken out while it is written, so a trim meanwhile drops only events still waiting.
      const batch = this.buffer.splice(0, BATCH_SIZE);
      try {
        await this.store.appendVerifications(batch);
      } catch (err) {
        // Kept for the next flush (the store may be back by then).
        this.buffer = batch.concat(this.buffer);
        this.trim();
        this.report(err, "keyguard/local: cannot write verification events; they are kept in memory and written when the store is back");
        return;
      }
      wrote = true;
      if (this.failing) {
        this.failing = false;
        this.logger.warn({ store: this.store.kind }, "keyguard/local: verification events are written again");
      }
    }
    if (this.dropped > 0) {
      this.logger.warn({ dropped: this.dropped }, `keyguard/local: dropped verification events while the store could not take them (more than ${MAX_BUFFERED} waiting)`);
      this.dropped = 0;
    }
    // An idle service touches neither the store nor the clock here (the wall-clock timer sweeps it).
    if (wrote) await this.sweep(false);
  }

  /** Deletes the events older than the retention, when a sweep is due (or `force`). */
  private async sweep(force: boolean): Promise<void> {
    try {
      const now = this.now();
      if (!force && now >= this.lastSweep && now - this.lastSweep < SWEEP_EVERY_MS) return;
      this.lastSweep = now;
      await this.store.deleteVerificationsBefore(now - this.retentionMs);
    } catch (err) {
      this.report(err, "keyguard/local: cannot delete expired verification events");
    }
  }

  /** An unavailable store goes to the shared failure log; another error is logged once until writes work again. */
  private report(err: unknown, message: string): void {
    if (isStoreUnavailable(err)) return this.failures.report(err);
    if (this.failing) return;
    this.failing = true;
    this.logger.error({ store: this.store.kind, buffered: this.buffer.length, error: err instanceof Error ? err.message : String(err) }, message);
  }

  /** Stops the timers and appends what is buffered: nothing noted before a clean close is lost. */
  async close(): Promise<void> {
    if (this.closed) return this.flushing;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    await this.flush();
    // A flush that was already running when close began may have left the newest events.
    if (this.buffer.length > 0) await this.flush();
  }
}
