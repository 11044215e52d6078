// The real `keyguard` CLI in child processes, for the CLI tests: start `serve` and wait for its
// banner, run a command to completion, kill every child a test started.
import { spawn, type ChildProcess } from "node:child_process";

const CLI = ["--import", "tsx", "src/cli.ts"];
// The CLI's own environment variables are cleared: each test says what it sets.
const baseEnv = {
  ...process.env,
  UNKEY_ROOT_KEY: "",
  KEYGUARD_POSTGRES_URL: "",
  KEYGUARD_REDIS_URL: "",
  KEYGUARD_POSTGRES_SCHEMA: "",
  KEYGUARD_REDIS_CA_FILE: "",
  KEYGUARD_REDIS_CLUSTER: "",
  KEYGUARD_INVALIDATE_REDIS_URL: "",
  KEYGUARD_METRICS_TOKEN: "",
};
const children: ChildProcess[] = [];

/** Kills (SIGKILL) every child still running; call it in afterEach. */
export function killChildren(): void {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
}

export interface Served {
  child: ChildProcess;
  baseUrl: string;
  /** The printed root key; only a generated key is printed. */
  rootKey: string | undefined;
  apiId: string;
  output: string;
}

/** Starts `keyguard serve` and waits for its banner (base URL, root-key line, API id) and its "ready" line. */
export function serve(args: string[], extraEnv: Record<string, string> = {}): Promise<Served> {
  const child = spawn(process.execPath, [...CLI, "serve", ...args], {
    env: { ...baseEnv, ...extraEnv },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`CLI did not start:\n${output}`)), 20_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const baseUrl = /listening on (https?:\/\/\S+)/.exec(output)?.[1];
      const rootKey = /UNKEY_ROOT_KEY=(\S+)/.exec(output)?.[1];
      const apiId = /API id:\s+(api_\S+)/.exec(output)?.[1];
      if (baseUrl && /UNKEY_ROOT_KEY/.test(output) && apiId && /ready in \d+ ms/.test(output)) {
        clearTimeout(timer);
        resolve({ child, baseUrl, rootKey, apiId, output });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`CLI exited with ${code}:\n${output}`));
    });
  });
}

/** Runs the CLI to completion. */
export function run(
  args: string[],
  extraEnv: Record<string, string> = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [...CLI, ...args], { env: { ...baseEnv, ...extraEnv }, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once("close", (status) => resolve({ status, stdout, stderr })));
}

/** Resolves with the child's exit code once it exited. */
export function exited(child: ChildProcess): Promise<number | null> {
  return child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve(child.exitCode)
    : new Promise((r) => child.once("exit", (code) => r(code)));
}
