// Every ```ts / ```typescript block in the README and docs/ compiles: each is written to a file of
// its own under test/docs/.examples/ (git-ignored) and type-checked with the project's compiler
// options, keyguard's entry points resolving to src. A failure names the markdown file and line.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { ROOT, markdownFiles, parse, readMarkdown } from "./markdown";

const OUT = join(ROOT, "test", "docs", ".examples");
const TS = new Set(["ts", "typescript"]);

interface Example {
  source: string; // the markdown file
  line: number; // the markdown line of the block's first code line
  file: string; // the extracted file
}

/** Writes every TypeScript block of the documentation to a file of its own (a module: `export {}`). */
function extract(): Example[] {
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  return markdownFiles().flatMap((source) =>
    parse(readMarkdown(source))
      .fences.filter((fence) => TS.has(fence.lang))
      .map((fence) => {
        const file = join(OUT, `${source.replace(/[/\\]/g, "__").replace(/\.md$/, "")}.L${fence.line}.ts`);
        writeFileSync(file, `${fence.code}\nexport {};\n`);
        return { source, line: fence.line, file };
      }),
  );
}

/** Type-checks the files with tsconfig.json's options; each error as `<markdown>:<line>: TSxxxx …`. */
function typeErrors(examples: readonly Example[]): string[] {
  const config = ts.readConfigFile(join(ROOT, "tsconfig.json"), ts.sys.readFile);
  if (config.error) throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, "\n"));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const program = ts.createProgram(
    examples.map((e) => e.file),
    { ...options, noEmit: true },
  );
  const byFile = new Map(examples.map((e) => [program.getSourceFile(e.file)?.fileName, e]));
  return ts.getPreEmitDiagnostics(program).flatMap((d) => {
    const message = `TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`;
    if (d.file === undefined) return [message];
    const example = byFile.get(d.file.fileName);
    if (example === undefined) return []; // src, test and the rest: tsc -p tsconfig.json checks them
    const { line } = d.file.getLineAndCharacterOfPosition(d.start ?? 0);
    return [`${example.source}:${example.line + line}: ${message}`];
  });
}

describe("documentation examples", () => {
  it("every code block names its language (TypeScript in ```ts, shell sessions in ```sh, output in ```text)", () => {
    const unnamed = markdownFiles().flatMap((source) =>
      parse(readMarkdown(source))
        .fences.filter((fence) => fence.lang === "")
        .map((fence) => `${source}:${fence.line - 1}`),
    );
    expect(unnamed).toEqual([]);
  });

  it("every ```ts block in the README and docs/ type-checks", () => {
    const examples = extract();
    expect(examples.filter((e) => e.source === "README.md").length).toBeGreaterThanOrEqual(2);
    expect(examples.length).toBeGreaterThan(10);
    expect(typeErrors(examples)).toEqual([]);
  }, 600_000); // 30 s on a quiet machine, 182 s beside two CPU-bound processes

  it("names the markdown file and line of a block that does not compile", () => {
    mkdirSync(OUT, { recursive: true });
    const file = join(OUT, "broken.ts");
    writeFileSync(file, "const seconds = 5;\n\nconst timeout: number = `${seconds}s`;\nexport { timeout };\n");
    const errors = typeErrors([{ source: "docs/example.md", line: 10, file }]);
    rmSync(file);
    expect(errors).toEqual([expect.stringMatching(/^docs\/example\.md:12: TS2322 /)]);
    expect(relative(ROOT, file)).toBe(join("test", "docs", ".examples", "broken.ts"));
  }, 600_000);
});
