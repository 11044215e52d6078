// The contract's checker: the `errors[]` it reports for a value against a schema, and that every
// operation the service serves has a contract (and the other way round).
import Type from "typebox";
import { describe, expect, expectTypeOf, it } from "vitest";
import { checkValue } from "../../../src/protocol/contract/check";
import { CONTRACT, EXTENSION_CONTRACT, contractOf } from "../../../src/protocol/contract";
import { Meta, nullable, strict, text } from "../../../src/protocol/contract/fields";
import { findOperation } from "../../../src/server/operations/table";
import { LIST_OPERATIONS, type Operations } from "../../../src/protocol/types";

describe("checkValue", () => {
  const schema = strict({
    name: text(3),
    n: Type.Optional(Type.Integer({ minimum: 1 })),
    list: Type.Optional(Type.Array(text(), { maxItems: 2 })),
    opt: Type.Optional(nullable(text())),
  });

  it("accepts valid values", () => {
    expect(checkValue(schema, { name: "abc", n: 1, list: ["a"], opt: null })).toEqual([]);
  });

  it("reports location, message and a fix", () => {
    expect(checkValue(schema, { n: 0.5, list: ["a", "b", 3], extra: 1 })).toEqual([
      { location: "body.name", message: "is required", fix: 'Add the "name" field.' },
      { location: "body.n", message: "must be an integer, got number" },
      { location: "body.list", message: "must have at most 2 items" },
      { location: "body.list[2]", message: "must be a string, got number" },
      { location: "body.extra", message: "is not a known field", fix: "Remove it. Known fields: name, n, list, opt." },
    ]);
    expect(checkValue(schema, [])).toEqual([{ location: "body", message: "must be an object, got array" }]);
    expect(checkValue(schema, { name: null })).toEqual([
      { location: "body.name", message: "must not be null", fix: "Omit the field instead of sending null." },
    ]);
  });

  it("names patterns, enums and the remedy a schema carries", () => {
    const s = strict({ id: Type.String({ pattern: "^[a-z]+$", "x-fix": "Use lower-case letters." }), kind: Type.Enum(["a", "b"]) });
    expect(checkValue(s, { id: "A1", kind: "c" }, { location: "options" })).toEqual([
      { location: "options.id", message: "does not match the pattern ^[a-z]+$", fix: "Use lower-case letters." },
      { location: "options.kind", message: 'must be one of "a", "b"' },
    ]);
  });

  it("checks free-form metadata's field count, depth and size", () => {
    const s = strict({ meta: Meta });
    expect(checkValue(s, { meta: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`f${i}`, i])) })).toMatchObject([
      { location: "body.meta", message: "must have at most 100 fields" },
    ]);
    let deep: unknown = 1;
    for (let i = 0; i < 33; i++) deep = { d: deep };
    expect(checkValue(s, { meta: deep })).toMatchObject([{ location: "body.meta", message: "must not be nested deeper than 32 levels" }]);
    expect(checkValue(s, { meta: { blob: "é".repeat(40_000) } })).toMatchObject([{ message: "must be at most 65536 bytes as JSON" }]);
  });

  it("accepts unknown fields where asked to (answers of a newer server)", () => {
    expect(checkValue(schema, { name: "a", extra: 1 }, { unknownFields: "accept" })).toEqual([]);
  });

  it("never lets a prototype key through", () => {
    expect(checkValue(schema, JSON.parse('{"name":"a","__proto__":{"x":1}}'))[0]).toMatchObject({ location: "body.__proto__" });
  });
});

describe("the contract's table", () => {
  it("has a contract for every operation the service serves, and no other", () => {
    const names = [...Object.keys(CONTRACT), ...Object.keys(EXTENSION_CONTRACT)];
    for (const name of names) expect(findOperation(name), name).toBeDefined();
    expect(contractOf("keys.nothing")).toBeUndefined();
    expect(contractOf("toString")).toBeUndefined();
    expect(names).toHaveLength(79);
  });

  it("names the same operations as the protocol's Operations type", () => {
    expectTypeOf<keyof Operations>().toEqualTypeOf<keyof typeof CONTRACT>();
  });

  it("answers a list operation with an array", () => {
    for (const name of LIST_OPERATIONS) expect(CONTRACT[name].response.type).toBe("array");
  });
});
