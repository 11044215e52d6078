// WAL checkpoints off the event loop. A checkpoint copies the write-ahead log into the database
// file and fsyncs it: at 1M keys that took 40–700 ms, far too long to run inside a request (where
// SQLite's automatic checkpoint runs it). A worker thread with its own connection runs a PASSIVE
// checkpoint every `intervalMs` instead, which never blocks the service's writes; the service's own
// connection keeps only a large automatic checkpoint as a safety net should the worker stop.
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { join } from "node:path";
import type { SqliteDriverName } from "./driver";

// CommonJS run by the worker (`eval`), so no separate file has to be found next to a bundle.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { createRequire } = require("node:module");
// Node 22 warns that node:sqlite is experimental; the service's own thread has said so already.
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = (warning, ...rest) => {
  const text = typeof warning === "string" ? warning : warning && warning.message;
  if (typeof text === "string" && text.startsWith("SQLite is an experimental feature")) return;
  emitWarning(warning, ...rest);
};
function open() {
  if (workerData.driver === "node:sqlite") return new (require("node:sqlite").DatabaseSync)(workerData.file);
  let lastError;
  for (const base of workerData.bases) {
    try {
      const Database = createRequire(base)(workerData.module);
      return new Database(workerData.file);
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}
let db;
try {
  db = open();
  db.exec("PRAGMA busy_timeout = 1000");
  parentPort.postMessage({ ready: true });
} catch (err) {
  parentPort.postMessage({ error: String((err && err.message) || err) });
}
if (db) {
  const timer = setInterval(() => {
    try {
      db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get();
    } catch {
      // Busy or failing: the next tick tries again; the service reports its own failures.
    }
  }, workerData.intervalMs);
  parentPort.on("message", () => {
    clearInterval(timer);
    db.close();
    parentPort.close();
  });
}
`;

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
  let worker: Worker;
  try {
    // No inherited flags: the source is CommonJS whatever the parent runs with (--input-type, loaders).
    worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [], workerData: { file, driver, module, bases, intervalMs } });
  } catch {
    return undefined;
  }
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 10_000);
    worker.once("message", (m: { ready?: boolean }) => {
      clearTimeout(timer);
      resolve(m.ready === true);
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
