// How an error message speaks of a caller's value: its field, its length and its kind, whatever
// the value looks like (a key, a root key, an id, a word).
import { describe, expect, it } from "vitest";
import { described } from "../../../src/server/domain/caller-value";
import { generateKey } from "../../../src/server/domain/key-material";

describe("described", () => {
  it("names the field, the length and the kind, never the value", () => {
    const { key } = generateKey("root", 24);
    for (const value of [key, `root_${"ab12".repeat(12)}`, "docs.write", "key_11zSW1TmTEfDHiTkXn5b9c", "x"]) {
      const text = described("body.keyId", value);
      expect(text).toBe(`body.keyId (a string of ${value.length} character${value.length === 1 ? "" : "s"})`);
      expect(text).not.toContain(value === "x" ? "(x" : value);
    }
  });

  it("says what a value of another kind is", () => {
    expect(described("body.roles", ["a", "b"])).toBe("body.roles (an array of 2 items)");
    expect(described("body.roles", ["a"])).toBe("body.roles (an array of 1 item)");
    expect(described("body.meta", { a: 1 })).toBe("body.meta (an object)");
    expect(described("body.limit", 3)).toBe("body.limit (a number)");
    expect(described("body.name", null)).toBe("body.name (null)");
  });
});
