// docs/errors.md has one row per error code and type, and no row for a code that does not exist.
// The codes come from the lists the public entry points and src/protocol export (never from files
// inside src/server or src/middleware, which move): a code added there without a row fails here.
import { DEFAULT_STATUS_POLICY, ERROR_CODES } from "keyguard";
import { KEY_SERVICE_ERROR_CODES } from "keyguard/client";
import { LocalServiceArgumentError, LocalServiceConfigError, StoreUnavailableError } from "keyguard/server";
import { describe, expect, it } from "vitest";
import { ERROR_CATALOG } from "../../src/protocol/errors";
import { parse, readMarkdown } from "./markdown";

const PAGE = "docs/errors.md";

interface Row {
  section: string;
  line: number;
  code: string;
  status: string;
}

/** Every table row (not a header) of a page whose first cell is one backticked code, with the `##` section it is in. */
function rows(text: string): Row[] {
  let section = "";
  let inTable = false;
  const found: Row[] = [];
  for (const { line, text: raw } of parse(text).prose) {
    const heading = /^##\s+(.*)$/.exec(raw);
    if (heading) section = heading[1]!.trim();
    const cells = /^\|(.*)\|\s*$/.exec(raw)?.[1]!.split(" | ");
    const header = cells !== undefined && !inTable;
    inTable = cells !== undefined;
    const code = cells && !header && /^\s*`([^`]+)`\s*$/.exec(cells[0]!)?.[1];
    if (cells && code) found.push({ section, line, code, status: cells[1]?.trim() ?? "" });
  }
  return found;
}

/** What a section lacks and what it has too much, as `missing: X` / `no such code: Y (line n)`. */
function differences(expected: Iterable<string>, found: readonly Row[]): string[] {
  const want = new Set(expected);
  const seen = new Map<string, number>();
  const out: string[] = [];
  for (const row of found) {
    if (seen.has(row.code)) out.push(`${row.code}: a second row (line ${row.line}, first at ${seen.get(row.code)})`);
    else seen.set(row.code, row.line);
    if (!want.has(row.code)) out.push(`${row.code}: no such code (line ${row.line})`);
  }
  for (const code of want) if (!seen.has(code)) out.push(`${code}: no row`);
  return out;
}

const SECTIONS = {
  denials: "The middleware's denials",
  thrown: "Errors thrown and logged",
  service: "The key service's error types",
} as const;

/** The `code` of each error the middleware answers a request with. */
const DENIAL_CODES = new Set<string>([
  ...Object.keys(DEFAULT_STATUS_POLICY),
  ...Object.values(ERROR_CODES).filter((code) => code !== ERROR_CODES.config),
]);

/** The `code` of each error thrown to the app's code, or logged by the middleware. */
const THROWN_CODES = new Set<string>([
  ERROR_CODES.config,
  ...Object.values(KEY_SERVICE_ERROR_CODES),
  new LocalServiceConfigError("").code,
  new LocalServiceArgumentError("").code,
  new StoreUnavailableError("").code,
]);

describe(PAGE, () => {
  const all = rows(readMarkdown(PAGE));
  const inSection = (title: string) => all.filter((row) => row.section === title);

  it("has its three sections, and no code row outside them", () => {
    expect(all.length).toBeGreaterThan(40);
    expect(all.filter((row) => !Object.values(SECTIONS).includes(row.section as never))).toEqual([]);
  });

  it("has a row for every code of the middleware's denials, and only those", () => {
    expect(differences(DENIAL_CODES, inSection(SECTIONS.denials))).toEqual([]);
  });

  it("has a row for every code thrown by the middleware, the client and the key service, and only those", () => {
    expect(differences(THROWN_CODES, inSection(SECTIONS.thrown))).toEqual([]);
  });

  it("has a row for every error type of the key service, and only those", () => {
    expect(differences(Object.keys(ERROR_CATALOG), inSection(SECTIONS.service))).toEqual([]);
  });

  it("gives each denial in the status table its default status, and each error type its status", () => {
    const policy: Readonly<Record<string, { status: number }>> = DEFAULT_STATUS_POLICY;
    const catalog: Readonly<Record<string, { status: number }>> = ERROR_CATALOG;
    const wrong = [
      ...inSection(SECTIONS.denials)
        .filter((row) => policy[row.code] !== undefined && row.status !== `${policy[row.code]!.status} (policy)`)
        .map((row) => `${row.code} (line ${row.line}): ${row.status}, the default is ${policy[row.code]!.status} (policy)`),
      ...inSection(SECTIONS.service)
        .filter((row) => catalog[row.code] !== undefined && row.status !== String(catalog[row.code]!.status))
        .map((row) => `${row.code} (line ${row.line}): ${row.status}, the service answers ${catalog[row.code]!.status}`),
    ];
    expect(wrong).toEqual([]);
  });
});

describe("the row check", () => {
  const text = [
    "## A",
    "",
    "| `code` | status | cause | fix |",
    "|---|---|---|---|",
    "| `ONE` | 401 | why | what |",
    "| `GONE` | 400 | why | what |",
    "| `ONE` | 401 | again | what |",
    "",
    "```md",
    "| `IN_CODE` | 1 | 2 | 3 |",
    "```",
  ].join("\n");

  it("reads the rows of a section, not those inside code blocks", () => {
    expect(rows(text).map((row) => `${row.section} ${row.line} ${row.code} ${row.status}`)).toEqual([
      "A 5 ONE 401",
      "A 6 GONE 400",
      "A 7 ONE 401",
    ]);
  });

  it("names a code without a row, a row without a code and a repeated row", () => {
    expect(differences(["ONE", "NEW"], rows(text))).toEqual([
      "GONE: no such code (line 6)",
      "ONE: a second row (line 7, first at 5)",
      "NEW: no row",
    ]);
  });
});
