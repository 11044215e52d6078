// keyguard/web and keyguard/hono load no node: module: each entry is bundled as a Worker or edge
// bundler would (conditions "worker" and "browser", platform neutral) and the bundle's imports are
// read from esbuild's metafile. The client's undici transport must not be in it either. And each
// bundles as it is, with nothing marked external and @opentelemetry/api not installed (its import
// is made unresolvable here, as on a machine without it), by esbuild for the browser platform and
// by Bun's `bun build --target=browser` (node_modules/.bin/bun, as the runtime tests use it).
import { build, type Metafile, type Plugin } from "esbuild";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const root = join(__dirname, "../..");
const NODE_BUILTINS = new Set(builtinModules);
const BUN = join(root, "node_modules/.bin/bun");

async function bundle(entry: string, external: string[] = []): Promise<{ metafile: Metafile; text: string }> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: "esm",
    platform: "neutral",
    conditions: ["worker", "browser"],
    mainFields: ["module", "main"],
    metafile: true,
    logLevel: "silent",
    external,
  });
  return { metafile: result.metafile, text: result.outputFiles[0]!.text };
}

/** Resolving @opentelemetry/api fails, as where it is not installed (here it is: a dev dependency). */
const withoutOtel: Plugin = {
  name: "without @opentelemetry/api",
  setup(b) {
    b.onResolve({ filter: /^@opentelemetry\/api$/ }, () => ({
      errors: [{ text: 'Could not resolve "@opentelemetry/api" (not installed)' }],
    }));
  },
};

function externalImports(metafile: Metafile): string[] {
  return Object.values(metafile.inputs).flatMap((input) => input.imports.filter((i) => i.external).map((i) => i.path));
}

describe.each([
  { entry: "src/web.ts", external: [] as string[] },
  { entry: "src/hono.ts", external: ["hono"] },
])("$entry bundled for a Web runtime", ({ entry, external }) => {
  it("imports no node: module and no Node builtin, directly or through what it imports", async () => {
    const { metafile, text } = await bundle(entry, external);
    const imports = externalImports(metafile);
    expect(imports.filter((path) => path.startsWith("node:") || NODE_BUILTINS.has(path))).toEqual([]);
    expect(imports.filter((path) => !external.includes(path))).toEqual([]);
    // Nor in the code itself (a require or import esbuild did not see as one). The one node: name
    // the bundle holds is the key hash's lookup of the runtime's own crypto, which answers undefined
    // where the runtime has none (Workers): then the hash is Web Crypto's.
    expect(text).not.toMatch(/(require|import)\s*\(\s*["']node:/);
    expect(text).not.toMatch(/from\s*["']node:/);
    expect(text.match(/["']node:[a-z_/]+["']/g)).toEqual(['"node:crypto"']);
    expect(text).toMatch(/getBuiltinModule\?\.\("node:crypto"\)/);
    expect(text.length).toBeGreaterThan(10_000);
  });

  it("leaves out the undici transport and the Node middleware", async () => {
    const { metafile } = await bundle(entry, external);
    const inputs = Object.keys(metafile.inputs);
    expect(inputs).toContain("src/adapters/web.ts");
    expect(inputs).toContain("src/middleware/decide.ts");
    expect(inputs).toContain("src/client/fetch-transport.ts");
    // The per-connection hash (node-free), for a server on Node that lends its socket.
    expect(inputs).toContain("src/adapters/key-hash-memo.ts");
    for (const left of [
      "src/client/undici-transport.ts",
      "src/client/transport.ts",
      "src/protocol/key-hash.ts",
      "src/adapters/express/api-key-auth.ts",
      "src/adapters/express/request-key.ts",
      "src/adapters/express/respond.ts",
      "src/adapters/node-decider.ts",
    ]) {
      expect(inputs).not.toContain(left);
    }
    expect(externalImports(metafile)).not.toContain("undici");
  });
});

describe.each(["src/web.ts", "src/hono.ts"])("%s bundled as it is, for a Worker, without @opentelemetry/api installed", (entry) => {
  it("esbuild --bundle --platform=browser --conditions=worker,browser, nothing external", async () => {
    const result = await build({
      absWorkingDir: root,
      entryPoints: [entry],
      bundle: true,
      write: false,
      format: "esm",
      platform: "browser",
      conditions: ["worker", "browser"],
      metafile: true,
      logLevel: "silent",
      plugins: [withoutOtel],
    });
    expect(result.errors).toEqual([]);
    expect(Object.keys(result.metafile.inputs).filter((path) => path.includes("@opentelemetry"))).toEqual([]);
    expect(Object.values(result.metafile.inputs).flatMap((input) => input.imports.filter((i) => i.external))).toEqual([]);
  });

  it.skipIf(!existsSync(BUN))(
    "bun build --target=browser, nothing external",
    async () => {
      const work = await mkdtemp(join(tmpdir(), "keyguard-bun-build-"));
      try {
        // Bun's own bundler, through Bun.build, with the same plugin (Bun's plugin API is esbuild's).
        const script = join(work, "build.ts");
        await writeFile(
          script,
          `const result = await Bun.build({
          entrypoints: [${JSON.stringify(join(root, entry))}],
          target: "browser",
          outdir: ${JSON.stringify(join(work, "out"))},
          plugins: [{
            name: "without @opentelemetry/api",
            setup(b) {
              b.onResolve({ filter: /^@opentelemetry\\/api$/ }, () => { throw new Error("Could not resolve @opentelemetry/api (not installed)"); });
            },
          }],
        });
        for (const log of result.logs) console.error(String(log));
        console.log(JSON.stringify({ success: result.success, outputs: result.outputs.map((o) => o.path) }));`,
        );
        const { stdout } = await promisify(execFile)(BUN, ["run", script], { cwd: root, timeout: 120_000 });
        const outcome = JSON.parse(stdout.trim().split("\n").at(-1)!) as { success: boolean; outputs: string[] };
        expect(outcome.success).toBe(true);
        const text = await readFile(outcome.outputs[0]!, "utf8");
        expect(text.length).toBeGreaterThan(10_000);
        // No import of it left for the runtime to fail on (the name appears only in messages).
        expect(text).not.toMatch(/^\s*import\b[^\n]*["']@opentelemetry\/api["']/m);
        expect(text).not.toMatch(/import\(\s*["']@opentelemetry\/api["']\s*\)/);
      } finally {
        await rm(work, { recursive: true, force: true });
      }
    },
    130_000,
  );
});
