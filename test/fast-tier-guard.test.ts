// The fast tier's guard (test/support/fast-tier-guard.ts) catches a file that starts a child process
// or reaches PostgreSQL or Redis; this file is in the tier, so it runs under that guard. And the
// tier's lists (test/support/tiers.ts) name test files that exist, once each.
import { execFile, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { forbiddenPorts } from "./support/fast-tier-guard";
import { FAST_FILES, FAST_SHARED } from "./support/tiers";

const ROOT = join(__dirname, "..");

describe("the fast tier's guard", () => {
  it("refuses a child process, naming the file to move", () => {
    expect(() => spawn(process.execPath, ["-e", ""])).toThrow(/fast tier.*fast-tier-guard\.test\.ts.*child_process\.spawn.*FAST_FILES/);
    expect(() => execFile(process.execPath, ["--version"])).toThrow(/child_process\.execFile/);
  });

  it("refuses a connection to PostgreSQL or Redis, and allows other loopback ports", () => {
    expect(() => connect({ host: "127.0.0.1", port: 5432 })).toThrow(/port 5432 \(PostgreSQL or Redis\)/);
    expect(() => connect(6379, "127.0.0.1")).toThrow(/port 6379/);
    const other = connect({ host: "127.0.0.1", port: 9 });
    other.on("error", () => undefined);
    other.destroy();
  });

  it("knows the overridden servers' ports", () => {
    const ports = forbiddenPorts({
      KEYGUARD_TEST_POSTGRES_URL: "postgres://u@db.local:6543/test",
      KEYGUARD_TEST_REDIS_URL: "redis://cache:7000",
    });
    expect([...ports].sort()).toEqual([5432, 6379, 6543, 7000]);
  });

  it("the tier's lists name existing test files, once each; the shared-module ones mock no module", () => {
    expect(FAST_FILES.filter((f) => !existsSync(join(ROOT, f)) || !f.endsWith(".test.ts"))).toEqual([]);
    expect(new Set(FAST_FILES).size).toBe(FAST_FILES.length);
    const mocking = FAST_SHARED.filter((f) =>
      /\bvi\.(mock|doMock|unmock|resetModules|stubEnv)\(/.test(readFileSync(join(ROOT, f), "utf8")),
    );
    expect(mocking, "these mock modules: move them to FAST_ISOLATED").toEqual([]);
  });
});
