// The real `keyguard` CLI in a child process: serve, persist to --data, crash (SIGKILL), restart.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { makeCall } from "./helpers";

const CLI = ["--import", "tsx", "src/cli.ts"];
const dir = mkdtempSync(join(tmpdir(), "keyguard-cli-"));
const children: ChildProcess[] = [];
const env = { ...process.env, UNKEY_ROOT_KEY: "" };

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Served {
  child: ChildProcess;
  baseUrl: string;
  /** The printed root key; only a generated key is printed. */
  rootKey: string | undefined;
  apiId: string;
  output: string;
}

/** Starts `keyguard serve` and waits for the printed base URL, root-key line and API id. */
function serve(args: string[], extraEnv: Record<string, string> = {}): Promise<Served> {
  const child = spawn(process.execPath, [...CLI, "serve", ...args], { env: { ...env, ...extraEnv }, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`CLI did not start:\n${output}`)), 15_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const baseUrl = /listening on (http:\/\/\S+)/.exec(output)?.[1];
      const rootKey = /UNKEY_ROOT_KEY=(\S+)/.exec(output)?.[1];
      const apiId = /API id:\s+(api_\S+)/.exec(output)?.[1];
      if (baseUrl && /UNKEY_ROOT_KEY/.test(output) && apiId && /state:/.test(output)) {
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
function run(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [...CLI, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once("close", (status) => resolve({ status, stdout, stderr })));
}

function exited(child: ChildProcess): Promise<number | null> {
  return child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise((r) => child.once("exit", (code) => r(code)));
}

describe("keyguard serve", () => {
  it("keeps keys in --data across a crash and a restart", async () => {
    const dataFile = join(dir, "state.json");
    const first = await serve(["--port", "0", "--data", dataFile]);
    expect(first.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(first.rootKey).toMatch(/^root_/);
    const call = makeCall(first.baseUrl, first.rootKey!);
    const created = await call("keys.createKey", { apiId: first.apiId, credits: { remaining: 3 } });
    expect(created.status).toBe(200);
    const { key } = created.body.data;
    expect((await call("keys.verifyKey", { key })).body.data).toMatchObject({ code: "VALID", credits: 2 });

    first.child.kill("SIGKILL"); // a crash: nothing gets a chance to flush
    await exited(first.child);

    const second = await serve(["--port", "0", "--data", dataFile]);
    expect(second.apiId).toBe(first.apiId);
    expect(second.output).toContain("earlier root keys in the data file still work");
    const again = makeCall(second.baseUrl, first.rootKey!);
    expect((await again("keys.verifyKey", { key })).body.data).toMatchObject({ valid: true, code: "VALID", credits: 1 });
    second.child.kill("SIGTERM");
    expect(await exited(second.child)).toBe(0);
  });

  it("uses --root-key without printing it", async () => {
    const served = await serve(["--port", "0", "--root-key", "root_fromTheCommandLine"]);
    expect(served.output).not.toContain("root_fromTheCommandLine");
    expect(served.output).toContain("(given with --root-key)");
    expect(served.output).toContain("in memory");
    const res = await makeCall(served.baseUrl, "root_fromTheCommandLine")("apis.getApi", { apiId: served.apiId });
    expect(res.status).toBe(200);
  });

  it("never prints a root key taken from UNKEY_ROOT_KEY", async () => {
    const served = await serve(["--port", "0"], { UNKEY_ROOT_KEY: "root_productionSecret42" });
    expect(served.output).not.toContain("root_productionSecret42");
    expect(served.output).not.toContain("productionSecret");
    expect(served.output).toContain("(from UNKEY_ROOT_KEY)");
    const res = await makeCall(served.baseUrl, "root_productionSecret42")("apis.getApi", { apiId: served.apiId });
    expect(res.status).toBe(200);
  });

  it("--store-keys with KEYGUARD_ENCRYPTION_KEY: the API keeps recoverable keys", async () => {
    const served = await serve(["--port", "0", "--store-keys", "--trust-proxy"], { KEYGUARD_ENCRYPTION_KEY: "ab".repeat(32) });
    const call = makeCall(served.baseUrl, served.rootKey!);
    const created = await call("keys.createKey", { apiId: served.apiId, recoverable: true });
    expect(created.status).toBe(200);
    const got = await call("keys.getKey", { keyId: created.body.data.keyId, decrypt: true });
    expect(got.body.data.plaintext).toBe(created.body.data.key);
    expect(served.output).not.toContain("ab".repeat(32));
  });

  it("--help documents serve; bad flags exit with code 2 and a clear message", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["serve", "--port", "http"], /--port must be an integer/],
      [["serve", "--nope"], /Unknown option '--nope'/],
      [["launch"], /unknown command "launch"/],
      [["serve", "--root-key", "short"], /invalid option rootKey/],
      [["serve", "--store-keys"], /storeKeys.*KEYGUARD_ENCRYPTION_KEY/],
      [["serve", "--encryption-key-file", join(dir, "no-such-file")], /encryptionKeyFile.*cannot be read/],
    ];
    const [help, ...results] = await Promise.all([run(["--help"]), ...cases.map(([args]) => run(args))]);
    expect(help!.status).toBe(0);
    for (const flag of ["serve", "--port", "--host", "--root-key", "--data", "--encryption-key-file", "--store-keys", "--trust-proxy"]) {
      expect(help!.stdout).toContain(flag);
    }
    results.forEach((res, i) => {
      const [args, message] = cases[i]!;
      expect(res.status, args.join(" ")).toBe(2);
      expect(res.stderr).toMatch(message);
      expect(res.stderr).not.toContain('"short"');
    });
  });
});
