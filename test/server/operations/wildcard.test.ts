// Override patterns: `*` is any sequence (the empty one too), everything else literal, whole string.
import { describe, expect, it } from "vitest";
import { wildcardMatch } from "../../../src/server/operations/namespaces";

describe("wildcardMatch", () => {
  it("matches as production's overrides do", () => {
    const yes: Array<[string, string]> = [
      ["*", ""],
      ["*", "anything"],
      ["premium_*", "premium_"],
      ["premium_*", "premium_42"],
      ["*@example.com", "a@example.com"],
      ["a*b*c", "abc"],
      ["a*b*c", "aXXbYYc"],
      ["a**", "a"],
      ["exact", "exact"],
      ["a.b", "a.b"],
    ];
    const no: Array<[string, string]> = [
      ["premium_*", "premium"],
      ["premium_*", "xpremium_1"],
      ["*@example.com", "a@example.com.evil"],
      ["a*b*c", "acb"],
      ["a.b", "aXb"],
      ["exact", "exactly"],
      ["", "x"],
    ];
    for (const [p, t] of yes) expect(wildcardMatch(p, t), `${p} ~ ${t}`).toBe(true);
    for (const [p, t] of no) expect(wildcardMatch(p, t), `${p} !~ ${t}`).toBe(false);
  });

  it("stays fast on patterns that make backtracking regular expressions explode", () => {
    // Correctness only (no timing assertion): the matcher is O(pattern × text) at worst.
    expect(wildcardMatch(`${"a*".repeat(200)}b`, "a".repeat(512))).toBe(false);
    expect(wildcardMatch(`${"a*".repeat(200)}a`, "a".repeat(512))).toBe(true);
  });
});
