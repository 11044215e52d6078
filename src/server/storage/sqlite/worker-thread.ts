// The SQLite store's worker threads (WAL checkpoints: checkpointer.ts; analytics queries:
// analytics-worker.ts). Each is a plain JavaScript file that opens its own connection to the data
// file, with the driver this process loaded, and says `{ ready: true }` (or why it could not); it
// ends on a "stop" message, and is terminated when it has not ended 2 s later.
import { createRequire } from "node:module";
import { join } from "node:path";
import { Worker } from "node:worker_threads";

/**
 * Where a worker finds better-sqlite3: the file this process loaded it from (CommonJS modules
 * imported from ESM land in the shared require cache too), else as resolved from the entry script
 * or the working directory.
 */
export function driverModule(): { module: string; bases: string[] } {
  const cache = createRequire(join(process.cwd(), "index.js")).cache;
  const loaded = Object.keys(cache).find((path) => /[\\/]better-sqlite3[\\/]lib[\\/]index\.js$/.test(path));
  const bases = [process.argv[1], join(process.cwd(), "index.js")].filter((b): b is string => typeof b === "string" && b !== "");
  return { module: loaded ?? "better-sqlite3", bases };
}

/** A worker that said it is ready. */
export interface StoreWorker {
  readonly worker: Worker;
  /** Resolves when the worker has ended, for any reason. */
  readonly exited: Promise<void>;
  /** Asks it to stop; terminates it if it has not ended 2 s later. Resolves once it has ended. */
  stop(): Promise<void>;
}

/** Starts the worker of `url` with `data`; undefined when it cannot start or is not ready within 10 s. */
export async function startWorker(url: URL, data: unknown): Promise<StoreWorker | undefined> {
  let worker: Worker;
  try {
    // No inherited flags: the worker is plain JavaScript whatever the parent runs with (loaders such as tsx's).
    worker = new Worker(url, { execArgv: [], workerData: data });
  } catch {
    return undefined;
  }
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 10_000);
    worker.once("message", (m: object) => {
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
  // Listened for from the start: a worker that has already ended never emits "exit" again.
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  return {
    worker,
    exited,
    async stop() {
      worker.postMessage("stop");
      const timer = setTimeout(() => void worker.terminate(), 2000);
      await exited;
      clearTimeout(timer);
    },
  };
}
