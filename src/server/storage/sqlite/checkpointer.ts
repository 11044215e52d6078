// WAL checkpoints off the event loop. A checkpoint copies the write-ahead log into the database
// file and fsyncs it: at 1M keys that took 40–700 ms, far too long to run inside a request (where
// SQLite's automatic checkpoint runs it). A worker thread with its own connection runs a PASSIVE
// checkpoint every `intervalMs` instead, which never blocks the service's writes; the service's own
// connection checkpoints only should the worker end.
import type { SqliteDriverName } from "./driver";
import type { CheckpointWorkerData, CheckpointWorkerMessage } from "./sqlite-checkpoint-worker";
import { driverModule, startWorker } from "./worker-thread";

// The worker's own file, next to this one in the source and next to the bundle's chunks in dist/.
const WORKER_URL = new URL("./sqlite-checkpoint-worker.js", import.meta.url);

/** WAL frames (pages) past which the store's writes wait for a checkpoint: 16 MB of 4 KiB pages. */
const LARGE_WAL_FRAMES = 4096;

export interface Checkpointer {
  /**
   * A checkpoint now, off the event loop; resolves when it is done (or the worker has ended).
   * Writes back to back never let the timed checkpoints catch up: the WAL is restarted only by a
   * write that finds every frame copied, so it grows without bound (SQLite's automatic checkpoint,
   * the alternative, runs on the writer's thread and held the event loop for hundreds of
   * milliseconds). When `walLarge`, the store's next operation waits for one of these with its
   * writes held, so that the write after it restarts the WAL.
   */
  checkpoint(): Promise<void>;
  /** Whether the last timed checkpoint left a large WAL, and no checkpoint was asked for since. */
  readonly walLarge: boolean;
  /** Resolves when the worker has ended, for any reason. */
  readonly exited: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts the checkpoint worker on `file`. Resolves once its connection is open, or with
 * undefined when it cannot run (the caller then keeps SQLite's automatic checkpoints).
 */
export async function startCheckpointer(file: string, driver: SqliteDriverName, intervalMs: number): Promise<Checkpointer | undefined> {
  const workerData: CheckpointWorkerData = { file, driver, ...driverModule(), intervalMs };
  const w = await startWorker(WORKER_URL, workerData);
  if (!w) return undefined;
  // The worker answers the checkpoints asked in the order they were asked.
  const waiting: Array<() => void> = [];
  let ended = false;
  let walFrames = 0;
  w.worker.on("message", (m: CheckpointWorkerMessage) => {
    if (!("checkpointed" in m)) {
      walFrames = m.walFrames;
      return;
    }
    // Asked for while the store's writes waited: complete and the WAL file emptied (unless a reader
    // still holds it; then the next timed checkpoint says so, and one write in a
    // period waits again, not every write).
    walFrames = 0;
    waiting.shift()?.();
  });
  void w.exited.then(() => {
    ended = true;
    for (const resolve of waiting.splice(0)) resolve();
  });
  return {
    checkpoint() {
      if (ended) return Promise.resolve();
      return new Promise<void>((resolve) => {
        waiting.push(resolve);
        w.worker.postMessage("checkpoint");
      });
    },
    get walLarge() {
      return !ended && walFrames > LARGE_WAL_FRAMES;
    },
    exited: w.exited,
    stop: () => w.stop(),
  };
}
