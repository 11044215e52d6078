// The README stays a short page for newcomers that maps the rest; every page under docs/ opens with
// its title and one paragraph saying what it covers.
import { statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, links, markdownFiles, parse, readMarkdown } from "./markdown";

const README_LIMIT = 15 * 1024;

describe("README.md", () => {
  it(`is at most ${README_LIMIT} bytes`, () => {
    expect(statSync(join(ROOT, "README.md")).size).toBeLessThanOrEqual(README_LIMIT);
  });

  it("links to every page under docs/ and to the changelog", () => {
    const linked = new Set(links(readMarkdown("README.md")).map(({ target }) => target.split("#")[0]));
    const pages = markdownFiles().filter((file) => file.startsWith("docs/"));
    expect(pages.length).toBeGreaterThanOrEqual(10);
    expect([...pages, "CHANGELOG.md"].filter((page) => !linked.has(page))).toEqual([]);
  });

  it("gives the two commands to try it, and imports the key service from keyguard/server", () => {
    const readme = readMarkdown("README.md");
    expect(readme).toContain("npm install && npm start");
    expect(readme).toContain("npm test");
    expect(readme).toContain('from "keyguard/server"');
  });
});

describe.each(markdownFiles().filter((file) => file.startsWith("docs/")))("%s", (page) => {
  it("opens with a title and a paragraph saying what it covers", () => {
    const lines = parse(readMarkdown(page)).prose.map((l) => l.text);
    expect(lines[0]).toMatch(/^# \S/);
    expect(lines[1]).toBe("");
    expect(lines[2]).toMatch(/^This page covers /);
  });

  it("imports the key service as keyguard/server, never by its former name", () => {
    const imports = parse(readMarkdown(page)).fences.flatMap((f) => f.code.match(/from "keyguard\/local"/g) ?? []);
    expect(imports).toEqual([]);
  });
});
