// What an operator reads and gets from `keyguard serve`: the "ready in N ms" line, a start with
// Redis down that says what is true (refused, where, and that the service did not start), and the
// SQLite backup of docs/self-hosting.md making copies only their owner can read.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { exited, killChildren, run, serve } from "./cli-process";
import { POSTGRES_URL, isolatedNamespace, postgresRedisSkipReason } from "../support/postgres-redis";
import { refusedUrl } from "../support/loopback-ports";

const dir = mkdtempSync(join(tmpdir(), "keyguard-operator-"));
afterEach(killChildren);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("keyguard serve, as an operator reads it", () => {
  it('prints "ready in N ms (since the process started)" once it answers, after the banner', async () => {
    const served = await serve(["--port", "0", "--no-console"]);
    const ready = /^keyguard: ready in (\d+) ms \(since the process started\)$/m.exec(served.output);
    expect(ready).not.toBeNull();
    expect(Number(ready![1])).toBeGreaterThan(0);
    expect(served.output.indexOf("state:")).toBeLessThan(ready!.index);
    // It answers by then.
    const res = await fetch(`${served.baseUrl}/v2/liveness`);
    expect(res.status).toBe(200);
  });

  it("the data file is created with mode 0600; the documented backup makes copies with mode 0600", async () => {
    if (!hasSqlite3()) {
      console.log("[skipped part] the sqlite3 command is not installed: the documented backup was not run");
    }
    const data = join(dir, "keys.db");
    const served = await serve(["--port", "0", "--no-console", "--data", data]);
    expect(statSync(data).mode & 0o777).toBe(0o600);
    if (!hasSqlite3()) return;
    const script = documentedBackup().replaceAll("/var/lib/keyguard/keys.db", data).replaceAll("/backups/", `${dir}/`);
    // A usual umask, under which a copy made without care is readable by everyone.
    execFileSync("bash", ["-c", `umask 022\n${script}`], { stdio: "pipe" });
    const copies = ["", "-compact"].map((suffix) => join(dir, `keys-${new Date().toISOString().slice(0, 10)}${suffix}.db`));
    for (const copy of copies) {
      expect(existsSync(copy), copy).toBe(true);
      expect((statSync(copy).mode & 0o777).toString(8), copy).toBe("600");
    }
    served.child.kill("SIGTERM");
    await exited(served.child);
  });
});

function hasSqlite3(): boolean {
  try {
    execFileSync("sqlite3", ["-version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** The sh block of docs/self-hosting.md's "Backup and restore (SQLite)" that makes the backups. */
function documentedBackup(): string {
  const page = readFileSync(new URL("../../docs/self-hosting.md", import.meta.url), "utf8");
  const section = page.slice(page.indexOf("## Backup and restore (SQLite)"));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  expect(block).toContain("sqlite3");
  return block!;
}

const skip = await postgresRedisSkipReason("keyguard serve with Redis down at start");

describe.skipIf(skip !== undefined)("keyguard serve with Redis down at start", () => {
  const ns = isolatedNamespace();
  afterAll(() => ns.drop());

  it("says first that Redis refused the connection, where, and that the service did not start", async () => {
    const refused = new URL(await refusedUrl());
    const where = `${refused.hostname}:${refused.port}`;
    const res = await run(["serve", "--port", "0", "--no-console", "--postgres-schema", ns.schema], {
      KEYGUARD_POSTGRES_URL: POSTGRES_URL,
      KEYGUARD_REDIS_URL: `redis://${where}`,
    });
    expect(res.status).toBe(1);
    const lines = res.stderr.split("\n").filter((l) => l.trim() !== "");
    expect(lines[0]).toContain(
      `keyguard: cannot start the local key service: Redis at ${where} is unavailable: connection refused (ECONNREFUSED). The service did not start`,
    );
    // Not the apps' cache's words, nor a connection "lost" that never was.
    expect(res.stderr).not.toMatch(/answering from memory|connection lost/);
  });
});
