// The documentation's markdown files and what the doc tests read from them: fenced code blocks,
// links and headings, with the anchors GitHub gives headings.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

export const ROOT = join(__dirname, "..", "..");

/** README.md, CONTRIBUTING.md, CHANGELOG.md and every docs/**\/*.md, as paths relative to the root. */
export function markdownFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return walk(path);
      return entry.name.endsWith(".md") ? [relative(ROOT, path)] : [];
    });
  return ["README.md", "CONTRIBUTING.md", "CHANGELOG.md", ...walk(join(ROOT, "docs")).sort()];
}

export function readMarkdown(file: string): string {
  return readFileSync(join(ROOT, file), "utf8");
}

/** A fenced code block: its language (`""` when none), the 1-based line of its first code line, its code. */
export interface Fence {
  lang: string;
  line: number;
  code: string;
}

const FENCE = /^\s*(`{3,}|~{3,})\s*([^\s`]*)/;

/** Splits a markdown text into its fenced blocks and its prose lines (each with its 1-based number). */
export function parse(text: string): { fences: Fence[]; prose: { line: number; text: string }[] } {
  const fences: Fence[] = [];
  const prose: { line: number; text: string }[] = [];
  let open: { marker: string; fence: Fence; lines: string[] } | undefined;
  text.split("\n").forEach((line, i) => {
    const m = FENCE.exec(line);
    if (open === undefined) {
      if (m) open = { marker: m[1]!, fence: { lang: m[2]!.toLowerCase(), line: i + 2, code: "" }, lines: [] };
      else prose.push({ line: i + 1, text: line });
      return;
    }
    if (m && m[1]!.startsWith(open.marker) && m[2] === "") {
      fences.push({ ...open.fence, code: open.lines.join("\n") });
      open = undefined;
      return;
    }
    open.lines.push(line);
  });
  if (open) throw new Error(`a code block opened at line ${open.fence.line - 1} is never closed`);
  return { fences, prose };
}

/** The anchor GitHub gives a heading (github-slugger): lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link counts by its text
    .replace(/<[^>]+>/g, "") // inline HTML
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "").replace(/ /g, "-");
}

/** Every anchor of a markdown text's headings; a repeated heading gets `-1`, `-2`, … as on GitHub. */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const { text: line } of parse(text).prose) {
    const m = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

/** Every link and image target outside code (inline links and reference definitions), with its line. */
export function links(text: string): { line: number; target: string }[] {
  const found: { line: number; target: string }[] = [];
  for (const { line, text: raw } of parse(text).prose) {
    const prose = raw.replace(/(`+)[^`]*?\1/g, ""); // inline code is not a link
    for (const m of prose.matchAll(/!?\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      found.push({ line, target: m[1]! });
    }
    const ref = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(prose);
    if (ref) found.push({ line, target: ref[1]! });
  }
  return found;
}
