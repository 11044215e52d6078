// Setup of the vitest project "fast" (npm run test:fast): the tier that needs no server. A test
// file there that starts a child process (a key service or CLI of its own, Chromium, Bun, Deno,
// tsc) or connects to PostgreSQL or Redis fails at once, naming the file to move out of the list
// (FAST_FILES in vitest.config.ts), instead of making the tier slow or dependent on a server.
// An in-process key service on 127.0.0.1 port 0 is allowed: it needs nothing from the machine.
import { createRequire, syncBuiltinESMExports } from "node:module";
import type * as Net from "node:net";
import { afterAll, expect } from "vitest";

const require = createRequire(import.meta.url);

/** The ports of the servers the fast tier must not reach: PostgreSQL and Redis, default or overridden. */
export function forbiddenPorts(env: NodeJS.ProcessEnv = process.env): Set<number> {
  const ports = new Set([5432, 6379]);
  for (const url of [env.KEYGUARD_TEST_POSTGRES_URL, env.KEYGUARD_TEST_REDIS_URL]) {
    if (url === undefined || url === "") continue;
    try {
      const { port, protocol } = new URL(url);
      ports.add(Number(port || (protocol.startsWith("postgres") ? 5432 : 6379)));
    } catch {
      // not a URL: the suites that use it say so
    }
  }
  return ports;
}

function refuse(what: string): Error {
  const file = expect.getState().testPath ?? "this test file";
  return new Error(
    `the fast tier (vitest project "fast") needs no server, but ${file} ${what}: move it out of FAST_FILES in vitest.config.ts`,
  );
}

const childProcess = require("node:child_process") as Record<string, unknown>;
const net = require("node:net") as typeof Net;
const SPAWNING = ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"] as const;
// The real functions, kept once per process: without isolation a worker loads this file again for
// each test file, when the patched ones are in place.
const REAL = Symbol.for("keyguard.fast-tier-guard.real");
const real = ((globalThis as Record<symbol, unknown>)[REAL] ??= {
  spawning: Object.fromEntries(SPAWNING.map((name) => [name, childProcess[name]])),
  connect: net.Socket.prototype.connect,
}) as { spawning: Record<string, unknown>; connect: typeof net.Socket.prototype.connect };
const originals = real.spawning;
const originalConnect = real.connect;
const ports = forbiddenPorts();

/** The port a Socket#connect call names, if it names one (not a path). */
function portOf(args: unknown[]): number | undefined {
  const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0]; // net's internal normalised form
  if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) return Number(first);
  if (typeof first === "object" && first !== null && "port" in first) return Number((first as { port: unknown }).port);
  return undefined;
}

// Installed as this file loads, before the test file is imported (a spawn at its top level counts too).
{
  for (const name of SPAWNING) {
    childProcess[name] = () => {
      throw refuse(`starts a child process (child_process.${name})`);
    };
  }
  net.Socket.prototype.connect = function (this: Net.Socket, ...args: unknown[]) {
    const port = portOf(args);
    if (port !== undefined && ports.has(port)) throw refuse(`connects to port ${port} (PostgreSQL or Redis)`);
    return (originalConnect as (...a: unknown[]) => Net.Socket).apply(this, args);
  } as typeof originalConnect;
  syncBuiltinESMExports();
}

afterAll(() => {
  for (const name of SPAWNING) childProcess[name] = originals[name];
  net.Socket.prototype.connect = originalConnect;
  syncBuiltinESMExports();
});
