// Verification events on their way to the store: buffered in memory and appended in batches (when
// a batch is full, every FLUSH_EVERY_MS, and on close), and the retention sweep that deletes the
// events older than the retention. A verification only pushes to an array: it never waits for the store.
//
// A batch the store cannot take is kept and retried; nothing is lost while the store is
// unavailable. A batch it refuses with another error (a bad event, a bug) is retried whole for a few
// flushes, then split: written by halves, recursively and in order, so the events it takes are
// written and the ones it refuses are isolated one by one. An event refused alone while the store
// took other events in the same pass earns a strike and waits for the next flush; it is dropped
// (and counted in the log) at its third strike, so a failure that passes (a lock timeout, a
// migration) loses nothing. When the store took none of the events, it may be refusing everything:
// the events are kept as while it is unavailable, and the next split waits longer. The events
// written keep their order, but for those that waited with a strike.
//
// The counts of ratelimit.limit outcomes (./ratelimit-tally.ts) ride the same cycle: each pass
// adds them to the store first, and keeps them for the next pass when the store does not take them.
import type { Logger } from "../../logger";
import type { Storage } from "./seam";
import type { VerificationEvent } from "../records";
import { RatelimitTally } from "./ratelimit-tally";
import { isStoreUnavailable, type StoreFailureLog } from "./store-failures";

/** A batch is appended once it holds this many events (written in calls of the store's appendBatchSize). */
const BATCH_SIZE = 1000;
/** Events wait at most this long (wall clock) before they are appended. */
const FLUSH_EVERY_MS = 1000;
/** Events kept while the store cannot take them; past that (a batch more at most) the oldest are dropped (and counted in the log). */
const MAX_BUFFERED = 100_000;
/** The retention sweep runs at most this often (service clock) and at least this often (wall clock). */
const SWEEP_EVERY_MS = 5 * 60_000;
/** A batch the store refuses (not as unavailable) is retried whole at this many flushes in a row (about a second apart), then split. */
const SPLIT_AFTER_REFUSALS = 3;
/** After a split in which the store took no event, the next one waits twice as many refused flushes, up to this many. */
const MAX_SPLIT_AFTER_REFUSALS = 300;
/** A split that wrote nothing with at least this many calls makes the next split wait longer (a few refused events cost a few calls). */
const COSTLY_SPLIT_CALLS = 64;
/** An event refused alone, while the store took others, at this many flushes is dropped. */
const DROP_AT_STRIKE = 3;

/** One split: what the store took, and the events it refused alone (in order). */
interface Split {
  written: number;
  /** Appends tried. */
  calls: number;
  refused: VerificationEvent[];
  /** The store's last refusal. */
  error: unknown;
  /** Set when the store became unavailable during the split: its error, and the events not tried yet (in order). */
  cut?: { error: unknown; untried: VerificationEvent[] };
}

export class VerificationRecorder {
  private buffer: VerificationEvent[] = [];
  private flushing: Promise<void> | undefined;
  private lastSweep = -Infinity;
  private dropped = 0;
  private failing = false;
  /** The last flush could not write everything: the next one is the timer's (not one per new event). */
  private retrying = false;
  /** Flushes in a row at which the store refused the oldest batch. */
  private refusals = 0;
  /** Refused flushes before a split (1 while the store refuses some events and takes others). */
  private splitAfter = SPLIT_AFTER_REFUSALS;
  /** Events refused alone while the store took others: at how many flushes. */
  private readonly strikes = new WeakMap<VerificationEvent, number>();
  private readonly timers: NodeJS.Timeout[] = [];
  private closed = false;
  /** The sweep running, if one is: at most one at a time. */
  private sweeping: Promise<void> | undefined;
  /** Aborted by close: a sweep stops between two of the store's steps. */
  private readonly closing = new AbortController();
  /** The outcomes of ratelimit.limit waiting for the next pass. */
  private readonly tally = new RatelimitTally();

  constructor(
    private readonly store: Storage,
    private readonly retentionMs: number,
    private readonly now: () => number,
    private readonly logger: Logger,
    /** Where an unavailable store is reported: one line per kind of failure at most every 10 s, shared with the requests. */
    private readonly failures: StoreFailureLog,
  ) {
    const flush = setInterval(() => void this.drainOnce(), FLUSH_EVERY_MS);
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
    if (this.buffer.length >= BATCH_SIZE && !this.flushing && !this.retrying) void this.drainOnce();
  }

  /** Counts one outcome of ratelimit.limit at `time`; added to the store with the next pass. */
  countLimit(workspaceId: string, namespaceId: string, time: number, passed: boolean): void {
    if (this.closed) return;
    this.tally.note(workspaceId, namespaceId, time, passed);
  }

  /** Adds the counts waiting to the store; keeps them for the next pass when it does not take them. Never rejects. */
  private async writeCounts(): Promise<void> {
    const rows = this.tally.take();
    try {
      await this.store.addRatelimitCounts(rows);
    } catch (err) {
      this.tally.restore(rows);
      return this.report(err, "keyguard/server: cannot write rate-limit counts; they are kept in memory and retried");
    }
    const dropped = this.tally.takeDropped();
    if (dropped > 0) {
      this.logger.warn({ dropped }, "keyguard/server: dropped rate-limit counts while the store could not take them");
    }
  }

  /** Drops the oldest events beyond MAX_BUFFERED (counted for the log). */
  private trim(): void {
    const over = this.buffer.length - MAX_BUFFERED;
    if (over <= 0) return;
    this.buffer.splice(0, over);
    this.dropped += over;
  }

  /**
   * Appends every event noted before the call (in batches), unless the store cannot take them
   * (they wait for the next pass), then, when it wrote some, runs the retention sweep if due.
   * Never rejects.
   */
  flush(): Promise<void> {
    // A pass already running may be past its appends (in its sweep): the events noted since get
    // one more, unless that pass found the store failing.
    const running = this.flushing;
    if (running === undefined) return this.drainOnce();
    return running.then(() => ((this.buffer.length > 0 || this.tally.size > 0) && !this.retrying ? this.drainOnce() : undefined));
  }

  /** A pass over the buffer, or the one running (the timer's and a full batch's: they need no more). */
  private drainOnce(): Promise<void> {
    this.flushing ??= this.drain().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async drain(): Promise<void> {
    let wrote = false;
    let refused = false;
    // Events refused alone at this flush (with a strike): retried at the next one, not in this one.
    const deferred: VerificationEvent[] = [];
    let deferredBecause: unknown;
    // Only when there are counts: otherwise the batch is taken at once (events arriving meanwhile
    // are not trimmed against it).
    if (this.tally.size > 0) await this.writeCounts();
    this.trim();
    // The events waiting when the pass began are written; those noted meanwhile wait for a full
    // batch or the timer. Writing the few that arrive during each write at once would keep the
    // store busy with small statements, each costing it nearly what a full batch does.
    let owed = this.buffer.length;
    while (this.buffer.length > 0 && (owed > 0 || this.buffer.length >= BATCH_SIZE)) {
      // Taken out while it is written, so a trim meanwhile drops only events still waiting.
      const batch = this.buffer.splice(0, this.store.appendBatchSize ?? BATCH_SIZE);
      owed -= batch.length;
      const failed = await this.append(batch);
      if (!failed) {
        wrote = true;
        this.refusals = 0;
        // A turn of the event loop between two calls: requests go on between them.
        if (this.buffer.length > 0) await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      // Kept for the next flush (the store may be back, or the failure passed, by then); on close there is none.
      if (isStoreUnavailable(failed.error)) return this.keep(deferred.concat(batch), failed.error);
      refused = true;
      if (++this.refusals < this.splitAfter && !this.closed) return this.keep(deferred.concat(batch), failed.error);
      const split = await this.split(batch, failed.error);
      if (split.cut) return this.keep(deferred.concat(split.refused, split.cut.untried), split.cut.error);
      this.refusals = 0;
      if (split.written === 0) {
        // The store took nothing, and nothing newer was there to tell: no strikes. It may refuse
        // every event: when that split cost many calls, the next one waits longer.
        if (split.calls >= COSTLY_SPLIT_CALLS) {
          this.splitAfter = Math.min(Math.max(this.splitAfter, SPLIT_AFTER_REFUSALS) * 2, MAX_SPLIT_AFTER_REFUSALS);
        }
        return this.keep(deferred.concat(split.refused), split.error);
      }
      wrote = true;
      // A failure that passed during the split: everything was written.
      if (split.refused.length === 0) continue;
      this.splitAfter = 1;
      let dropped = 0;
      for (const event of split.refused) {
        const strikes = (this.strikes.get(event) ?? 0) + 1;
        if (strikes >= DROP_AT_STRIKE) dropped++;
        else {
          this.strikes.set(event, strikes);
          deferred.push(event);
          deferredBecause = split.error;
        }
      }
      if (dropped > 0) {
        this.logger.error(
          { store: this.store.kind, dropped, written: split.written, error: messageOf(split.error) },
          `keyguard/server: dropped verification events the store refuses one at a time, at ${DROP_AT_STRIKE} flushes at which it took the others`,
        );
      }
    }
    if (deferred.length > 0) return this.keep(deferred, deferredBecause);
    this.retrying = false;
    if (!refused) this.splitAfter = SPLIT_AFTER_REFUSALS;
    if (this.failing) {
      this.failing = false;
      this.logger.warn({ store: this.store.kind }, "keyguard/server: verification events are written again");
    }
    if (this.dropped > 0) {
      this.logger.warn(
        { dropped: this.dropped },
        `keyguard/server: dropped verification events while the store could not take them (more than ${MAX_BUFFERED} waiting)`,
      );
      this.dropped = 0;
    }
    // An idle service touches neither the store nor the clock here (the wall-clock timer sweeps it).
    if (wrote) await this.sweep(false);
  }

  /** Appends `events`; what the store threw when it did not take them. */
  private async append(events: VerificationEvent[]): Promise<{ error: unknown } | undefined> {
    try {
      await this.store.appendVerifications(events);
      return undefined;
    } catch (error) {
      return { error };
    }
  }

  /** Puts `events` back at the head, to be written (in order) before the newer ones at a later flush. */
  private keep(events: VerificationEvent[], error: unknown): void {
    this.buffer = events.concat(this.buffer);
    this.trim();
    this.retrying = true;
    this.report(error, "keyguard/server: cannot write verification events; they are kept in memory and retried");
  }

  /**
   * Writes `batch`, which the store keeps refusing, by halves. When the store takes none of it, the
   * next batch waiting is written too: a batch made only of refused events must not hold back the
   * newer ones, and the events the store takes there are what shows the refused ones are at fault.
   */
  private async split(batch: VerificationEvent[], error: unknown): Promise<Split> {
    const split: Split = { written: 0, calls: 0, refused: [], error };
    await this.halve(batch, true, split);
    if (split.cut || split.written > 0 || this.buffer.length === 0) return split;
    await this.halve(this.buffer.splice(0, this.store.appendBatchSize ?? BATCH_SIZE), false, split);
    return split;
  }

  /** Appends `events` (`refused`: already refused whole) by halves, recursively, left first: adds to `split`. Stops when the store is unavailable. */
  private async halve(events: VerificationEvent[], refused: boolean, split: Split): Promise<void> {
    // Segments still to write, the next one last.
    const todo: VerificationEvent[][] = [];
    const push = (segment: VerificationEvent[]) => {
      if (segment.length === 1) return void split.refused.push(segment[0]!);
      const middle = Math.ceil(segment.length / 2);
      todo.push(segment.slice(middle), segment.slice(0, middle));
    };
    if (refused) push(events);
    else todo.push(events);
    while (todo.length > 0) {
      const segment = todo.pop()!;
      split.calls++;
      const failed = await this.append(segment);
      if (!failed) {
        split.written += segment.length;
      } else if (isStoreUnavailable(failed.error)) {
        split.cut = { error: failed.error, untried: segment.concat(...todo.reverse()) };
        return;
      } else {
        split.error = failed.error;
        push(segment);
      }
    }
  }

  /** Deletes the events older than the retention, when a sweep is due (or `force`) and none is running. Never rejects. */
  private sweep(force: boolean): Promise<void> {
    if (this.sweeping) return this.sweeping;
    const now = this.now();
    if (this.closing.signal.aborted || (!force && now >= this.lastSweep && now - this.lastSweep < SWEEP_EVERY_MS)) return Promise.resolve();
    this.lastSweep = now;
    this.sweeping = this.store
      .deleteVerificationsBefore(now - this.retentionMs, this.closing.signal)
      .then(
        () => undefined,
        (err: unknown) => this.report(err, "keyguard/server: cannot delete expired verification events"),
      )
      .finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  /** An unavailable store goes to the shared failure log; another error is logged once until writes work again. */
  private report(err: unknown, message: string): void {
    if (isStoreUnavailable(err)) return this.failures.report(err);
    if (this.failing) return;
    this.failing = true;
    this.logger.error({ store: this.store.kind, buffered: this.buffer.length, error: messageOf(err) }, message);
  }

  /**
   * Stops the timers and a sweep running (between two of its steps: the next start's sweep deletes
   * the rest), and appends what is buffered: nothing noted before a clean close is lost, unless the
   * store cannot take it. The store is not called once this resolves.
   */
  async close(): Promise<void> {
    if (this.closed) return this.flushing;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    this.closing.abort();
    await this.sweeping;
    await this.flush();
    // A pass that found the store failing (before close) gets one more try, now without waiting.
    if (this.buffer.length > 0 || this.tally.size > 0) await this.flush();
    if (this.tally.size > 0) {
      this.logger.error(
        { store: this.store.kind, lost: this.tally.clear() },
        "keyguard/server: rate-limit counts not written: the store could not take them before close",
      );
    }
    if (this.buffer.length > 0) {
      this.logger.error(
        { store: this.store.kind, lost: this.buffer.length },
        "keyguard/server: verification events not written: the store could not take them before close",
      );
      this.buffer = [];
    }
  }
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));
