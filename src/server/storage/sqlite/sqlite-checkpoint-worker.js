// @ts-check
// The SQLite store's checkpoint worker (started by checkpointer.ts): its own connection to the data file
// runs a PASSIVE WAL checkpoint every `intervalMs`, and a TRUNCATE one whenever the store asks (its
// writes held), until the store says stop. Plain JavaScript, so a worker thread runs it as it is,
// from the source and from the package's dist/ alike.
import { createRequire } from "node:module";
import process from "node:process";
import { clearInterval, setInterval } from "node:timers";
import { parentPort, workerData } from "node:worker_threads";

/**
 * What the store gives the worker.
 * @typedef {object} CheckpointWorkerData
 * @property {string} file The data file.
 * @property {"node:sqlite" | "better-sqlite3"} driver The store's SQLite driver.
 * @property {string} module better-sqlite3 as the store loaded it (a path), or its package name.
 * @property {string[]} bases Files to resolve `module` from, in order, when it is a package name.
 * @property {number} intervalMs Time between checkpoints, ms.
 */

/**
 * What the worker answers once, after opening its connection: ready, or why it could not.
 * @typedef {{ ready: true } | { error: string }} CheckpointWorkerReply
 */

/**
 * What the worker says after a checkpoint: the frames its WAL holds, and whether it was one the
 * store asked for ("checkpoint").
 * @typedef {{ walFrames: number } | { checkpointed: true; walFrames: number }} CheckpointWorkerMessage
 */

/** @typedef {{ exec(sql: string): unknown; prepare(sql: string): { get(): unknown }; close(): void }} Database */

const port = parentPort;
if (port === null) throw new Error("sqlite-checkpoint-worker: runs as a worker thread only");
const data = /** @type {CheckpointWorkerData} */ (workerData);

// Node 22 warns that node:sqlite is experimental; the store's own thread has said so already.
const emitWarning = process.emitWarning.bind(process);
/** @param {string | Error} warning @param {any[]} rest */
function quietSqliteWarning(warning, ...rest) {
  const text = typeof warning === "string" ? warning : warning.message;
  if (text.startsWith("SQLite is an experimental feature")) return;
  emitWarning(warning, ...rest);
}
process.emitWarning = quietSqliteWarning;

/** Opens the data file with the store's driver. @returns {Database} */
function open() {
  if (data.driver === "node:sqlite") return new (createRequire(import.meta.url)("node:sqlite").DatabaseSync)(data.file);
  let lastError;
  for (const base of data.bases) {
    try {
      const Database = createRequire(base)(data.module);
      return new Database(data.file);
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}

/** @param {CheckpointWorkerReply} reply */
const reply = (reply) => port.postMessage(reply);

/** @type {Database | undefined} */
let db;
try {
  db = open();
  db.exec("PRAGMA busy_timeout = 1000");
  reply({ ready: true });
} catch (err) {
  reply({ error: String(err instanceof Error ? err.message : err) });
}
if (db !== undefined) {
  const connection = db;
  /**
   * A checkpoint; the frames the WAL holds after it (0 when it failed: nothing known). TRUNCATE, asked
   * while the store's writes wait, also empties the WAL file here, off the event loop: else the
   * store's next write truncates it to `journal_size_limit` on the event loop (260 ms for a WAL a
   * long reader let grow to 1 GB). With a reader still on the WAL it does what PASSIVE does,
   * without waiting (busy_timeout 0). The timed ones are PASSIVE: they never take the writers'
   * lock, which the store's connection would wait for on the event loop.
   * @param {"PASSIVE" | "TRUNCATE"} mode
   */
  const checkpoint = (mode) => {
    try {
      if (mode === "TRUNCATE") connection.exec("PRAGMA busy_timeout = 0");
      const row = /** @type {{ log?: number } | undefined} */ (connection.prepare(`PRAGMA wal_checkpoint(${mode})`).get());
      return Number(row?.log ?? 0);
    } catch {
      // Busy or failing: the next tick tries again; the store reports its own failures.
      return 0;
    } finally {
      if (mode === "TRUNCATE") connection.exec("PRAGMA busy_timeout = 1000");
    }
  };
  // Each timed checkpoint says how large the WAL is (`{ walFrames }`), so that the store knows when
  // its writes outrun them (checkpointer.ts).
  const timer = setInterval(() => port.postMessage({ walFrames: checkpoint("PASSIVE") }), data.intervalMs);
  // "checkpoint": one now, answered `{ checkpointed: true, walFrames }` when done; anything else: stop.
  port.on("message", (message) => {
    if (message === "checkpoint") {
      port.postMessage({ checkpointed: true, walFrames: checkpoint("TRUNCATE") });
      return;
    }
    clearInterval(timer);
    connection.close();
    port.close();
  });
}
