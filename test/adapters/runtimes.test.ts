// keyguard/web and keyguard/hono for real on Bun and Deno: each runtime (node_modules/.bin/bun,
// node_modules/.bin/deno) serves the scenario in a process of its own, and the conformance suite
// runs from here against it over HTTP. Bun runs the TypeScript source; Deno an ESM bundle of it
// (esbuild, everything but ioredis inlined, conditions "deno", "worker", "browser"), with network
// access to 127.0.0.1 only. Both serve /redis with a redisStore() of their own, on the test's
// Redis. A missing runtime skips its suites, saying why; with CI set it fails instead.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { afterAll, describe, it } from "vitest";
import { conformanceSuite, type RunningApp } from "./conformance";
import type { ScenarioEnv } from "./scenario";

const root = join(__dirname, "../..");
const SERVER = join(__dirname, "runtimes/server.ts");
const work = mkdtempSync(join(tmpdir(), "keyguard-runtimes-"));
mkdirSync(join(root, "node_modules/.cache"), { recursive: true });
const bundles = mkdtempSync(join(root, "node_modules/.cache/keyguard-runtimes-"));
afterAll(() => {
  rmSync(work, { recursive: true, force: true });
  rmSync(bundles, { recursive: true, force: true });
});

interface Runtime {
  readonly name: string;
  readonly binary: string;
  /** The command line that serves the scenario. */
  args(): Promise<string[]>;
}

let denoBundle: Promise<string> | undefined;
function bundleForDeno(): Promise<string> {
  denoBundle ??= (async () => {
    // Inside the project, so that Deno finds ioredis (left out of the bundle) in its node_modules.
    const outfile = join(bundles, "server.mjs");
    await build({
      absWorkingDir: root,
      entryPoints: [SERVER],
      bundle: true,
      format: "esm",
      platform: "neutral",
      conditions: ["deno", "worker", "browser"],
      mainFields: ["module", "main"],
      outfile,
      logLevel: "silent",
      // ioredis (for the /redis route's redisStore()) is Node code: Deno loads it from node_modules.
      external: ["@opentelemetry/api", "ioredis", "node:*"],
    });
    return outfile;
  })();
  return denoBundle;
}

const RUNTIMES: Runtime[] = [
  { name: "Bun", binary: join(root, "node_modules/.bin/bun"), args: async () => ["run", SERVER] },
  {
    name: "Deno",
    binary: join(root, "node_modules/.bin/deno"),
    // --node-modules-dir=manual: bare imports (ioredis) resolve in the project's node_modules.
    args: async () => ["run", "--allow-net=127.0.0.1", "--allow-env", "--no-prompt", "--node-modules-dir=manual", await bundleForDeno()],
  },
];

/** Starts the runtime's server and waits for its port; its stderr goes into the error if it fails to start. */
function serve(runtime: Runtime, adapter: "web" | "hono", env: ScenarioEnv): Promise<RunningApp> {
  return runtime.args().then(
    (args) =>
      new Promise<RunningApp>((resolve, reject) => {
        const child: ChildProcess = spawn(runtime.binary, args, {
          cwd: root,
          stdio: ["ignore", "pipe", "pipe"],
          env: {
            ...process.env,
            KG_ADAPTER: adapter,
            KG_BASE_URL: env.baseUrl,
            KG_ROOT_KEY: env.rootKey,
            KG_REFUSED_URL: env.refusedUrl,
            ...(env.redis === undefined ? {} : { KG_REDIS_URL: env.redis.url, KG_REDIS_PREFIX: env.redis.prefix }),
            DENO_DIR: join(work, "deno"),
            DENO_NO_UPDATE_CHECK: "1",
            NO_COLOR: "1",
          },
        });
        let out = "";
        let err = "";
        const timer = setTimeout(() => fail(new Error(`${runtime.name} did not start within 30 s`)), 30_000);
        const fail = (e: Error) => {
          clearTimeout(timer);
          child.kill("SIGKILL");
          reject(new Error(`${e.message}\n${err}`));
        };
        child.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString()));
        child.on("exit", (code) => fail(new Error(`${runtime.name} exited with ${code}`)));
        child.stdout!.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          const match = /LISTENING (\d+)/.exec(out);
          if (match === null) return;
          clearTimeout(timer);
          child.removeAllListeners("exit");
          resolve({
            url: `http://127.0.0.1:${match[1]}`,
            close: () =>
              new Promise<void>((done) => {
                if (child.exitCode !== null) return done();
                child.once("exit", () => done());
                child.kill("SIGTERM");
              }),
          });
        });
      }),
  );
}

for (const runtime of RUNTIMES) {
  if (!existsSync(runtime.binary)) {
    const reason = `${runtime.binary} is missing`;
    if (process.env.CI) throw new Error(`${runtime.name}: ${reason}, and CI is set: the runtime suites must run in CI.`);
    console.log(`[skipped] the ${runtime.name} suites did not run: ${reason}. Install the dev dependencies (npm install) to run them.`);
    describe.skip(`${runtime.name}: ${reason}`, () => it("runs the conformance suite", () => undefined));
    continue;
  }
  for (const adapter of ["web", "hono"] as const) {
    conformanceSuite(`${adapter === "web" ? "Web handler" : "Hono"} on ${runtime.name}`, {
      redis: "own",
      start: (env) => serve(runtime, adapter, env),
    });
  }
}
