// The framework examples (examples/frameworks/) run as users run them, against the local key service:
// each serves /api/hello (a key needed), POST /api/docs (docs.write needed) and /health (open).
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "keyguard/client";
import { startLocalKeyService, type RunningLocalKeyService } from "keyguard/server";
import { silentLogger } from "keyguard";

const root = join(__dirname, "../..");
const BUN = join(root, "node_modules/.bin/bun");

const EXAMPLES = [
  { file: "examples/frameworks/hono.ts", command: process.execPath, args: ["--import", "tsx"] },
  { file: "examples/frameworks/koa.ts", command: process.execPath, args: ["--import", "tsx"] },
  { file: "examples/frameworks/fastify.ts", command: process.execPath, args: ["--import", "tsx"] },
  { file: "examples/frameworks/nest.ts", command: process.execPath, args: ["--import", "tsx"] },
  { file: "examples/frameworks/web-bun.ts", command: BUN, args: ["run"] },
];

let svc: RunningLocalKeyService;
let reader: string;
let writer: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  svc = await startLocalKeyService({ logger: silentLogger });
  const client = createClient({ rootKey: svc.rootKey, baseUrl: svc.baseUrl, logger: silentLogger });
  reader = (await client.keys.createKey({ apiId: svc.apiId, name: "reader", permissions: ["docs.read"] })).key;
  writer = (await client.keys.createKey({ apiId: svc.apiId, name: "writer", permissions: ["docs.write"] })).key;
});

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await svc?.close();
});

/** Starts the example and resolves to its address, from the line it prints. */
async function start(example: (typeof EXAMPLES)[number]): Promise<string> {
  const child = spawn(example.command, [...example.args, example.file], {
    cwd: root,
    env: { ...process.env, UNKEY_ROOT_KEY: svc.rootKey, UNKEY_BASE_URL: svc.baseUrl, PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  for await (const line of createInterface({ input: child.stdout! })) {
    const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(line);
    if (match !== null) return match[1]!;
  }
  throw new Error(`${example.file} exited without listening:\n${stderr}`);
}

describe.each(EXAMPLES)("$file", (example) => {
  const missing = !existsSync(example.command);
  if (missing && process.env.CI) throw new Error(`${example.command} is missing, and CI is set: the example must run in CI.`);
  if (missing)
    console.log(
      `[skipped] ${example.file} did not run: ${example.command} is missing. Install the dev dependencies (npm install) to run it.`,
    );

  it.skipIf(missing)("protects /api with keys and guards, leaves /health open", async () => {
    const url = await start(example);
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(200);
    const none = await fetch(`${url}/api/hello`);
    expect(none.status).toBe(401);
    expect(none.headers.get("content-type")).toBe("application/problem+json; charset=utf-8");
    expect(none.headers.get("www-authenticate")).toBe('Bearer realm="api"');
    const hello = await fetch(`${url}/api/hello`, { headers: { authorization: `Bearer ${reader}` } });
    expect(hello.status).toBe(200);
    expect(await hello.json()).toEqual({ hello: "reader" });
    const refused = await fetch(`${url}/api/docs`, { method: "POST", headers: { "x-api-key": reader } });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { code: string }).code).toBe("INSUFFICIENT_SCOPE");
    const saved = await fetch(`${url}/api/docs`, { method: "POST", headers: { "x-api-key": writer } });
    expect(saved.status).toBe(200);
    expect(await saved.json()).toEqual({ saved: true });
  });
});
