// keyguard's contract against production's OpenAPI document, through the facts distilled from it
// (test/protocol/fixtures/production-contract.json, by scripts/distill-openapi.mjs): every
// difference is fixed or named, with its reason, in deliberate-differences.ts. With
// KEYGUARD_UNKEY_OPENAPI naming the document, the facts file must also be its distillation. The
// service's real answers are validated against production's response schemas, rebuilt from the
// same facts, in openapi-answers.test.ts.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { distill, FACTS_FILE, OPERATIONS, SOURCE } from "../../scripts/distill-openapi.mjs";
import { CONTRACT } from "../../src/protocol/contract";
import { contractDifferences, type Difference, type ProductionFacts } from "./contract-differences";
import { DELIBERATE_DIFFERENCES, type DeliberateDifference } from "./deliberate-differences";

const facts = JSON.parse(readFileSync(FACTS_FILE, "utf8")) as ProductionFacts;

function covers(entry: DeliberateDifference, d: Difference): boolean {
  const path = entry.path.endsWith("*") ? d.path.startsWith(entry.path.slice(0, -1)) : d.path === entry.path;
  const values =
    (!("production" in entry) || JSON.stringify(entry.production) === JSON.stringify(d.production)) &&
    (!("keyguard" in entry) || JSON.stringify(entry.keyguard) === JSON.stringify(d.keyguard));
  return (entry.operation === "*" || entry.operation === d.operation) && path && entry.fact === d.fact && values;
}

describe("the contract against production's OpenAPI document", () => {
  const differences = contractDifferences(facts);

  it("the facts name their source, and cover exactly the operations keyguard implements", () => {
    expect(facts.source).toEqual(SOURCE);
    expect(Object.keys(facts.operations).sort()).toEqual(Object.keys(CONTRACT).sort());
    expect([...OPERATIONS].sort()).toEqual(Object.keys(CONTRACT).sort());
  });

  it("differs only where deliberate-differences.ts says so", () => {
    const unexplained = differences.filter((d) => !DELIBERATE_DIFFERENCES.some((e) => covers(e, d)));
    expect(unexplained).toEqual([]);
  });

  it("every deliberate difference still differs", () => {
    const stale = DELIBERATE_DIFFERENCES.filter((e) => !differences.some((d) => covers(e, d)));
    expect(stale).toEqual([]);
  });

  it("finds a difference it is shown (the comparison can fail)", () => {
    const changed = structuredClone(facts);
    changed.operations["keys.verifyKey"]!.request["key"]!.maxLength = 100;
    expect(contractDifferences(changed)).toContainEqual({
      operation: "keys.verifyKey",
      path: "request.key",
      fact: "maxLength",
      production: 100,
      keyguard: 512,
    });
  });

  const document = process.env.KEYGUARD_UNKEY_OPENAPI;
  it.skipIf(document === undefined)("the facts file is the distillation of KEYGUARD_UNKEY_OPENAPI's document (skipped without it)", () => {
    expect(distill(parse(readFileSync(document!, "utf8")))).toEqual(facts);
  });
});
