// Unit tests of key extraction: Bearer syntax, the key header, repeats, conflicts, length.
import { describe, expect, it } from "vitest";
import {
  bearerMemo,
  checkCustomKey,
  extractKey,
  extractKeyRemembering,
  MAX_KEY_LENGTH,
  type ExtractOptions,
} from "../../src/middleware/extract-key";

const opts: ExtractOptions = { bearer: true, header: "x-api-key", headerLabel: "X-API-Key" };

/** Builds headers the way Node does: lower-case `headers` (first Authorization wins, X-API-Key joined) plus rawHeaders. */
function req(...pairs: Array<[string, string]>) {
  const headers: Record<string, string> = {};
  for (const [name, value] of pairs) {
    const k = name.toLowerCase();
    if (k === "authorization") headers[k] ??= value;
    else headers[k] = headers[k] === undefined ? value : `${headers[k]}, ${value}`;
  }
  return { headers, rawHeaders: pairs.flat() };
}

describe("extractKey", () => {
  it("reads a Bearer token with the scheme in any case", () => {
    for (const scheme of ["Bearer", "bearer", "BEARER", "bEaReR"]) {
      expect(extractKey(req(["Authorization", `${scheme} key_abc`]), opts)).toEqual({
        kind: "key",
        key: "key_abc",
        from: ["authorization"],
      });
    }
  });

  it("accepts one or more spaces after the scheme (RFC 7235 1*SP) and b64token padding", () => {
    expect(extractKey(req(["Authorization", "Bearer   key_abc"]), opts)).toMatchObject({ kind: "key", key: "key_abc" });
    expect(extractKey(req(["Authorization", "Bearer a-b.c_d~e+f/g=="]), opts)).toMatchObject({ kind: "key", key: "a-b.c_d~e+f/g==" });
  });

  it("rejects malformed Bearer credentials with a reason that never contains the token", () => {
    const cases = ["Bearer", "Bearer zqx one", "Bearer\tzqx", "Bearer zqx,other", "Bearer zqé", "Bearer =zqx", ""];
    for (const value of cases) {
      const out = extractKey(req(["Authorization", value]), opts);
      expect(out.kind, JSON.stringify(value)).toBe("malformed");
      if (out.kind === "malformed") expect(out.reason).not.toContain("zq");
    }
  });

  it("treats another scheme as no key, and then uses the key header", () => {
    expect(extractKey(req(["Authorization", "Basic dXNlcjpwYXNz"]), opts)).toEqual({ kind: "none" });
    expect(extractKey(req(["Authorization", "Basic dXNlcjpwYXNz"], ["X-API-Key", "key_1"]), opts)).toEqual({
      kind: "key",
      key: "key_1",
      from: ["header"],
    });
  });

  it("flags repeated headers using rawHeaders", () => {
    expect(extractKey(req(["Authorization", "Bearer a"], ["authorization", "Bearer a"]), opts)).toMatchObject({ kind: "malformed" });
    expect(extractKey(req(["X-API-Key", "a"], ["x-api-key", "b"]), opts)).toMatchObject({ kind: "malformed" });
  });

  it("takes presence from headers (which middleware may edit) and repeats from rawHeaders", () => {
    const removed = { headers: {}, rawHeaders: ["Authorization", "Bearer k1"] };
    expect(extractKey(removed, opts)).toEqual({ kind: "none" });
    const added = { headers: { authorization: "Bearer k1" }, rawHeaders: [] };
    expect(extractKey(added, opts)).toMatchObject({ kind: "key", key: "k1" });
  });

  it("falls back to the joined value when rawHeaders is absent", () => {
    expect(extractKey({ headers: { "x-api-key": "a, b" } }, opts)).toMatchObject({ kind: "malformed" });
    expect(extractKey({ headers: { "x-api-key": "a" } }, opts)).toMatchObject({ kind: "key", key: "a" });
  });

  it("accepts the same key in both places and refuses two different keys", () => {
    expect(extractKey(req(["Authorization", "Bearer k1"], ["X-API-Key", "k1"]), opts)).toEqual({
      kind: "key",
      key: "k1",
      from: ["authorization", "header"],
    });
    expect(extractKey(req(["Authorization", "Bearer k1"], ["X-API-Key", "k2"]), opts)).toMatchObject({ kind: "malformed" });
  });

  it("reports a well-formed key over the length limit as oversize", () => {
    const long = "k".repeat(MAX_KEY_LENGTH + 1);
    expect(extractKey(req(["X-API-Key", long]), opts)).toEqual({ kind: "oversize", from: ["header"] });
    expect(extractKey(req(["X-API-Key", "k".repeat(MAX_KEY_LENGTH)]), opts)).toMatchObject({ kind: "key" });
  });

  it("honours disabled sources", () => {
    const onlyHeader = { ...opts, bearer: false };
    expect(extractKey(req(["Authorization", "Bearer k1"]), onlyHeader)).toEqual({ kind: "none" });
    const onlyBearer = { ...opts, header: undefined };
    expect(extractKey(req(["X-API-Key", "k1"]), onlyBearer)).toEqual({ kind: "none" });
  });
});

describe("checkCustomKey", () => {
  it("maps getKey results", () => {
    expect(checkCustomKey(undefined)).toEqual({ kind: "none" });
    expect(checkCustomKey(null)).toEqual({ kind: "none" });
    expect(checkCustomKey("")).toEqual({ kind: "none" });
    expect(checkCustomKey(42)).toMatchObject({ kind: "malformed" });
    expect(checkCustomKey("has spaces is fine")).toEqual({ kind: "key", key: "has spaces is fine", from: [] });
    expect(checkCustomKey("x".repeat(513))).toEqual({ kind: "oversize", from: [] });
  });
});

describe("extractKey with a memo of the last Authorization value", () => {
  it("gives the same key string for the same value, and each other value its own reading", () => {
    const memo = bearerMemo();
    // An empty memo answers nothing, not even for an empty value.
    expect(extractKeyRemembering(req(["Authorization", ""]), opts, memo)).toMatchObject({ kind: "malformed" });
    const first = extractKeyRemembering(req(["Authorization", `Bearer ${"k".repeat(20)}`]), opts, memo);
    const again = extractKeyRemembering(req(["Authorization", `Bearer ${"k".repeat(20)}`]), opts, memo);
    expect(first).toMatchObject({ kind: "key", key: "k".repeat(20) });
    expect(again.kind === "key" && first.kind === "key" && again.key === first.key).toBe(true);
    // Same length, one character apart: read again.
    expect(extractKeyRemembering(req(["Authorization", `Bearer ${"k".repeat(19)}j`]), opts, memo)).toMatchObject({
      kind: "key",
      key: `${"k".repeat(19)}j`,
    });
    // The value remembered, then sent twice, or beside a different X-API-Key: malformed as without a memo.
    const value = `Bearer ${"k".repeat(19)}j`;
    expect(extractKeyRemembering(req(["Authorization", value], ["Authorization", value]), opts, memo)).toMatchObject({ kind: "malformed" });
    expect(extractKeyRemembering(req(["Authorization", value], ["X-API-Key", "other"]), opts, memo)).toMatchObject({ kind: "malformed" });
    // Values that give no key are not remembered, and do not replace the one remembered.
    expect(extractKeyRemembering(req(["Authorization", "Basic dXNlcjpwYXNz"]), opts, memo)).toEqual({ kind: "none" });
    expect(extractKeyRemembering(req(["Authorization", "Bearer a b"]), opts, memo)).toMatchObject({ kind: "malformed" });
    expect(memo.value).toBe(value);
    expect(extractKeyRemembering(req(["Authorization", value]), opts, memo)).toMatchObject({
      kind: "key",
      key: `${"k".repeat(19)}j`,
      from: ["authorization"],
    });
  });
});
