// The pages that map the source (docs/architecture.md, CONTRIBUTING.md) name only paths that exist:
// every word of inline code and every link target that looks like a path of this repository is
// checked, so a file that moves or goes fails here until the page says where it went.
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, posix } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, links, parse, readMarkdown } from "./markdown";

const PAGES = ["docs/architecture.md", "CONTRIBUTING.md"];

/** A bare file name counts as a path when it ends with one of these (`factory.ts`, `package.json`). */
const FILE_NAME = /^[\w.-]+\.(?:ts|mts|cts|js|mjs|cjs|json|md)$/;

/** Where a placeholder starts: `<page>.png`, `test/**`, `bench/…`, `${HOME}`. */
const PLACEHOLDER = /[<*…$]/;

/** The entries of .gitignore that name a path (no pattern): made by builds and tests, absent from a fresh clone. */
function ignoredPaths(): string[] {
  return readFileSync(join(ROOT, ".gitignore"), "utf8")
    .split("\n")
    .map((line) => line.trim().replace(/^\//, "").replace(/\/$/, ""))
    .filter((line) => line !== "" && !line.startsWith("#") && !/[*?[]/.test(line));
}

const IGNORED = ignoredPaths();
const SKIPPED_DIRS = new Set([".git", ...IGNORED]);

/** The repository's folders at the top (`src`, `test`, `docs`, …): a path starts with one of them. */
const TOP_DIRS = new Set(
  readdirSync(ROOT, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !SKIPPED_DIRS.has(entry.name))
    .map((entry) => entry.name),
);

/** The name of every file in the repository (outside the ignored folders), for bare file names. */
const FILE_NAMES = (() => {
  const names = new Set<string>();
  const walk = (dir: string, rel: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = rel === "" ? entry.name : `${rel}/${entry.name}`;
      if (SKIPPED_DIRS.has(path) || SKIPPED_DIRS.has(entry.name)) continue;
      if (entry.isDirectory()) walk(join(dir, entry.name), path);
      else names.add(entry.name);
    }
  };
  walk(ROOT, "");
  return names;
})();

/** `a/{b,c}/d` → `a/b/d`, `a/c/d` (nested braces included). */
function expandBraces(word: string): string[] {
  const m = /\{([^{}]*)\}/.exec(word);
  if (!m) return [word];
  return m[1]!.split(",").flatMap((part) => expandBraces(word.slice(0, m.index) + part + word.slice(m.index + m[0].length)));
}

/** The repository paths a word of inline code names, relative to the root; none when it is not a path. */
function pathsIn(word: string): string[] {
  const clean = word.replace(/^[("'[]+/, "").replace(/[)"',.:;\]]+$/, "");
  return expandBraces(clean).flatMap((candidate) => {
    // A placeholder: the folder before it is what must exist.
    const cut = candidate.search(PLACEHOLDER);
    const path = (cut === -1 ? candidate : candidate.slice(0, candidate.lastIndexOf("/", cut) + 1)).replace(/^\.\//, "");
    if (path === "" || path.startsWith("/")) return [];
    const first = path.split("/")[0]!;
    if (path.includes("/")) return TOP_DIRS.has(first) || IGNORED.some((i) => path.startsWith(i)) ? [path] : [];
    return FILE_NAME.test(path) ? [path] : [];
  });
}

/** Whether a path exists: a repository path from the root, a bare file name anywhere; generated ones always do. */
function exists(path: string): boolean {
  if (IGNORED.some((ignored) => path === ignored || path.startsWith(`${ignored}/`) || `${path}/`.startsWith(`${ignored}/`))) return true;
  if (!path.includes("/")) return FILE_NAMES.has(path) || existsSync(join(ROOT, path));
  return existsSync(join(ROOT, path));
}

/** Every path a page names that does not exist, as `<page>:<line>: <path>`. */
function missingPaths(page: string): string[] {
  const text = readMarkdown(page);
  const missing: string[] = [];
  for (const { line, text: prose } of parse(text).prose) {
    for (const span of prose.matchAll(/(`+)([^`]+?)\1/g)) {
      for (const word of span[2]!.trim().split(/\s+/)) {
        for (const path of pathsIn(word)) if (!exists(path)) missing.push(`${page}:${line}: ${path}`);
      }
    }
  }
  for (const { line, target } of links(text)) {
    if (/^(?:[a-z][a-z\d+.-]*:|\/\/|#)/i.test(target)) continue;
    const path = posix.normalize(posix.join(dirname(page), decodeURIComponent(target.split("#")[0]!)));
    if (!exists(path)) missing.push(`${page}:${line}: ${target}`);
  }
  return missing;
}

describe.each(PAGES)("%s", (page) => {
  it("names only paths that exist in the repository", () => {
    expect(missingPaths(page)).toEqual([]);
  });
});

describe("what counts as a path", () => {
  it.each([
    ["src/server/http/app.ts", ["src/server/http/app.ts"]],
    ["`test/server/{http,domain}`,", ["test/server/http", "test/server/domain"]],
    ["docs/console/<page>.png", ["docs/console/"]],
    ["factory.ts", ["factory.ts"]],
    ["./scripts/build-bench.mjs", ["scripts/build-bench.mjs"]],
    ["keyguard/server", []],
    ["/usr/bin/chromium", []],
    ["POST", []],
    ["<page>.png", []],
  ])("%s → %j", (word, paths) => {
    expect(pathsIn(word.replace(/`/g, ""))).toEqual(paths);
  });

  it("finds a path that does not exist, and takes generated ones for granted", () => {
    expect(exists("src/server/http/no-such-file.ts")).toBe(false);
    expect(exists("no-such-file.ts")).toBe(false);
    expect(exists("src/server")).toBe(true);
    expect(exists("test/docs/.examples/")).toBe(true);
    expect(exists("bench/.build/")).toBe(true);
  });
});
