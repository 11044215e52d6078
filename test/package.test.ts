// package.json's promises to users: every peer dependency is optional (each is loaded only by the
// feature that needs it, so `npm install keyguard` installs none of them), the library code never
// imports express (the middleware is framework-agnostic; only its types mention Express), and the
// published package carries the license text of the license it names.
import { execFileSync } from "node:child_process";
import { build } from "esbuild";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(__dirname, "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  license: string;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "console" ? [] : sourceFiles(path);
    return /\.(ts|js)$/.test(entry.name) ? [path] : [];
  });
}

describe("package.json", () => {
  it("declares every peer dependency optional", () => {
    const required = Object.keys(pkg.peerDependencies).filter((name) => pkg.peerDependenciesMeta[name]?.optional !== true);
    expect(required).toEqual([]);
    expect(Object.keys(pkg.peerDependencies)).toContain("express");
  });

  it("src never imports express", () => {
    const files = sourceFiles(join(root, "src"));
    expect(files.length).toBeGreaterThan(50);
    const importing = files.filter((file) => /(from\s+|import\(\s*|require\(\s*)["']express["']/.test(readFileSync(file, "utf8")));
    expect(importing).toEqual([]);
  });

  it("names MIT, and the package ships the MIT license text", () => {
    expect(pkg.license).toBe("MIT");
    const text = readFileSync(join(root, "LICENSE"), "utf8");
    expect(text).toMatch(/^MIT License\n\nCopyright \(c\) 2026 keyguard contributors\n/);
    expect(text).toContain('THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND');
    const [packed] = JSON.parse(
      execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
        cwd: root,
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"],
      }),
    ) as Array<{
      files: Array<{ path: string }>;
    }>;
    expect(packed!.files.map((f) => f.path)).toContain("LICENSE");
  });
});

/** The packages an entry imports, through everything it imports in src (esbuild's metafile). */
async function packagesImportedBy(entry: string): Promise<string[]> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [entry],
    bundle: true,
    write: false,
    platform: "node",
    format: "esm",
    packages: "external",
    metafile: true,
    logLevel: "silent",
  });
  const paths = Object.values(result.metafile.inputs).flatMap((input) => input.imports.filter((i) => i.external).map((i) => i.path));
  return [...new Set(paths.filter((path) => !path.startsWith("node:")))].sort();
}

const FRAMEWORKS = ["hono", "koa", "fastify", "fastify-plugin", "@nestjs/common", "@nestjs/core"];

describe("framework adapters", () => {
  it("keyguard alone (and its client and Redis store) loads none of the frameworks", async () => {
    for (const entry of ["src/index.ts", "src/client.ts", "src/redis.ts"]) {
      const imported = await packagesImportedBy(entry);
      expect(imported.filter((name) => FRAMEWORKS.some((f) => name === f || name.startsWith(`${f}/`)))).toEqual([]);
    }
  });

  it("each adapter's entry loads only its own framework, an optional peer dependency", async () => {
    const own: Record<string, string[]> = {
      "src/web.ts": [],
      "src/hono.ts": [],
      "src/koa.ts": [],
      "src/fastify.ts": ["fastify-plugin"],
      "src/nest.ts": ["@nestjs/common"],
    };
    for (const [entry, frameworks] of Object.entries(own)) {
      const imported = (await packagesImportedBy(entry)).filter((name) => FRAMEWORKS.includes(name));
      expect({ entry, imported }).toEqual({ entry, imported: frameworks });
      for (const name of frameworks) expect(pkg.peerDependenciesMeta[name]?.optional).toBe(true);
    }
    for (const name of ["hono", "koa", "fastify"]) expect(pkg.peerDependenciesMeta[name]?.optional).toBe(true);
  });
});

describe("entry points", () => {
  it("keyguard/local, the former name of keyguard/server, exports the same values and the 0.2 storage names as aliases", async () => {
    const server = (await import("keyguard/server")) as Record<string, unknown>;
    const local = (await import("keyguard/local")) as Record<string, unknown>;
    const aliases = { memoryStore: "memoryStorage", sqliteStore: "sqliteStorage", postgresStore: "postgresStorage" };
    expect(Object.keys(local).sort()).toEqual([...Object.keys(server), ...Object.keys(aliases)].sort());
    for (const name of Object.keys(server)) expect(local[name]).toBe(server[name]);
    for (const [old, now] of Object.entries(aliases)) expect(local[old]).toBe(server[now]);
  });

  it("no exported name means two things: keyguard/server's storage names differ from the middleware's cache store names", async () => {
    const names = async (entry: string) => Object.keys((await import(entry)) as object);
    const [middleware, client, server, redis] = await Promise.all(
      ["keyguard", "keyguard/client", "keyguard/server", "keyguard/redis"].map(names),
    );
    const shared = (a: string[], b: string[]) => a.filter((n) => b.includes(n));
    expect(shared(middleware!, server!)).toEqual([]);
    expect(shared(client!, server!)).toEqual([]);
    expect(shared(redis!, server!)).toEqual([]);
    // What the middleware and the client share is the same thing (the logger contract).
    for (const name of shared(middleware!, client!))
      expect(((await import("keyguard")) as Record<string, unknown>)[name]).toBe(
        ((await import("keyguard/client")) as Record<string, unknown>)[name],
      );
  });
});
