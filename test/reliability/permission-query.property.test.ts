// Property tests: the permission-query parser and evaluator against a simple reference model.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  evaluatePermissionQuery,
  formatPermissionQuery,
  parsePermissionQuery,
  PermissionQuerySyntaxError,
  type PermissionQuery,
} from "../../src/protocol/permission-query";

// The reference model: a tree built directly, evaluated with plain recursion.
type Model = { p: string } | { and: [Model, Model] } | { or: [Model, Model] };
const holds = (m: Model, granted: Set<string>): boolean =>
  "p" in m
    ? granted.has(m.p)
    : "and" in m
      ? holds(m.and[0], granted) && holds(m.and[1], granted)
      : holds(m.or[0], granted) || holds(m.or[1], granted);

const NAMES = ["docs.read", "docs.write", "admin", "api.*.verify_key", "a:b/c", "x-y_z", "and.x", "ORG"];
const name = fc.constantFrom(...NAMES);
const { model } = fc.letrec<{ model: Model }>((tie) => ({
  model: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    name.map((p) => ({ p })),
    fc.tuple(tie("model"), tie("model")).map(([a, b]) => ({ and: [a, b] as [Model, Model] })),
    fc.tuple(tie("model"), tie("model")).map(([a, b]) => ({ or: [a, b] as [Model, Model] })),
  ),
}));

// Renders a model as text, always parenthesising compound operands, with random operator case
// and spacing, so that the text's meaning is the model's meaning whatever the precedence rules.
const render = (m: Model, casing: (word: string) => string, space: string): string => {
  if ("p" in m) return m.p;
  const [op, [a, b]] = "and" in m ? ["AND", m.and] : ["OR", m.or];
  const wrap = (x: Model) => ("p" in x ? x.p : `(${space}${render(x, casing, space)}${space})`);
  return `${wrap(a)} ${casing(op)} ${wrap(b)}`;
};
const casing = fc.constantFrom(
  (w: string) => w,
  (w: string) => w.toLowerCase(),
  (w: string) => w[0] + w.slice(1).toLowerCase(),
);

describe("permission query properties", () => {
  it("evaluates like the reference model for any tree and any granted set", () => {
    fc.assert(
      fc.property(model, casing, fc.constantFrom("", " ", "  ", "\t"), fc.subarray(NAMES), (m, c, space, granted) => {
        const text = render(m, c, space);
        const parsed = parsePermissionQuery(text);
        expect(evaluatePermissionQuery(parsed, granted)).toBe(holds(m, new Set(granted)));
      }),
      { numRuns: 500 },
    );
  });

  it("AND binds tighter than OR: a OR b AND c means a OR (b AND c)", () => {
    fc.assert(
      fc.property(name, name, name, fc.subarray(NAMES), (a, b, c, granted) => {
        const set = new Set(granted);
        const parsed = parsePermissionQuery(`${a} OR ${b} AND ${c}`);
        expect(evaluatePermissionQuery(parsed, set)).toBe(set.has(a) || (set.has(b) && set.has(c)));
      }),
      { numRuns: 300 },
    );
  });

  it("formatting and reparsing keeps the meaning", () => {
    fc.assert(
      fc.property(model, fc.subarray(NAMES), (m, granted) => {
        const parsed: PermissionQuery = parsePermissionQuery(render(m, (w) => w, ""));
        const again = parsePermissionQuery(formatPermissionQuery(parsed));
        expect(evaluatePermissionQuery(again, granted)).toBe(evaluatePermissionQuery(parsed, granted));
      }),
      { numRuns: 300 },
    );
  });

  it("any string either parses or throws PermissionQuerySyntaxError with a position inside the query", () => {
    const alphabet = fc.constantFrom(..."ab.*()  ANDOR&|,é\t-:/".split(""));
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 60 }), fc.string({ unit: alphabet, maxLength: 60 })), (text) => {
        try {
          const parsed = parsePermissionQuery(text);
          expect(typeof evaluatePermissionQuery(parsed, [])).toBe("boolean");
        } catch (error) {
          expect(error).toBeInstanceOf(PermissionQuerySyntaxError);
          const { position } = error as PermissionQuerySyntaxError;
          expect(position).toBeGreaterThanOrEqual(0);
          expect(position).toBeLessThanOrEqual(text.length);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
