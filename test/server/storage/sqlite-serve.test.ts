// `keyguard serve --data file.db` as a real child process on a real SQLite file: kill -9 under a
// createKey + verify load loses nothing acknowledged; a second process on the file refuses to
// start; a backup taken while serving is consistent; a JSON state file is refused, and migrated.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { sqliteStorage } from "../../../src/server/storage/sqlite/store";
import { openConnection } from "../../../src/server/storage/sqlite/driver";
import { exited, killChildren, run, serve, type Served } from "../../cli/cli-process";
import { makeCall, type Call } from "../helpers";

const dir = mkdtempSync(join(tmpdir(), "keyguard-sqlite-serve-"));
afterEach(killChildren);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const rootKey = `root_${randomBytes(18).toString("hex")}`;
const rootKeyFile = join(dir, "root-key");
writeFileSync(rootKeyFile, `${rootKey}\n`, { mode: 0o600 });

function serveData(file: string): Promise<Served> {
  return serve(["--port", "0", "--data", file, "--root-key-file", rootKeyFile]);
}

async function kill9(served: Served): Promise<void> {
  served.child.kill("SIGKILL");
  await exited(served.child);
}

interface Acked {
  keyId: string;
  key: string;
  /** VALID answers received: credits spent and acknowledged. */
  valid: number;
}

const CREDITS = 20;

/** Workers creating keys and verifying them until `stop`; only answers received count. */
async function load(call: Call, apiId: string, acked: Acked[], stop: { now: boolean }): Promise<void> {
  const worker = async () => {
    while (!stop.now) {
      try {
        const created = await call("keys.createKey", { apiId, credits: { remaining: CREDITS } });
        if (created.status !== 200) continue;
        const entry: Acked = { keyId: created.body.data.keyId, key: created.body.data.key, valid: 0 };
        acked.push(entry);
        for (let i = 0; i < 3 && !stop.now; i++) {
          const verified = await call("keys.verifyKey", { key: entry.key });
          if (verified.status === 200 && verified.body.data.code === "VALID") entry.valid++;
        }
      } catch {
        // The process was killed under this request: not acknowledged, so not counted.
        return;
      }
    }
  };
  await Promise.all(Array.from({ length: 6 }, worker));
}

describe("keyguard serve --data file.db", () => {
  it("kill -9 during a createKey + verify load: every acknowledged key verifies, no acknowledged credit comes back", async () => {
    const file = join(dir, "crash.db");
    const acked: Acked[] = [];
    let served = await serveData(file);
    const apiId = served.apiId;
    for (let round = 0; round < 3; round++) {
      const stop = { now: false };
      const running = load(makeCall(served.baseUrl, rootKey), apiId, acked, stop);
      await new Promise((r) => setTimeout(r, 600 + round * 200));
      await kill9(served); // mid-load: requests in flight are cut
      stop.now = true;
      await running;

      served = await serveData(file);
      expect(served.apiId).toBe(apiId);
      const call = makeCall(served.baseUrl, rootKey);
      for (const k of acked) {
        const got = await call("keys.getKey", { keyId: k.keyId });
        expect(got.status, `acknowledged key ${k.keyId} after restart ${round + 1}`).toBe(200);
        expect(got.body.data.credits.remaining).toBeLessThanOrEqual(CREDITS - k.valid);
      }
    }
    expect(acked.length).toBeGreaterThan(10);
    expect(acked.reduce((n, k) => n + k.valid, 0)).toBeGreaterThan(10);
    // Each key verifies, and its balance never went up again.
    const call = makeCall(served.baseUrl, rootKey);
    for (const k of acked.slice(0, 20)) {
      const verified = await call("keys.verifyKey", { key: k.key });
      expect(verified.body.data.code).toBe("VALID");
      expect(verified.body.data.credits).toBeLessThanOrEqual(CREDITS - k.valid - 1);
    }
    // Nothing left behind: SQLite's own files and the lock, no temp files.
    expect(
      readdirSync(dir)
        .filter((f) => f.startsWith("crash.db"))
        .sort(),
    ).toEqual(["crash.db", "crash.db-lock", "crash.db-shm", "crash.db-wal"]);
    served.child.kill("SIGTERM");
    expect(await exited(served.child)).toBe(0);
  }, 120_000);

  it("a second process on the same file refuses to start; the first keeps working", async () => {
    const file = join(dir, "two.db");
    const first = await serveData(file);
    const second = await run(["serve", "--port", "0", "--data", file, "--root-key-file", rootKeyFile]);
    expect(second.status).toBe(2);
    expect(second.stderr).toContain(
      `keyguard: cannot start the local key service: keyguard/server: "${file}" is in use by another keyguard process`,
    );
    const call = makeCall(first.baseUrl, rootKey);
    const created = await call("keys.createKey", { apiId: first.apiId });
    expect(created.status).toBe(200);
    expect((await call("keys.verifyKey", { key: created.body.data.key })).body.data.code).toBe("VALID");
  }, 60_000);

  it("a backup taken while serving (VACUUM INTO from another process) holds every acknowledged key", async () => {
    const file = join(dir, "live.db");
    const served = await serveData(file);
    const call = makeCall(served.baseUrl, rootKey);
    const keyIds: string[] = [];
    for (let i = 0; i < 5; i++) keyIds.push((await call("keys.createKey", { apiId: served.apiId, name: `k${i}` })).body.data.keyId);
    const backup = join(dir, "backup.db");
    // Another process than the service: this test's, with a connection of its own.
    const reader = await openConnection(file);
    reader.exec(`VACUUM INTO '${backup}'`);
    reader.close();
    expect((await call("keys.createKey", { apiId: served.apiId })).status).toBe(200);
    const store = await sqliteStorage(backup);
    try {
      for (const id of keyIds) expect((await store.direct.get("keys", id))?.id).toBe(id);
    } finally {
      await store.close();
    }
  }, 60_000);

  it("refuses a JSON state file, naming keyguard migrate", async () => {
    const json = join(dir, "old-state.json");
    writeFileSync(
      json,
      JSON.stringify({
        version: 1,
        workspaces: {},
        rootKeys: {},
        apis: {},
        keys: {},
        permissions: {},
        roles: {},
        identities: {},
        windows: {},
      }),
    );
    const res = await run(["serve", "--port", "0", "--data", json]);
    expect(res.status).toBe(2);
    expect(res.stderr).toContain(
      `is a JSON state file of an earlier keyguard, not a SQLite database. Import it once into a new SQLite file: keyguard migrate ${json} --data <new-file.db>`,
    );
  }, 30_000);
});
