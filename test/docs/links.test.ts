// Every relative link and #anchor in the README, CONTRIBUTING, CHANGELOG and docs/ resolves: the file
// exists, and an anchor names a heading of its page as GitHub spells it.
import { existsSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, anchors, links, markdownFiles, readMarkdown, slug } from "./markdown";

/** A scheme (`https:`, `mailto:`) or `//host`: not a file of this repository. */
const EXTERNAL = /^(?:[a-z][a-z\d+.-]*:|\/\/)/i;

function brokenLinks(file: string): string[] {
  const text = readMarkdown(file);
  return links(text).flatMap(({ line, target }) => {
    if (EXTERNAL.test(target)) return [];
    const where = `${file}:${line}: ${target}`;
    const hash = target.indexOf("#");
    const path = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
    const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const resolved = path === "" ? join(ROOT, file) : path.startsWith("/") ? join(ROOT, path) : join(ROOT, dirname(file), path);
    if (!existsSync(resolved)) return [`${where}: no file ${relative(ROOT, resolved)}`];
    if (anchor === undefined) return [];
    if (statSync(resolved).isDirectory() || !resolved.endsWith(".md"))
      return [`${where}: an anchor on something that is not a markdown page`];
    return anchors(readMarkdown(relative(ROOT, resolved))).has(anchor) ? [] : [`${where}: no heading with the anchor #${anchor}`];
  });
}

describe("documentation links", () => {
  const files = markdownFiles();

  it("covers the README, CONTRIBUTING, CHANGELOG and every page under docs/", () => {
    expect(files).toEqual(
      expect.arrayContaining(["README.md", "CONTRIBUTING.md", "CHANGELOG.md", "docs/middleware.md", "docs/architecture.md"]),
    );
    const count = files.reduce((n, file) => n + links(readMarkdown(file)).length, 0);
    expect(count).toBeGreaterThan(50);
  });

  it.each(files)("every relative link and anchor in %s resolves", (file) => {
    expect(brokenLinks(file)).toEqual([]);
  });
});

describe("GitHub's heading anchors", () => {
  it.each([
    ["The middleware: `apiKeyAuth()` and guards", "the-middleware-apikeyauth-and-guards"],
    ["Several instances: PostgreSQL + Redis", "several-instances-postgresql--redis"],
    ["The key service's metrics: `GET /metrics`", "the-key-services-metrics-get-metrics"],
    ["Querying: `analytics.getVerifications`", "querying-analyticsgetverifications"],
    ["Backup and restore (SQLite)", "backup-and-restore-sqlite"],
    ["snake_case stays", "snake_case-stays"],
  ])("%s → #%s", (heading, expected) => {
    expect(slug(heading)).toBe(expected);
  });

  it("numbers repeated headings as GitHub does", () => {
    expect([...anchors("# A\n\n## Notes\n\n```sh\n# not a heading\n```\n\n## Notes\n")]).toEqual(["a", "notes", "notes-1"]);
  });
});

describe("link extraction", () => {
  it("finds inline links, images and reference definitions, not links inside code", () => {
    const text = "See [a](a.md#x) and ![b](img/b.png).\n`[c](c.md)`\n\n```md\n[d](d.md)\n```\n[e]: e.md\n";
    expect(links(text).map((l) => `${l.line} ${l.target}`)).toEqual(["1 a.md#x", "1 img/b.png", "7 e.md"]);
  });
});
