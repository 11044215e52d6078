// Smoke test of the BUILT `keyguard` bin (dist/cli.js): serve with --data (a SQLite file), create and verify a key
// over HTTP, see the checkpoint worker copy it into the data file, kill the process, serve again from the same
// file and verify the key still works.
// Plain Node ESM, loopback only, every wait bounded. Run after the build: node scripts/smoke-cli.mjs
/* global process, console, setTimeout, clearTimeout, fetch, AbortSignal, URL */
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CLI = join(ROOT, "dist", "cli.js");
const START_TIMEOUT_MS = 15_000;
const REQUEST_TIMEOUT_MS = 5_000;
const EXIT_TIMEOUT_MS = 5_000;
const CHECKPOINT_TIMEOUT_MS = 5_000;
const OVERALL_TIMEOUT_MS = 60_000;

const dir = mkdtempSync(join(tmpdir(), "keyguard-smoke-"));
const dataFile = join(dir, "keys.db");
const rootKey = `root_smoke${randomBytes(12).toString("hex")}`;
const children = new Set();

class SmokeError extends Error {}

function fail(message) {
  throw new SmokeError(message);
}

function cleanup() {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
}

/** Starts `keyguard serve` and waits for its banner: base URL and API id. */
function serve() {
  const args = [CLI, "serve", "--port", "0", "--host", "127.0.0.1", "--data", dataFile, "--root-key", rootKey];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, UNKEY_ROOT_KEY: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let output = "";
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(
      () => reject(new SmokeError(`the CLI printed no banner within ${START_TIMEOUT_MS} ms:\n${output}`)),
      START_TIMEOUT_MS,
    );
    const onData = (chunk) => {
      output += chunk.toString();
      const baseUrl = /listening on (http:\/\/\S+)/.exec(output)?.[1];
      const apiId = /API id:\s+(api_\S+)/.exec(output)?.[1];
      if (baseUrl && apiId && /state:/.test(output)) {
        clearTimeout(timer);
        resolvePromise({ child, baseUrl, apiId, output });
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(new SmokeError(`cannot run ${CLI}: ${err.message}`));
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new SmokeError(`the CLI exited early (code ${code}, signal ${signal}):\n${output}`));
    });
  });
}

function killAndWait(child) {
  return new Promise((resolvePromise, reject) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolvePromise();
    const timer = setTimeout(() => reject(new SmokeError(`the CLI did not exit within ${EXIT_TIMEOUT_MS} ms of SIGKILL`)), EXIT_TIMEOUT_MS);
    child.once("exit", () => {
      clearTimeout(timer);
      children.delete(child);
      resolvePromise();
    });
    child.kill("SIGKILL");
  });
}

async function call(baseUrl, op, body) {
  let res;
  try {
    res = await fetch(`${baseUrl}/v2/${op}`, {
      method: "POST",
      headers: { authorization: `Bearer ${rootKey}`, "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    fail(`${op}: request failed: ${err.message}`);
  }
  const text = await res.text();
  if (res.status !== 200) fail(`${op}: HTTP ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text).data;
}

function checkBanner(served) {
  const url = new URL(served.baseUrl);
  if (url.hostname !== "127.0.0.1") fail(`expected a loopback base URL, got ${served.baseUrl}`);
  if (served.output.includes(rootKey)) fail("the banner printed the root key given with --root-key");
}

async function verifyExpecting(baseUrl, key, credits) {
  const data = await call(baseUrl, "keys.verifyKey", { key });
  if (data.valid !== true || data.code !== "VALID" || data.credits !== credits) {
    fail(`verifyKey: expected VALID with ${credits} credits left, got ${JSON.stringify(data)}`);
  }
}

/**
 * Waits until the new key's hash (what the store keeps of a key) is in the data file itself, not only in
 * its write-ahead log: a few pages of WAL are copied there only by the store's checkpoint worker
 * (SQLite's own automatic checkpoint waits for 1000 pages, and the process is killed, never closed).
 */
async function checkpointed(key) {
  const hash = createHash("sha256").update(key).digest("base64");
  for (const end = Date.now() + CHECKPOINT_TIMEOUT_MS; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
    if (readFileSync(dataFile).includes(hash)) return;
  }
  fail(`the new key did not reach the data file within ${CHECKPOINT_TIMEOUT_MS} ms: the checkpoint worker did not run`);
}

async function main() {
  if (!existsSync(CLI)) fail(`${CLI} does not exist. Build first: npm run build`);

  const first = await serve();
  checkBanner(first);
  // The web console, from the package's dist/console.
  for (const [path, type] of [
    ["/", "text/html"],
    ["/console/app.js", "text/javascript"],
    ["/console/app.css", "text/css"],
  ]) {
    const res = await fetch(`${first.baseUrl}${path}`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    if (res.status !== 200 || !res.headers.get("content-type")?.startsWith(type) || !res.headers.get("content-security-policy")) {
      fail(`GET ${path}: ${res.status} ${res.headers.get("content-type")}, expected the console's ${type} with a CSP`);
    }
  }
  const { key } = await call(first.baseUrl, "keys.createKey", { apiId: first.apiId, credits: { remaining: 5 } });
  if (typeof key !== "string" || key.length === 0) fail("createKey returned no key");
  await verifyExpecting(first.baseUrl, key, 4);
  await checkpointed(key);
  await killAndWait(first.child);

  const second = await serve();
  checkBanner(second);
  if (second.apiId !== first.apiId) fail(`the API id changed across the restart: ${first.apiId} → ${second.apiId}`);
  await verifyExpecting(second.baseUrl, key, 3);
  await killAndWait(second.child);
}

const overall = setTimeout(() => {
  console.error(`smoke-cli: FAILED: did not finish within ${OVERALL_TIMEOUT_MS} ms`);
  cleanup();
  process.exit(1);
}, OVERALL_TIMEOUT_MS);

try {
  await main();
  console.log("smoke-cli: ok (serve --data, the console's files, createKey, verifyKey, checkpoint worker, kill, restart, verifyKey)");
  process.exitCode = 0;
} catch (err) {
  console.error(`smoke-cli: FAILED: ${err instanceof SmokeError ? err.message : (err?.stack ?? String(err))}`);
  process.exitCode = 1;
} finally {
  clearTimeout(overall);
  cleanup();
}
