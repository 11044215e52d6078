// The entropy rule for a root key the operator gives (rootKey, UNKEY_ROOT_KEY): the shapes the docs
// recommend and every generated key pass; short, repeated or low-variety keys are refused, at
// createLocalKeyService with a config error that names the command making a good one and never the key.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import { createLocalKeyService, LocalServiceConfigError } from "keyguard/server";
import { generateKey } from "../../../src/server/domain/key-material";
import { ROOT_KEY_COMMAND, rootKeyWeakness } from "../../../src/server/domain/root-key-strength";

describe("rootKeyWeakness", () => {
  it("passes generated keys and the recommended shapes, 1,000 of each", () => {
    for (let i = 0; i < 1000; i++) {
      for (const key of [
        generateKey("root", 24).key,
        `root_${randomBytes(24).toString("hex")}`,
        `root_${randomBytes(24).toString("base64")}`,
        randomBytes(16).toString("hex"),
        randomBytes(32).toString("base64url"),
      ]) {
        expect(rootKeyWeakness(key), key).toBeUndefined();
      }
    }
  });

  it("estimates bits from the length and alphabet after a name_ prefix, and refuses below 128", () => {
    expect(rootKeyWeakness("root_adminKey123")).toBe(
      "it holds about 65 bits of entropy (11 characters from an alphabet of 62, after its prefix); at least 128 are needed",
    );
    // 31 hex digits: 124 bits; 32: 128.
    expect(rootKeyWeakness(`root_${"a1b2c3d4e5f60718293a4b5c6d7e8f9"}`)).toMatch(/about 124 bits .* alphabet of 16/);
    expect(rootKeyWeakness(`root_${"a1b2c3d4e5f60718293a4b5c6d7e8f90"}`)).toBeUndefined();
    expect(rootKeyWeakness("12345678901234567890123456789012345678")).toMatch(/alphabet of 10\)/);
  });

  it("refuses long keys that repeat a shorter string or use few distinct characters", () => {
    expect(rootKeyWeakness("a".repeat(60))).toBe("it repeats a shorter string");
    expect(rootKeyWeakness(`root_${"0123456789abcdef".repeat(3)}`)).toBe("it repeats a shorter string");
    expect(rootKeyWeakness(`root_${"ab".repeat(20)}${"ba".repeat(20)}X`)).toMatch(/only 3 distinct characters in 81/);
  });
});

describe("a weak root key given to the service", () => {
  it("is refused at start with the command that makes a good one, never repeating the key", async () => {
    for (const [options, env, name] of [
      [{ rootKey: "root_adminKey123" }, {}, "rootKey"],
      [{}, { UNKEY_ROOT_KEY: "root_adminKey123" }, "UNKEY_ROOT_KEY"],
    ] as const) {
      const before = process.env.UNKEY_ROOT_KEY;
      if ("UNKEY_ROOT_KEY" in env) process.env.UNKEY_ROOT_KEY = env.UNKEY_ROOT_KEY;
      try {
        const err = await createLocalKeyService({ ...options, logger: silentLogger }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(LocalServiceConfigError);
        const message = (err as Error).message;
        expect(message).toContain(`invalid option ${name} = <hidden>. The root key is too easy to guess: it holds about 65 bits`);
        expect(message).toContain(`Make one with: ${ROOT_KEY_COMMAND}`);
        expect(message).not.toContain("adminKey123");
      } finally {
        if (before === undefined) delete process.env.UNKEY_ROOT_KEY;
        else process.env.UNKEY_ROOT_KEY = before;
      }
    }
    const strong = await createLocalKeyService({ rootKey: `root_${randomBytes(24).toString("hex")}`, logger: silentLogger });
    await strong.close();
  });
});
