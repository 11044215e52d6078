import { describe, expect, it } from "vitest";
import {
  evaluatePermissionQuery,
  formatPermissionQuery,
  parsePermissionQuery,
  PermissionQuerySyntaxError,
  permissionsInQuery,
} from "../../src/protocol/permission-query";

const holds = (query: string, granted: string[]) => evaluatePermissionQuery(parsePermissionQuery(query), granted);

describe("parsePermissionQuery", () => {
  it("parses a single permission", () => {
    expect(parsePermissionQuery("docs.read")).toEqual({ type: "permission", value: "docs.read" });
  });

  it("binds AND tighter than OR", () => {
    expect(parsePermissionQuery("a OR b AND c")).toEqual({
      type: "or",
      operands: [
        { type: "permission", value: "a" },
        {
          type: "and",
          operands: [
            { type: "permission", value: "b" },
            { type: "permission", value: "c" },
          ],
        },
      ],
    });
  });

  it("accepts operators in any case as whole words only", () => {
    expect(parsePermissionQuery("a and b Or c")).toMatchObject({ type: "or" });
    expect(parsePermissionQuery("ANDROID")).toEqual({ type: "permission", value: "ANDROID" });
    expect(parsePermissionQuery("order")).toEqual({ type: "permission", value: "order" });
  });

  it("accepts every identifier character", () => {
    expect(parsePermissionQuery("api.*:read/x-y_z9")).toEqual({ type: "permission", value: "api.*:read/x-y_z9" });
  });

  it.each([
    ["", 0],
    ["   ", 3],
    ["a AND", 5],
    ["AND a", 0],
    ["a b", 2],
    ["(a", 2],
    ["a)", 1],
    ["()", 1],
    ["a OR OR b", 5],
    ["a & b", 2],
    ["docs.read,docs.write", 9],
    ["é", 0],
  ])("rejects %j at position %i", (query, position) => {
    const error = (() => {
      try {
        parsePermissionQuery(query);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(PermissionQuerySyntaxError);
    expect(error).toMatchObject({ code: "permissions_query_syntax_error", position, query });
  });

  it("rejects over-long and over-nested queries", () => {
    expect(() => parsePermissionQuery("a".repeat(1001))).toThrow(/limit is 1000/);
    expect(() => parsePermissionQuery("(".repeat(40) + "a" + ")".repeat(40))).toThrow(/nests deeper/);
    expect(parsePermissionQuery("(".repeat(30) + "a" + ")".repeat(30))).toEqual({ type: "permission", value: "a" });
  });
});

describe("evaluatePermissionQuery", () => {
  it("matches exact strings only", () => {
    expect(holds("docs.read", ["docs.read"])).toBe(true);
    expect(holds("docs.read", ["docs.*"])).toBe(false);
    expect(holds("docs.*", ["docs.read"])).toBe(false);
    expect(holds("Docs.read", ["docs.read"])).toBe(false);
  });

  it("evaluates AND, OR and parentheses", () => {
    expect(holds("a AND b", ["a"])).toBe(false);
    expect(holds("a AND b", ["a", "b"])).toBe(true);
    expect(holds("a OR b AND c", ["a"])).toBe(true);
    expect(holds("(a OR b) AND c", ["a"])).toBe(false);
    expect(holds("(a OR b) AND c", ["b", "c"])).toBe(true);
  });

  it("accepts a Set", () => {
    expect(evaluatePermissionQuery(parsePermissionQuery("a AND b"), new Set(["a", "b"]))).toBe(true);
  });
});

describe("formatting helpers", () => {
  it("round-trips through formatPermissionQuery", () => {
    const text = formatPermissionQuery(parsePermissionQuery("(a or b) and c OR d"));
    expect(text).toBe("(a OR b) AND c OR d");
    expect(parsePermissionQuery(text)).toEqual(parsePermissionQuery("(a or b) and c OR d"));
  });

  it("lists the permissions a query mentions", () => {
    expect(permissionsInQuery(parsePermissionQuery("a AND (b OR a) AND c"))).toEqual(["a", "b", "c"]);
  });
});
