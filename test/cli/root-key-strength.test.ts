// `keyguard serve` with a root key too easy to guess (--root-key, --root-key-file or UNKEY_ROOT_KEY):
// exit code 2 before listening, naming the command that makes a good one and never the key; the
// shape docs/self-hosting.md recommends (`root_` + 48 hex digits) starts.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { killChildren, run, serve } from "./cli-process";

afterEach(killChildren);

describe("keyguard serve with a weak root key", () => {
  it("exits with 2 and the command that makes a good one, by flag, file and variable", async () => {
    const dir = mkdtempSync(join(tmpdir(), "keyguard-weak-root-"));
    try {
      const file = join(dir, "root-key");
      writeFileSync(file, "root_weakButLong\n", { mode: 0o600 });
      const outcomes = await Promise.all([
        run(["serve", "--port", "0", "--root-key", "root_weakButLong"]),
        run(["serve", "--port", "0", "--root-key-file", file]),
        run(["serve", "--port", "0"], { UNKEY_ROOT_KEY: "root_weakButLong" }),
      ]);
      for (const [i, out] of outcomes.entries()) {
        expect(out.status, out.stderr).toBe(2);
        expect(out.stderr).toContain("The root key is too easy to guess: it holds about");
        expect(out.stderr).toContain('Make one with: echo "root_$(openssl rand -hex 24)"');
        expect(out.stderr, `case ${i}`).not.toContain("weakButLong");
        expect(out.stdout).not.toContain("listening");
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("starts with root_ and 48 hex digits, as docs/self-hosting.md recommends", async () => {
    const served = await serve(["--port", "0"], { UNKEY_ROOT_KEY: `root_${randomBytes(24).toString("hex")}` });
    expect(served.output).toContain("UNKEY_ROOT_KEY: (from UNKEY_ROOT_KEY)");
  });
});
