// The SQLite store beyond the conformance suite: its file (schema, refusals), one process per
// file, failures answered as StoreUnavailableError and recovered from, and counter pruning.
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { type KeyRecord } from "../../../../src/server/records";
import { StoreUnavailableError, LocalServiceConfigError } from "../../../../src/server/errors";
import { sqliteStorage, type SqliteStorage } from "../../../../src/server/storage/sqlite/store";
import { APPLICATION_ID, MIGRATIONS } from "../../../../src/server/storage/sqlite/schema";
import { hasNodeSqlite, openConnection } from "../../../../src/server/storage/sqlite/driver";
import { keyRecord } from "../../../support/records";

const dir = mkdtempSync(join(tmpdir(), "keyguard-sqlite-"));
let n = 0;
const fresh = (): string => join(dir, `s${++n}.db`);
const opened: SqliteStorage[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function open(file: string): Promise<SqliteStorage> {
  const s = await sqliteStorage(file);
  opened.push(s);
  return s;
}

const key = (id: string, over: Partial<KeyRecord> = {}): KeyRecord =>
  keyRecord({
    id,
    workspaceId: "ws_1",
    apiId: "api_1",
    hash: `hash_${id}`,
    start: "sk_",
    credits: { remaining: 10, lastRefillAt: 0 },
    ...over,
  });

describe("the SQLite data file", () => {
  it("keeps what was committed across a close and a reopen, at the latest schema version", async () => {
    const file = fresh();
    const a = await sqliteStorage(file);
    await a.transaction(async (tx) => {
      await tx.put("keys", key("key_1", { permissionIds: ["perm_b", "perm_a"] }));
      await tx.setMeta("bootstrap", "{}");
    });
    expect(await a.direct.spendCredits("key_1", 3, 5)).toEqual({ ok: true, remaining: 7 });
    await a.close();
    await a.close();
    const b = await open(file);
    expect(await b.direct.get("keys", "key_1")).toEqual(
      key("key_1", { permissionIds: ["perm_b", "perm_a"], credits: { remaining: 7, lastRefillAt: 0 } }),
    );
    expect(await b.direct.getMeta("bootstrap")).toBe("{}");
    expect(await b.pragma("user_version")).toEqual({ user_version: MIGRATIONS.length });
    expect(await b.pragma("application_id")).toEqual({ application_id: APPLICATION_ID });
    expect(await b.pragma("journal_mode")).toEqual({ journal_mode: "wal" });
    expect(await b.isEmpty()).toBe(false);
    expect(await (await open(fresh())).isEmpty()).toBe(true);
  });

  it("refuses a JSON state file of an earlier version, naming keyguard migrate", async () => {
    const file = join(dir, "state.json");
    writeFileSync(file, JSON.stringify({ version: 1, workspaces: {} }));
    await expect(sqliteStorage(file)).rejects.toThrow(/is a JSON state file of an earlier keyguard.*keyguard migrate .*state\.json --data/);
  });

  it("refuses files that are not keyguard databases, and a schema newer than it knows", async () => {
    const text = fresh();
    writeFileSync(text, "hello, not a database at all");
    await expect(sqliteStorage(text)).rejects.toMatchObject({
      code: "LOCAL_SERVICE_CONFIG_ERROR",
      message: expect.stringMatching(/is not a SQLite database/),
    });

    const foreign = fresh();
    const other = await openConnection(foreign);
    other.exec("CREATE TABLE invoices (id INTEGER PRIMARY KEY)");
    other.close();
    await expect(sqliteStorage(foreign)).rejects.toThrow(/a SQLite database of another program/);

    const newer = fresh();
    await (await sqliteStorage(newer)).close();
    const db = await openConnection(newer);
    db.exec("PRAGMA user_version = 99");
    db.close();
    await expect(sqliteStorage(newer)).rejects.toThrow(
      new RegExp(`schema version 99, written by a newer keyguard; this one knows up to ${MIGRATIONS.length}\\.`),
    );
  });

  it("brings a version 2 file (before verification events) to the latest version, keeping its records", async () => {
    const file = fresh();
    const first = await sqliteStorage(file);
    await first.transaction((tx) => tx.put("workspaces", { id: "ws_v2", name: "kept", createdAt: 1 }));
    await first.close();
    // As version 2 left it.
    const db = await openConnection(file);
    db.exec(
      "DROP TABLE key_verifications; DROP TABLE key_last_used; DROP TABLE key_verifications_per_hour; " +
        "DROP TABLE key_verifications_per_day; DROP TABLE key_verifications_outcomes_per_hour; " +
        "DROP TABLE key_verifications_outcomes_per_day; DROP TABLE audit_events; DROP TABLE audit_targets; DROP TABLE webhook_outbox; " +
        "DROP INDEX keys_by_expiry; DROP TABLE audit_chain; DROP TABLE portals; DROP TABLE portal_sessions; DROP TABLE ratelimit_counts; PRAGMA user_version = 2",
    );
    db.close();
    const upgraded = await sqliteStorage(file);
    try {
      expect(await upgraded.direct.get("workspaces", "ws_v2")).toEqual({ id: "ws_v2", name: "kept", createdAt: 1 });
      const event = {
        time: 5,
        workspaceId: "ws_v2",
        keySpaceId: "api_1",
        keyId: "key_1",
        identityId: "",
        externalId: "",
        outcome: "VALID",
        tags: ["t"],
        spentCredits: 0,
        requestId: "req_1",
        region: "local",
      };
      await upgraded.appendVerifications([event]);
      expect(await upgraded.direct.lastUsed(["key_1"])).toEqual(new Map([["key_1", 5]]));
      expect(await upgraded.pragma("user_version")).toEqual({ user_version: MIGRATIONS.length });
    } finally {
      await upgraded.close();
    }
  });

  it("brings a version 3 file to the latest version, counting the events it holds into the rollups", async () => {
    const file = fresh();
    const first = await sqliteStorage(file);
    const event = (time: number, outcome: string, spentCredits: number) => ({
      time,
      workspaceId: "ws_v3",
      keySpaceId: "api_1",
      keyId: "key_1",
      identityId: "",
      externalId: "",
      outcome,
      tags: ["t"],
      spentCredits,
      requestId: `req_${time}`,
      region: "local",
    });
    const HOUR = 3_600_000;
    await first.appendVerifications([event(HOUR + 1, "VALID", 1), event(HOUR + 2, "VALID", 2), event(2 * HOUR, "RATE_LIMITED", 0)]);
    await first.close();
    // As version 3 left it: the events, no rollups.
    const db = await openConnection(file);
    db.exec(
      "DROP TABLE key_verifications_per_hour; DROP TABLE key_verifications_per_day; DROP TABLE key_verifications_outcomes_per_hour; " +
        "DROP TABLE key_verifications_outcomes_per_day; DROP TABLE audit_events; DROP TABLE audit_targets; DROP TABLE webhook_outbox; " +
        "DROP INDEX keys_by_expiry; DROP TABLE audit_chain; DROP TABLE portals; DROP TABLE portal_sessions; DROP TABLE ratelimit_counts; PRAGMA user_version = 3",
    );
    db.close();
    const upgraded = await sqliteStorage(file);
    await upgraded.close();
    const check = await openConnection(file);
    try {
      expect(check.prepare("SELECT bucket, outcome, tags, n, spent_credits FROM key_verifications_per_hour ORDER BY bucket").all()).toEqual(
        [
          { bucket: HOUR, outcome: "VALID", tags: '["t"]', n: 2, spent_credits: 3 },
          { bucket: 2 * HOUR, outcome: "RATE_LIMITED", tags: '["t"]', n: 1, spent_credits: 0 },
        ],
      );
      expect(check.prepare("SELECT bucket, outcome, n FROM key_verifications_outcomes_per_day ORDER BY outcome").all()).toEqual([
        { bucket: 0, outcome: "RATE_LIMITED", n: 1 },
        { bucket: 0, outcome: "VALID", n: 2 },
      ]);
    } finally {
      check.close();
    }
  });

  it("retention deletes a record's target links by their key; a version 10 file loses the index it no longer needs", async () => {
    const file = fresh();
    const first = await sqliteStorage(file);
    await first.close();
    // As version 10 left it: with the index from each link's record to the link.
    const db = await openConnection(file);
    db.exec("CREATE INDEX audit_targets_by_audit ON audit_targets (audit_id); PRAGMA user_version = 10");
    db.close();
    const store = await open(file);
    const record = (id: string, time: number, targets: string[]) => ({
      id,
      time,
      workspaceId: "ws_r",
      actorId: "rk_1",
      operation: "keys.createKey",
      targets,
      outcome: "success" as const,
      requestId: `req_${id}`,
      ip: "",
      change: {},
    });
    await store.direct.appendAudit(record("aud_1", 1_000, ["key_a", "api_1"]));
    await store.direct.appendAudit(record("aud_2", 2_000, ["key_a", "api_1"]));
    await store.direct.appendAudit(record("aud_3", 3_000, ["key_b"]));
    expect(await store.deleteAuditBefore(2_500)).toBe(2);
    const reader = await openConnection(file);
    try {
      expect(reader.prepare("SELECT target, audit_id FROM audit_targets ORDER BY target").all()).toEqual([
        { target: "key_b", audit_id: "aud_3" },
      ]);
      expect(reader.prepare("SELECT name FROM sqlite_master WHERE name = 'audit_targets_by_audit'").all()).toEqual([]);
    } finally {
      reader.close();
    }
    expect(await store.pragma("user_version")).toEqual({ user_version: MIGRATIONS.length });
  });

  it("rejects bad options with a message naming them", async () => {
    await expect(sqliteStorage("")).rejects.toThrow(
      'keyguard/server: sqliteStorage: invalid option file = "". Pass the path of a file (not :memory:)',
    );
    await expect(sqliteStorage(":memory:")).rejects.toThrow(/invalid option file = ":memory:"\. Pass the path of a file/);
    await expect(sqliteStorage(fresh(), { synchronous: "off" as "full" })).rejects.toThrow(/synchronous = "off"/);
    await expect(sqliteStorage(fresh(), { busyTimeoutMs: -1 })).rejects.toThrow(/busyTimeoutMs = -1/);
    await expect(sqliteStorage(fresh(), { driver: "sqlite3" as "node:sqlite" })).rejects.toThrow(
      /driver = "sqlite3". Use "node:sqlite" or "better-sqlite3"/,
    );
  });

  it("refuses an unknown option name before opening the file, suggesting the near one", async () => {
    // A misspelled durability option must not leave the file at synchronous=NORMAL without a word.
    const file = fresh();
    const err = await sqliteStorage(file, { synchronus: "full" } as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(LocalServiceConfigError);
    expect((err as LocalServiceConfigError).option).toBe("synchronus");
    expect((err as Error).message).toBe(
      "keyguard/server: sqliteStorage: unknown option synchronus (did you mean synchronous?); the options are driver, synchronous, busyTimeoutMs, analyticsTimeoutMs.",
    );
    expect(existsSync(file)).toBe(false);
    await expect(sqliteStorage(fresh(), { busyTimeoutMs: 10, walMode: true } as never)).rejects.toThrow(/unknown option walMode;/);
    await expect(sqliteStorage(fresh(), "full" as never)).rejects.toThrow(/invalid option options = "full"/);
    const ok = await sqliteStorage(file, { synchronous: "full" });
    opened.push(ok);
    expect(await ok.pragma("synchronous")).toEqual({ synchronous: 2 });
  });
});

/** Starts a child process opening the store on `file`; resolves with its first line. */
function openInChild(file: string): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", join(__dirname, "fixtures", "open-sqlite.ts"), file], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = "";
    // Node may print warnings on stderr (node:sqlite is experimental on Node 22): kept for the timeout's message only.
    let err = "";
    const timer = setTimeout(() => reject(new Error(`the child printed nothing in time: ${out}${err}`)), 20_000);
    child.stdout!.on("data", (c: Buffer) => {
      out += c.toString();
      if (out.includes("\n")) {
        clearTimeout(timer);
        resolve({ child, line: out.trim() });
      }
    });
    child.stderr!.on("data", (c: Buffer) => (err += c.toString()));
  });
}

describe("file modes", () => {
  // The files hold key hashes, sealed recoverable keys and metadata: their owner alone reads them.
  it.skipIf(process.platform === "win32")(
    "creates the data file, its WAL, shared-memory and lock files readable by their owner only, under umask 022",
    async () => {
      const before = process.umask(0o022);
      try {
        const file = fresh();
        const s = await open(file);
        await s.transaction(async (tx) => tx.put("keys", key("key_mode")));
        for (const suffix of ["", "-wal", "-shm", "-lock"]) {
          expect(existsSync(`${file}${suffix}`), suffix).toBe(true);
          expect((statSync(`${file}${suffix}`).mode & 0o777).toString(8), `${file}${suffix}`).toBe("600");
        }
      } finally {
        process.umask(before);
      }
    },
  );

  it.skipIf(process.platform === "win32")(
    "a service on an existing file others can read warns once per file and for an open directory, naming chmod",
    async () => {
      const { createLocalKeyService } = await import("../../../../src/server/factory");
      const open = join(dir, "open-dir");
      mkdirSync(open, { mode: 0o755 });
      chmodSync(open, 0o755);
      const file = join(open, "keys.db");
      writeFileSync(file, "", { mode: 0o644 });
      chmodSync(file, 0o644);
      const warnings: string[] = [];
      const logger = { warn: (_f: unknown, msg?: string) => void warnings.push(msg ?? ""), error: () => undefined };
      const service = await createLocalKeyService({ dataFile: file, logger });
      await service.close();
      expect(warnings).toContain(`keyguard/server: ${file} can be read by other users; restrict it with: chmod 600 ${file}`);
      expect(warnings.some((w) => w.includes(`the directory ${open} of the data file can be entered by other users`))).toBe(true);
      // The lock file is new, so it is private; nothing else warned.
      expect(warnings.filter((w) => w.includes("-lock"))).toEqual([]);

      chmodSync(file, 0o600);
      chmodSync(open, 0o700);
      warnings.length = 0;
      await (await createLocalKeyService({ dataFile: file, logger })).close();
      expect(warnings.filter((w) => w.includes("other users"))).toEqual([]);
    },
  );
});

describe("the SQLite driver", () => {
  it("node:sqlite is chosen from Node.js 22.13 on", () => {
    expect(["20.19.0", "22.12.0", "22.13.0", "23.0.0", "24.4.1"].map((v) => hasNodeSqlite(v))).toEqual([false, false, true, true, true]);
  });

  it("without better-sqlite3 (and without node:sqlite) the error says what to install", async () => {
    // The package's absence is injected: it is installed here as a devDependency.
    const missing = async (name: string) => {
      throw Object.assign(new Error(`Cannot find package '${name}'`), { code: "ERR_MODULE_NOT_FOUND" });
    };
    const err = await openConnection(fresh(), "better-sqlite3", missing).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LocalServiceConfigError);
    expect((err as Error).message).toBe(
      "keyguard/server: the SQLite store needs a SQLite driver: Node.js 22.13 or later (node:sqlite), or the better-sqlite3 package. " +
        "Install it with: npm install better-sqlite3",
    );
    if (!hasNodeSqlite())
      await expect(sqliteStorage(fresh(), { driver: "node:sqlite" })).rejects.toThrow(
        /node:sqlite needs Node\.js 22\.13 or later.*npm install better-sqlite3/,
      );
  });
});

describe("one process per data file", () => {
  it("a second opener in this process is refused", async () => {
    const file = fresh();
    await open(file);
    await expect(sqliteStorage(file)).rejects.toThrow(/is in use by another keyguard process/);
  });

  it("a second process is refused with a clear message while the first keeps working; a kill -9 frees the file", async () => {
    const file = fresh();
    const first = await open(file);
    const second = await openInChild(file);
    expect(second.line).toMatch(/^REFUSED keyguard\/server: ".*" is in use by another keyguard process .* stop the other one first/);
    await first.transaction((tx) => tx.put("keys", key("key_after")));
    expect((await first.direct.get("keys", "key_after"))?.id).toBe("key_after");
    await first.close();
    opened.splice(0);

    const holder = await openInChild(file);
    expect(holder.line).toBe("OPEN");
    await expect(sqliteStorage(file)).rejects.toThrow(/in use by another keyguard process/);
    holder.child.kill("SIGKILL");
    await new Promise((r) => holder.child.once("exit", r));
    const again = await open(file);
    expect((await again.direct.get("keys", "key_after"))?.id).toBe("key_after");
  }, 60_000);
});

describe("failures", () => {
  it("a full disk fails writes with StoreUnavailableError and recovers when there is room again", async () => {
    const store = await open(fresh());
    await store.transaction((tx) => tx.put("keys", key("key_full")));
    const pages = (await store.pragma("page_count")) as { page_count: number };
    await store.pragma("max_page_count", pages.page_count);
    const big = (i: number) => key(`key_big${i}`, { meta: { pad: "x".repeat(2000) } });
    let failure: unknown;
    try {
      for (let i = 0; i < 200; i++) await store.transaction((tx) => tx.put("keys", big(i)));
    } catch (err) {
      failure = err;
    }
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect((failure as Error).message).toBe(`SQLite store unavailable: the disk or the database is full (${store.file}).`);
    // Updates in place still work; nothing of the failed transaction was kept.
    expect(await store.direct.spendCredits("key_full", 1, 5)).toEqual({ ok: true, remaining: 9 });
    await store.pragma("max_page_count", 1_000_000);
    await store.transaction((tx) => tx.put("keys", big(999)));
    expect((await store.direct.get("keys", "key_big999"))?.id).toBe("key_big999");
  });

  it("a read-only database fails writes and recovers when writable again", async () => {
    const store = await open(fresh());
    await store.transaction((tx) => tx.put("keys", key("key_ro")));
    await store.pragma("query_only", 1);
    await expect(store.direct.spendCredits("key_ro", 1, 5)).rejects.toThrow("SQLite store unavailable: the database is read-only");
    await expect(store.transaction((tx) => tx.put("keys", key("key_ro2")))).rejects.toBeInstanceOf(StoreUnavailableError);
    expect((await store.direct.get("keys", "key_ro"))?.credits?.remaining).toBe(10);
    await store.pragma("query_only", 0);
    expect(await store.direct.spendCredits("key_ro", 1, 5)).toEqual({ ok: true, remaining: 9 });
  });

  // Each change below is made synchronously and the very next store call must see it.
  const GONE = /was deleted, moved or replaced while in use; put it back, or restart keyguard/;

  it("a data file moved away is unavailable (no write lost into it) until it is back", async () => {
    const file = fresh();
    const store = await open(file);
    await store.transaction((tx) => tx.put("keys", key("key_mv")));
    renameSync(file, `${file}.away`);
    await expect(store.direct.get("keys", "key_mv")).rejects.toThrow(GONE);
    await expect(store.direct.spendCredits("key_mv", 1, 5)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.transaction((tx) => tx.put("keys", key("key_mv2")))).rejects.toBeInstanceOf(StoreUnavailableError);
    renameSync(`${file}.away`, file);
    expect(await store.direct.spendCredits("key_mv", 1, 5)).toEqual({ ok: true, remaining: 9 });
    expect(await store.direct.get("keys", "key_mv2")).toBeUndefined();
  });

  it("a data file deleted is unavailable from the next call on", async () => {
    const file = fresh();
    const store = await open(file);
    await store.transaction((tx) => tx.put("keys", key("key_rm")));
    expect(await store.direct.spendCredits("key_rm", 1, 5)).toEqual({ ok: true, remaining: 9 });
    unlinkSync(file);
    await expect(store.direct.spendCredits("key_rm", 1, 5)).rejects.toThrow(GONE);
    await expect(store.direct.keyByHash("hash_key_rm")).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.transaction((tx) => tx.get("keys", "key_rm"))).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it("a data file replaced by a rename over it is unavailable; the new file is not written", async () => {
    const file = fresh();
    const store = await open(file);
    await store.transaction((tx) => tx.put("keys", key("key_rp")));
    writeFileSync(`${file}.new`, "");
    renameSync(`${file}.new`, file);
    await expect(store.direct.get("keys", "key_rp")).rejects.toThrow(GONE);
    await expect(store.transaction((tx) => tx.put("keys", key("key_rp2")))).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(statSync(file).size).toBe(0);
  });

  it("a data file moved away with another file put at its path is unavailable", async () => {
    const file = fresh();
    const store = await open(file);
    await store.transaction((tx) => tx.put("keys", key("key_sw")));
    renameSync(file, `${file}.old`);
    writeFileSync(file, "");
    await expect(store.direct.get("keys", "key_sw")).rejects.toThrow(GONE);
    rmSync(file);
    renameSync(`${file}.old`, file);
    expect((await store.direct.get("keys", "key_sw"))?.id).toBe("key_sw");
  });

  it("a data file whose directory is renamed is unavailable until the directory is back", async () => {
    const sub = join(dir, `d${++n}`);
    mkdirSync(sub);
    const store = await open(join(sub, "keys.db"));
    await store.transaction((tx) => tx.put("keys", key("key_dir")));
    renameSync(sub, `${sub}.moved`);
    await expect(store.direct.get("keys", "key_dir")).rejects.toThrow(GONE);
    renameSync(`${sub}.moved`, sub);
    expect((await store.direct.get("keys", "key_dir"))?.id).toBe("key_dir");
  });
});

describe("transactions and direct calls", () => {
  it("a direct call waits for the open transaction, so its rollback cannot undo the call", async () => {
    const store = await open(fresh());
    await store.transaction((tx) => tx.put("keys", key("key_tx")));
    const failing = store.transaction(async (tx) => {
      await tx.spendCredits("key_tx", 5, 1);
      await new Promise((r) => setTimeout(r, 20));
      throw new Error("undo");
    });
    const spent = store.direct.spendCredits("key_tx", 2, 1);
    await expect(failing).rejects.toThrow("undo");
    expect(await spent).toEqual({ ok: true, remaining: 8 });
    expect((await store.direct.get("keys", "key_tx"))?.credits?.remaining).toBe(8);
  });

  it("a transaction's handle cannot be used after it ended", async () => {
    const store = await open(fresh());
    let leaked: Parameters<Parameters<SqliteStorage["transaction"]>[0]>[0] | undefined;
    await store.transaction(async (tx) => {
      leaked = tx;
    });
    await expect(leaked!.get("keys", "x")).rejects.toThrow(/used after it ended/);
  });
});

const GONE_WHILE_OPEN = /was deleted, moved or replaced while in use/;

describe("group commit", () => {
  /** Whether another connection to `file` sees the key: only what was committed. */
  async function committedView(file: string) {
    const reader = await openConnection(file, undefined);
    readers.push(reader);
    const count = reader.prepare("SELECT count(*) AS n FROM keys WHERE id = ?");
    return (id: string) => Number(count.get(id)?.n) === 1;
  }
  const readers: Array<{ close(): void }> = [];
  afterEach(() => {
    for (const r of readers.splice(0)) r.close();
  });

  it("transactions that come together commit together; each is answered once its commit is done", async () => {
    const file = fresh();
    const store = await open(file);
    const committed = await committedView(file);
    const seenInFifth: boolean[] = [];
    const committedWhenAnswered: boolean[] = [];
    await Promise.all(
      [1, 2, 3, 4, 5].map((i) =>
        store
          .transaction(async (tx) => {
            await tx.put("keys", key(`key_g${i}`));
            if (i === 5) seenInFifth.push(committed("key_g1"), (await tx.get("keys", "key_g1")) !== undefined);
          })
          .then(() => committedWhenAnswered.push(committed(`key_g${i}`))),
      ),
    );
    // The fifth ran in the first one's transaction: it saw its key, which no other connection saw yet.
    expect(seenInFifth).toEqual([false, true]);
    expect(committedWhenAnswered).toEqual([true, true, true, true, true]);
  });

  it("a transaction that fails is undone alone; the others in its group commit", async () => {
    const file = fresh();
    const store = await open(file);
    const committed = await committedView(file);
    let firstCommittedInThird: boolean | undefined;
    const results = await Promise.allSettled(
      [1, 2, 3].map((i) =>
        store.transaction(async (tx) => {
          await tx.put("keys", key(`key_f${i}`));
          if (i === 2) throw new Error("the second fails");
          if (i === 3) firstCommittedInThird = committed("key_f1");
        }),
      ),
    );
    // The third ran in the first one's transaction, after the second was undone.
    expect(firstCommittedInThird).toBe(false);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(((results[1] as PromiseRejectedResult).reason as Error).message).toBe("the second fails");
    expect((await store.direct.get("keys", "key_f1"))?.id).toBe("key_f1");
    expect(await store.direct.get("keys", "key_f2")).toBeUndefined();
    expect((await store.direct.get("keys", "key_f3"))?.id).toBe("key_f3");
  });

  it("when the store fails inside a group, every transaction of the group fails and none is kept", async () => {
    const store = await open(fresh());
    await store.transaction((tx) => tx.put("keys", key("key_u")));
    const pages = (await store.pragma("page_count")) as { page_count: number };
    await store.pragma("max_page_count", pages.page_count);
    const results = await Promise.allSettled([
      // An update in place: it alone would fit.
      store.transaction((tx) => tx.spendCredits("key_u", 3, 5)),
      store.transaction(async (tx) => {
        for (let i = 0; i < 20; i++) await tx.put("keys", key(`key_u${i}`, { meta: { pad: "x".repeat(3000) } }));
      }),
    ]);
    for (const r of results) expect((r as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
    await store.pragma("max_page_count", 1_000_000);
    expect((await store.direct.get("keys", "key_u"))?.credits?.remaining).toBe(10);
    expect(await store.direct.get("keys", "key_u0")).toBeUndefined();
  });

  it("a group holds at most 32 transactions: the 33rd begins after the first 32 committed", async () => {
    const file = fresh();
    const store = await open(file);
    const committed = await committedView(file);
    const firstSeenCommitted: boolean[] = [];
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        store.transaction(async (tx) => {
          await tx.put("keys", key(`key_c${i + 1}`));
          if (i + 1 === 32 || i + 1 === 33) firstSeenCommitted.push(committed("key_c1"));
        }),
      ),
    );
    expect(firstSeenCommitted).toEqual([false, true]);
    expect(committed("key_c40")).toBe(true);
  });

  it("a direct call that comes while a group is open runs in it and is answered after its commit", async () => {
    const file = fresh();
    const store = await open(file);
    await store.transaction((tx) => tx.put("keys", key("key_d")));
    const committed = await committedView(file);
    let committedWhenRead: boolean | undefined;
    const writing = store.transaction((tx) => tx.put("keys", key("key_d2")));
    const read = store.direct.get("keys", "key_d2").then((record) => {
      committedWhenRead = committed("key_d2");
      return record;
    });
    // A transaction after the read: the group is still open, the write not yet committed.
    let committedAfterRead: boolean | undefined;
    const after = store.transaction(async () => {
      committedAfterRead = committed("key_d2");
    });
    await Promise.all([writing, after]);
    expect((await read)?.id).toBe("key_d2");
    expect(committedAfterRead).toBe(false);
    expect(committedWhenRead).toBe(true);
  });

  it("a data file deleted while a group is open: none of the group is kept or answered as done", async () => {
    const file = fresh();
    const store = await open(file);
    await store.transaction((tx) => tx.put("keys", key("key_del")));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let began!: () => void;
    const begun = new Promise<void>((resolve) => (began = resolve));
    const first = store.transaction(async (tx) => {
      await tx.put("keys", key("key_del1"));
      began();
      await gate;
    });
    // Deleted once the group is open (its file checked).
    await begun;
    unlinkSync(file);
    const second = store.transaction((tx) => tx.put("keys", key("key_del2")));
    const spent = store.direct.spendCredits("key_del", 1, 5);
    release();
    for (const call of [first, second, spent]) await expect(call).rejects.toThrow(GONE_WHILE_OPEN);
    await expect(store.direct.get("keys", "key_del")).rejects.toThrow(GONE_WHILE_OPEN);
  });
});

describe("checkpoints", () => {
  it("a worker thread folds the WAL into the file; the service's connection never checkpoints itself", async () => {
    const file = fresh();
    const store = await open(file);
    expect(await store.pragma("wal_autocheckpoint")).toEqual({ wal_autocheckpoint: 0 });
    await store.transaction(async (tx) => {
      for (let i = 0; i < 3000; i++) await tx.put("keys", key(`key_ck${i}`, { meta: { pad: "x".repeat(300) } }));
    });
    // The service's connection checkpoints never: only the worker can have copied these pages into the file.
    const deadline = Date.now() + 10_000;
    while (statSync(file).size < 1_000_000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(statSync(file).size).toBeGreaterThan(1_000_000);
    await store.close();
    opened.splice(0);
    expect(existsSync(`${file}-wal`)).toBe(false);
  });
});

describe("rate-limit counters", () => {
  it("are pruned once their windows ended", async () => {
    const file = fresh();
    const store = await open(file);
    const D = 60_000;
    await store.direct.limit([{ counter: "rl_old/60000", limit: 5, duration: D, cost: 1 }], 10 * D);
    await store.direct.limit([{ counter: "rl_new/60000", limit: 5, duration: D, cost: 1 }], 10 * D + 1);
    const reader = await openConnection(file);
    const counters = () =>
      reader
        .prepare("SELECT counter FROM counters ORDER BY counter")
        .all()
        .map((r) => r.counter);
    expect(counters()).toEqual(["rl_new/60000", "rl_old/60000"]);
    // Two windows later rl_old can no longer count; the next check prunes it.
    await store.direct.limit([{ counter: "rl_new/60000", limit: 5, duration: D, cost: 1 }], 12 * D);
    expect(counters()).toEqual(["rl_new/60000"]);
    reader.close();
  });
});
