// @ts-check
// The SQLite store's analytics worker (started by analytics-worker.ts): its own read-only
// connection to the data file runs the analytics queries it is sent, one at a time, so that no
// query holds the service's event loop. Plain JavaScript, so a worker thread runs it as it is,
// from the source and from the package's dist/ alike.
import { createRequire } from "node:module";
import process from "node:process";
import { parentPort, workerData } from "node:worker_threads";

/**
 * What the store gives the worker.
 * @typedef {object} AnalyticsWorkerData
 * @property {string} file The data file.
 * @property {"node:sqlite" | "better-sqlite3"} driver The store's SQLite driver.
 * @property {string} module better-sqlite3 as the store loaded it (a path), or its package name.
 * @property {string[]} bases Files to resolve `module` from, in order, when it is a package name.
 */

/**
 * A query to run, and its answer: the rows, or the error's message and SQLite code.
 * @typedef {{ id: number; text: string; params: Array<string | number> }} AnalyticsRequest
 * @typedef {{ ready: true } | { error: string }} AnalyticsWorkerReady
 * @typedef {{ id: number; rows: Array<Record<string, unknown>> } | { id: number; error: string; code?: string; errcode?: number }} AnalyticsAnswer
 */

/** @typedef {{ exec(sql: string): unknown; prepare(sql: string): { all(...params: unknown[]): Array<Record<string, unknown>> }; close(): void }} Database */

const port = parentPort;
if (port === null) throw new Error("sqlite-analytics-worker: runs as a worker thread only");
const data = /** @type {AnalyticsWorkerData} */ (workerData);

// Node 22 warns that node:sqlite is experimental; the store's own thread has said so already.
const emitWarning = process.emitWarning.bind(process);
/** @param {string | Error} warning @param {any[]} rest */
function quietSqliteWarning(warning, ...rest) {
  const text = typeof warning === "string" ? warning : warning.message;
  if (text.startsWith("SQLite is an experimental feature")) return;
  emitWarning(warning, ...rest);
}
process.emitWarning = quietSqliteWarning;

/** Opens the data file read-only with the store's driver. @returns {Database} */
function open() {
  if (data.driver === "node:sqlite") {
    return new (createRequire(import.meta.url)("node:sqlite").DatabaseSync)(data.file, { readOnly: true });
  }
  let lastError;
  for (const base of data.bases) {
    try {
      const Database = createRequire(base)(data.module);
      return new Database(data.file, { readonly: true, fileMustExist: true });
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}

/** @param {AnalyticsWorkerReady | AnalyticsAnswer} message */
const send = (message) => port.postMessage(message);

/** @type {Database | undefined} */
let db;
try {
  db = open();
  // A reader never waits for the writer in WAL mode; the wait covers a checkpoint's brief locks.
  db.exec("PRAGMA busy_timeout = 1000");
  db.exec("PRAGMA query_only = 1");
  send({ ready: true });
} catch (err) {
  send({ error: String(err instanceof Error ? err.message : err) });
}
if (db !== undefined) {
  const connection = db;
  port.on("message", (/** @type {AnalyticsRequest | "stop"} */ message) => {
    if (message === "stop") {
      connection.close();
      port.close();
      return;
    }
    try {
      send({ id: message.id, rows: connection.prepare(message.text).all(...message.params) });
    } catch (err) {
      // The driver's codes travel with the message: the store tells an unavailable database from a bug by them.
      const e = /** @type {{ message?: string; code?: unknown; errcode?: unknown }} */ (err);
      send({
        id: message.id,
        error: String(e?.message ?? err),
        ...(typeof e?.code === "string" ? { code: e.code } : {}),
        ...(typeof e?.errcode === "number" ? { errcode: e.errcode } : {}),
      });
    }
  });
}
