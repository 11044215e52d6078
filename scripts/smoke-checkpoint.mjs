// Smoke test of the BUILT library's SQLite store: opened through `import` (dist/server.js) and through
// `require` (dist/server.cjs), the store starts its checkpoint worker (dist/sqlite-checkpoint-worker.js),
// which copies a write from the WAL into the data file while the store is open. Run after the build:
// node scripts/smoke-checkpoint.mjs
/* global process, console, setTimeout */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CHECKPOINT_TIMEOUT_MS = 5_000;
// With the worker running, the store's own connection never checkpoints (wal_autocheckpoint 0).
const WORKER_RUNNING_PAGES = 0;

class SmokeError extends Error {}

/** Opens a store on a fresh file with `sqliteStorage`, writes, and waits for the write to reach the file. */
async function checkpoints(label, sqliteStorage, dir) {
  const file = join(dir, `${label}.db`);
  const store = await sqliteStorage(file);
  try {
    const { wal_autocheckpoint: pages } = await store.pragma("wal_autocheckpoint");
    if (pages !== WORKER_RUNNING_PAGES) throw new SmokeError(`${label}: the checkpoint worker did not start (wal_autocheckpoint ${pages})`);
    const marker = `checkpointed-${label}-${Date.now()}`;
    await store.direct.setMeta("smoke", marker);
    // A few pages of WAL, far below SQLite's own automatic checkpoint (1000 pages): only the worker copies them.
    for (const end = Date.now() + CHECKPOINT_TIMEOUT_MS; Date.now() < end; await new Promise((r) => setTimeout(r, 25))) {
      if (readFileSync(file).includes(marker)) return store.driver;
    }
    throw new SmokeError(
      `${label}: a write did not reach the data file within ${CHECKPOINT_TIMEOUT_MS} ms: the checkpoint worker did not run`,
    );
  } finally {
    await store.close();
  }
}

const dir = mkdtempSync(join(tmpdir(), "keyguard-smoke-checkpoint-"));
try {
  const esm = join(ROOT, "dist", "server.js");
  const cjs = join(ROOT, "dist", "server.cjs");
  for (const file of [esm, cjs, join(ROOT, "dist", "sqlite-checkpoint-worker.js")]) {
    if (!existsSync(file)) throw new SmokeError(`${file} does not exist. Build first: npm run build`);
  }
  const fromImport = await import(pathToFileURL(esm).href);
  const fromRequire = createRequire(import.meta.url)(cjs);
  const driver = await checkpoints("esm", fromImport.sqliteStorage, dir);
  await checkpoints("cjs", fromRequire.sqliteStorage, dir);
  console.log(`smoke-checkpoint: ok (sqliteStorage on ${driver} from dist/server.js and dist/server.cjs: the checkpoint worker ran)`);
} catch (err) {
  console.error(`smoke-checkpoint: FAILED: ${err instanceof SmokeError ? err.message : (err?.stack ?? String(err))}`);
  process.exitCode = 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
