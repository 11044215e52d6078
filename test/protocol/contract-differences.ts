// The differences between keyguard's contract and the facts distilled from production's OpenAPI
// document, one per operation, side, field path and fact.
import { factsOf } from "../../scripts/distill-openapi.mjs";
import { CONTRACT } from "../../src/protocol/contract";

type Facts = Record<string, Record<string, unknown>>;
export interface ProductionFacts {
  source: { repository: string; path: string; commit: string };
  operations: Record<string, { request: Facts; response: Facts }>;
}

export interface Difference {
  operation: string;
  /** `request.<field path>` or `response.<field path>` (the answer's `data`); `[]` is an array's items. */
  path: string;
  /** The fact that differs: a JSON Schema keyword, `required`, `nullable`, or `present` for a field one side lacks. */
  fact: string;
  production: unknown;
  keyguard: unknown;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Every difference between the contract and production's facts, in a stable order. */
export function contractDifferences(production: ProductionFacts): Difference[] {
  const out: Difference[] = [];
  for (const [operation, contract] of Object.entries(CONTRACT)) {
    const prod = production.operations[operation];
    if (prod === undefined) {
      out.push({ operation, path: "", fact: "present", production: false, keyguard: true });
      continue;
    }
    for (const side of ["request", "response"] as const) {
      const ours = factsOf(JSON.parse(JSON.stringify(contract[side]))) as Facts;
      const theirs = prod[side];
      for (const path of [...new Set([...Object.keys(theirs), ...Object.keys(ours)])]) {
        const at = path === "" ? side : `${side}.${path}`;
        const p = theirs[path];
        const k = ours[path];
        if (p === undefined || k === undefined) {
          out.push({ operation, path: at, fact: "present", production: p !== undefined, keyguard: k !== undefined });
          continue;
        }
        for (const fact of [...new Set([...Object.keys(p), ...Object.keys(k)])]) {
          if (!same(p[fact], k[fact])) out.push({ operation, path: at, fact, production: p[fact] ?? null, keyguard: k[fact] ?? null });
        }
      }
    }
  }
  return out;
}
