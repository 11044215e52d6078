// The redaction helpers: secrets replaced in text, request ids checked before use, and fetch
// errors copied down to a few harmless fields.

import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { describeCause, redact, safeCause, safeRequestId } from "../../src/client/redact";

const SECRETS = ["root_SECRET_1234", "sk_caller_5678"];

describe("redact", () => {
  it("replaces every occurrence of every secret, and ignores empty secrets", () => {
    expect(redact("a root_SECRET_1234 b sk_caller_5678 root_SECRET_1234", SECRETS)).toBe("a [redacted] b [redacted] [redacted]");
    expect(redact("nothing here", ["", ...SECRETS])).toBe("nothing here");
  });
});

describe("safeRequestId", () => {
  it("passes a request id through", () => {
    expect(safeRequestId("req_01HZ-abc", SECRETS)).toBe("req_01HZ-abc");
    expect(safeRequestId("r".repeat(128), SECRETS)).toBe("r".repeat(128));
  });

  it.each([
    ["a secret", "sk_caller_5678"],
    ["a secret inside", "req_root_SECRET_1234"],
    ["spaces", "req 1"],
    ["a newline", "req_1\nreq_2"],
    ["non-ASCII", "req_é"],
    ["129 characters", "r".repeat(129)],
  ])("reads %s as unknown", (_name, id) => {
    expect(safeRequestId(id, SECRETS)).toBe("unknown");
  });

  it("is undefined when there is none", () => {
    expect([undefined, null, "", 5, {}].map((id) => safeRequestId(id, SECRETS))).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});

describe("safeCause", () => {
  it("keeps only name, redacted message, code, errno and syscall, a few causes deep", () => {
    const request = { headers: { authorization: "Bearer root_SECRET_1234" } };
    const system = Object.assign(new Error("connect ECONNREFUSED root_SECRET_1234"), {
      code: "ECONNREFUSED",
      errno: -111,
      syscall: "connect",
      request,
    });
    const original = Object.assign(new TypeError("fetch failed", { cause: system }), { request });
    const copy = safeCause(original, SECRETS);

    expect(copy).toBeInstanceOf(Error);
    expect(copy).not.toBe(original);
    expect(copy).toMatchObject({ name: "TypeError", message: "fetch failed" });
    expect(copy.cause).toMatchObject({ message: "connect ECONNREFUSED [redacted]", code: "ECONNREFUSED", errno: -111, syscall: "connect" });
    expect(Object.keys(copy)).toEqual([]);
    expect(Object.keys(copy.cause as object).sort()).toEqual(["code", "errno", "syscall"]);
    expect(inspect(copy, { depth: 10, showHidden: true })).not.toContain("root_SECRET_1234");
  });

  it("stops after a few levels of causes, and copes with non-errors", () => {
    let chain: unknown = new Error("bottom");
    for (let i = 0; i < 10; i++) chain = new Error(`level ${i}`, { cause: chain });
    let depth = 0;
    for (let c: unknown = safeCause(chain, SECRETS); c instanceof Error; c = c.cause) depth++;
    expect(depth).toBe(4);
    expect(safeCause("root_SECRET_1234 broke", SECRETS)).toMatchObject({ name: "Error", message: "[redacted] broke" });
    expect(safeCause(undefined, SECRETS).message).toBe("undefined");
  });
});

describe("describeCause", () => {
  it("prefers the system error code, else the redacted message", () => {
    expect(describeCause(new TypeError("fetch failed", { cause: Object.assign(new Error("x"), { code: "ECONNRESET" }) }), SECRETS)).toBe(
      "ECONNRESET",
    );
    expect(describeCause(new Error("bad header sk_caller_5678"), SECRETS)).toBe("bad header [redacted]");
  });
});
