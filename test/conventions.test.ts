// House rules a reviewer would otherwise have to remember: code, tests, benchmarks and scripts speak
// about the project, so a comment names the goal or the feature, never a tracker's issue number.
import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(__dirname, "..");

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    // Dot-folders hold generated files (test/docs/.examples: the documentation's code blocks).
    if (entry.isDirectory()) {
      return entry.name === "node_modules" || entry.name === "results" || entry.name.startsWith(".") ? [] : files(path);
    }
    return /\.(ts|tsx|mjs|js)$/.test(entry.name) ? [path] : [];
  });
}

describe("conventions", () => {
  it("no issue numbers in src, test, bench, scripts or examples", () => {
    const all = ["src", "test", "bench", "scripts", "examples"].flatMap((dir) => files(join(root, dir)));
    expect(all.length).toBeGreaterThan(100);
    const found = all.flatMap((file) =>
      readFileSync(file, "utf8")
        .split("\n")
        .flatMap((line, i) => (/\bissues?\s+#?\d+/i.test(line) ? [`${relative(root, file)}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(found).toEqual([]);
  });
});
