// Analytics queries off the event loop. SQLite's drivers are synchronous: a query over millions of
// events run on the store's connection held every request for its whole duration. A worker thread
// with its own read-only connection, started by the first query (WAL: it reads a snapshot, never
// waiting for the writer, nor making it wait), runs them instead, one at a time, each within a
// time limit counted from its arrival. A query past its limit is answered AnalyticsTimeoutError at
// once; SQLite cannot be interrupted from another thread, so that worker is dropped (it ends when
// its query does) and a new one, started then, takes the queries still waiting: at most one query
// runs at any time.
import { AnalyticsTimeoutError } from "../../analytics/time-limit";
import { StoreUnavailableError } from "../../errors";
import type { SqliteDriverName } from "./driver";
import type { AnalyticsAnswer, AnalyticsRequest, AnalyticsWorkerData } from "./sqlite-analytics-worker";
import { driverModule, startWorker, type StoreWorker } from "./worker-thread";

const WORKER_URL = new URL("./sqlite-analytics-worker.js", import.meta.url);

interface Pending {
  request: AnalyticsRequest;
  resolve(rows: Array<Record<string, unknown>>): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout;
}

/** The first worker could not start (no worker threads here, or its file is missing): the store queries on its own connection. */
export class AnalyticsWorkerUnavailable extends Error {}

export class AnalyticsWorker {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private stopped = false;
  /** The worker; undefined until the first query starts it (a store nobody queries runs no thread). */
  private worker: Promise<StoreWorker | undefined> | undefined;
  /** The first worker could not start. */
  private neverStarted = false;
  /** A replacement is under way (the dropped worker ending, or the new one starting). */
  private replacing = false;

  private constructor(
    private readonly data: AnalyticsWorkerData,
    private readonly timeoutMs: number,
  ) {}

  /** The worker of `file`, started by the first query. */
  static lazy(file: string, driver: SqliteDriverName, timeoutMs: number): AnalyticsWorker {
    return new AnalyticsWorker({ file, driver, ...driverModule() }, timeoutMs);
  }

  /**
   * The rows of `text` with `params`, as the driver gives them, within the limit counted from now.
   * Rejects AnalyticsWorkerUnavailable when the first worker cannot start.
   */
  query(text: string, params: Array<string | number>): Promise<Array<Record<string, unknown>>> {
    if (this.stopped) return Promise.reject(new StoreUnavailableError("SQLite store unavailable: the store is closed."));
    this.worker ??= startWorker(WORKER_URL, this.data).then((w) => {
      if (w) this.listen(w);
      else this.neverStarted = true;
      return w;
    });
    const worker = this.worker;
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      const timer = setTimeout(() => this.expire(id), this.timeoutMs);
      this.pending.set(id, { request: { id, text, params }, resolve, reject, timer });
      // In arrival order: the first worker's listener is in place before any of these runs.
      void worker.then((w) => this.send(w, id));
    });
  }

  private send(worker: StoreWorker | undefined, id: number): void {
    const p = this.pending.get(id);
    if (!p) return;
    if (!worker) {
      const err = this.neverStarted
        ? new AnalyticsWorkerUnavailable("the analytics worker cannot start")
        : new StoreUnavailableError("SQLite store unavailable: the analytics worker cannot start.");
      return this.settle(id, (q) => q.reject(err));
    }
    worker.worker.postMessage(p.request);
  }

  private listen(worker: StoreWorker): void {
    worker.worker.on("message", (m: AnalyticsAnswer) => {
      if ("rows" in m) this.settle(m.id, (p) => p.resolve(m.rows));
      else this.settle(m.id, (p) => p.reject(Object.assign(new Error(m.error), { code: m.code, errcode: m.errcode })));
    });
    void worker.exited.then(() => {
      // A worker that ended unasked (or was dropped): the queries it held go to a new one.
      if (this.stopped) return;
      void this.worker?.then((current) => current === worker && this.replace());
    });
  }

  private settle(id: number, fn: (p: Pending) => void): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    fn(p);
  }

  /**
   * The query `id` is past its limit: answered now; its worker (still running it) is replaced. One
   * that expires while a replacement is under way was never sent to a worker that still counts, so
   * it drops none: otherwise each query expiring while a long one ends queued one more restart.
   */
  private expire(id: number): void {
    if (!this.pending.has(id)) return;
    this.settle(id, (p) => p.reject(new AnalyticsTimeoutError(this.timeoutMs)));
    if (!this.replacing) this.replace();
  }

  private replace(): void {
    const old = this.worker ?? Promise.resolve(undefined);
    this.replacing = true;
    this.worker = old.then(async (w) => {
      // The new worker starts once the old one has ended (with its query): never two queries
      // running, whatever the queries past their limit; those waiting meanwhile keep their own limits.
      let fresh: StoreWorker | undefined;
      try {
        if (w) await w.worker.terminate();
        fresh = this.stopped ? undefined : await startWorker(WORKER_URL, this.data);
      } finally {
        this.replacing = false;
      }
      if (fresh) this.listen(fresh);
      return fresh;
    });
    const waiting = [...this.pending.keys()];
    void this.worker.then((w) => waiting.forEach((id) => this.send(w, id)));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const id of [...this.pending.keys()]) {
      this.settle(id, (p) => p.reject(new StoreUnavailableError("SQLite store unavailable: the store is closed.")));
    }
    const worker = await this.worker;
    await worker?.stop(); // none: never started, or could not start
  }
}
