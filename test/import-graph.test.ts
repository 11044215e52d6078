// The import graph of src/, read with TypeScript's own pre-processor (static, type-only and dynamic
// imports alike): no file-level cycle anywhere, and no two folders of the key server that import
// each other. The lint rule (eslint.config.js) keeps each layer's direction; this holds the graph
// as a whole, so that a cycle inside one layer or folder is caught too.
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = join(__dirname, "..");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|js)$/.test(entry.name) ? [path] : [];
  });
}

/** The file a relative specifier names, or undefined for a package. */
function resolveSpecifier(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const base = join(dirname(from), specifier);
  for (const candidate of [base, `${base}.ts`, `${base}.js`, join(base, "index.ts"), base.replace(/\.js$/, ".ts")]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  throw new Error(`${relative(root, from)} imports ${specifier}, which names no file`);
}

/** Every file of `src/` with the files of `src/` it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(join(root, "src"))) {
    const info = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    const targets = info.importedFiles.flatMap((ref) => resolveSpecifier(file, ref.fileName) ?? []);
    graph.set(relative(root, file).split(sep).join("/"), [...new Set(targets.map((t) => relative(root, t).split(sep).join("/")))]);
  }
  return graph;
}

/** The strongly connected components of more than one file (or a file importing itself): the cycles. */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || graph.get(v)?.includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** The folder of src/server a file belongs to (its top-level files each count as their own). */
function serverFolder(file: string): string | undefined {
  if (!file.startsWith("src/server/")) return undefined;
  const rest = file.slice("src/server/".length);
  return rest.includes("/") ? rest.slice(0, rest.indexOf("/")) : rest;
}

describe("the import graph of src/", () => {
  const graph = importGraph();

  it("reads the whole tree", () => {
    expect(graph.size).toBeGreaterThan(150);
    expect(graph.get("src/server/http/app.ts")).toContain("src/server/service.ts");
  });

  it("has no import cycle between files, type-only imports included", () => {
    expect(cycles(graph)).toEqual([]);
  });

  it("finds a cycle when there is one", () => {
    const withCycle = new Map(graph);
    withCycle.set("src/server/errors.ts", [...(graph.get("src/server/errors.ts") ?? []), "src/server/http/app.ts"]);
    expect(cycles(withCycle).some((c) => c.includes("src/server/errors.ts") && c.includes("src/server/http/app.ts"))).toBe(true);
  });

  it("has no two folders of the key server that import each other", () => {
    const pairs = new Set<string>();
    for (const [from, targets] of graph) {
      for (const to of targets) {
        const a = serverFolder(from);
        const b = serverFolder(to);
        if (a !== undefined && b !== undefined && a !== b) pairs.add(`${a} -> ${b}`);
      }
    }
    const twoWay = [...pairs].filter((pair) => {
      const [a, b] = pair.split(" -> ");
      return a! < b! && pairs.has(`${b} -> ${a}`);
    });
    expect(twoWay).toEqual([]);
  });
});
