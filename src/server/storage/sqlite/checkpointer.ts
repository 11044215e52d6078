// WAL checkpoints off the event loop. A checkpoint copies the write-ahead log into the database
// file and fsyncs it: at 1M keys that took 40–700 ms, far too long to run inside a request (where
// SQLite's automatic checkpoint runs it). A worker thread with its own connection runs a PASSIVE
// checkpoint every `intervalMs` instead, which never blocks the service's writes; the service's own
// connection keeps only a large automatic checkpoint as a safety net should the worker stop.
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { join } from "node:path";
import type { SqliteDriverName } from "./driver";
import type { CheckpointWorkerData, CheckpointWorkerReply } from "./sqlite-checkpoint-worker";

// The worker's own file, next to this one in the source and next to the bundle's chunks in dist/.
const WORKER_URL = new URL("./sqlite-checkpoint-worker.js", import.meta.url);

export interface Checkpointer {
  stop(): Promise<void>;
}

/**
 * Starts the checkpoint worker on `file`. Resolves once its connection is open, or with
 * undefined when it cannot run (the caller then keeps SQLite's automatic checkpoints).
 */
export async function startCheckpointer(file: string, driver: SqliteDriverName, intervalMs: number): Promise<Checkpointer | undefined> {
  // The worker loads better-sqlite3 from the file this process loaded it from (CommonJS modules
  // imported from ESM land in the shared require cache too), else as resolved from the entry
  // script or the working directory.
  const cache = createRequire(join(process.cwd(), "index.js")).cache;
  const loaded = Object.keys(cache).find((path) => /[\\/]better-sqlite3[\\/]lib[\\/]index\.js$/.test(path));
  const module = loaded ?? "better-sqlite3";
  const bases = [process.argv[1], join(process.cwd(), "index.js")].filter((b): b is string => typeof b === "string" && b !== "");
  const workerData: CheckpointWorkerData = { file, driver, module, bases, intervalMs };
  let worker: Worker;
  try {
    // No inherited flags: the worker is plain JavaScript whatever the parent runs with (loaders such as tsx's).
    worker = new Worker(WORKER_URL, { execArgv: [], workerData });
  } catch {
    return undefined;
  }
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 10_000);
    worker.once("message", (m: CheckpointWorkerReply) => {
      clearTimeout(timer);
      resolve("ready" in m);
    });
    worker.once("error", () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  if (!ready) {
    await worker.terminate();
    return undefined;
  }
  worker.unref();
  // Listened for from the start: a worker that has already exited (stopped before, or died) never emits "exit" again.
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  return {
    stop: async () => {
      worker.postMessage("stop");
      const timer = setTimeout(() => void worker.terminate(), 2000);
      await exited;
      clearTimeout(timer);
    },
  };
}
