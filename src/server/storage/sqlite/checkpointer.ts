// WAL checkpoints off the event loop. A checkpoint copies the write-ahead log into the database
// file and fsyncs it: at 1M keys that took 40–700 ms, far too long to run inside a request (where
// SQLite's automatic checkpoint runs it). A worker thread with its own connection runs a PASSIVE
// checkpoint every `intervalMs` instead, which never blocks the service's writes; the service's own
// connection keeps only a large automatic checkpoint as a safety net should the worker stop.
import type { SqliteDriverName } from "./driver";
import type { CheckpointWorkerData } from "./sqlite-checkpoint-worker";
import { driverModule, startWorker } from "./worker-thread";

// The worker's own file, next to this one in the source and next to the bundle's chunks in dist/.
const WORKER_URL = new URL("./sqlite-checkpoint-worker.js", import.meta.url);

export interface Checkpointer {
  stop(): Promise<void>;
}

/**
 * Starts the checkpoint worker on `file`. Resolves once its connection is open, or with
 * undefined when it cannot run (the caller then keeps SQLite's automatic checkpoints).
 */
export function startCheckpointer(file: string, driver: SqliteDriverName, intervalMs: number): Promise<Checkpointer | undefined> {
  const workerData: CheckpointWorkerData = { file, driver, ...driverModule(), intervalMs };
  return startWorker(WORKER_URL, workerData);
}
