// The commit rule of CONTRIBUTING.md as scripts/check-commits.mjs applies it: `area: what changed`
// in at most 72 characters; a history that does not reach the rule's first commit is not checked.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { subjectProblems } from "../../scripts/check-commits.mjs";
import { ROOT } from "./markdown";

describe("commit subjects", () => {
  it.each([
    "server: one module of the service's error classes",
    "middleware/express: the adapter in a folder of its own",
    "docs: errors.md",
  ])("%s passes", (subject) => {
    expect(subjectProblems(subject)).toEqual([]);
  });

  it.each([
    ["Metrics outage test: the claim may fall in the outage", /area: what changed/],
    ["Server: a capital area", /area: what changed/],
    ["server:no space", /area: what changed/],
    ["server and docs: two words", /area: what changed/],
    ["server: what changed", undefined],
    [`server: ${"x".repeat(65)}`, /73 characters/],
  ])("%s", (subject, problem) => {
    const problems = subjectProblems(subject);
    if (problem === undefined) expect(problems).toEqual([]);
    else expect(problems.join("; ")).toMatch(problem);
  });

  it("says it did not check when the base commit is not in the history", () => {
    const out = execFileSync(process.execPath, [join(ROOT, "scripts", "check-commits.mjs"), "0000000000000000000000000000000000000001"], {
      cwd: ROOT,
      encoding: "utf8",
    });
    expect(out).toMatch(/^commit subjects: not checked: /);
  });
});
