// keyguard/web and keyguard/hono load no node: module: each entry is bundled as a Worker or edge
// bundler would (conditions "worker" and "browser", platform neutral) and the bundle's imports are
// read from esbuild's metafile. The client's undici transport must not be in it either.
import { build, type Metafile } from "esbuild";
import { builtinModules } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(__dirname, "../..");
const NODE_BUILTINS = new Set(builtinModules);

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
    // Loaded lazily, only with the client's `telemetry` option.
    external: ["@opentelemetry/api", ...external],
  });
  return { metafile: result.metafile, text: result.outputFiles[0]!.text };
}

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
    expect(imports.filter((path) => !["@opentelemetry/api", ...external].includes(path))).toEqual([]);
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
    for (const left of [
      "src/client/undici-transport.ts",
      "src/client/transport.ts",
      "src/protocol/key-hash.ts",
      "src/adapters/express/api-key-auth.ts",
      "src/adapters/express/request-key.ts",
      "src/adapters/express/respond.ts",
      "src/adapters/connection-key-hash.ts",
      "src/adapters/node-decider.ts",
    ]) {
      expect(inputs).not.toContain(left);
    }
    expect(externalImports(metafile)).not.toContain("undici");
  });
});
