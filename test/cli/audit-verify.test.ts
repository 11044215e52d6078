// `keyguard audit verify` in a child process: an untouched audit log verifies; a record changed,
// removed or inserted straight in the SQLite file, in the PostgreSQL tables or in an NDJSON export
// is named (exit code 1), the first one of its workspace; the chain stays one line when two
// PostgreSQL stores (a fleet) append to one workspace at once.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { postgresStorage, sqliteStorage, type Storage } from "keyguard/server";
import { newId } from "../../src/server/domain/ids";
import type { AuditEvent } from "../../src/server/records";
import { openConnection } from "../../src/server/storage/sqlite/driver";
import { isolatedNamespace, POSTGRES_URL, postgresRedisSkipReason, REDIS_URL } from "../support/postgres-redis";
import { killChildren, run } from "./cli-process";
import { start } from "../server/helpers";

afterEach(killChildren);

const T0 = 1_800_000_000_000;
const WS = "ws_chained";
const OTHER = "ws_other";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "keyguard-audit-verify-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function event(workspaceId: string, i: number): AuditEvent {
  return {
    id: newId("aud"),
    time: T0 + i,
    workspaceId,
    actorId: "rk_bootstrap",
    actorName: "bootstrap",
    operation: "keys.createKey",
    targets: [`key_${i}`],
    outcome: "success",
    requestId: newId("req"),
    ip: "127.0.0.1",
    change: { name: `key ${i}`, meta: { team: "a", n: i } },
  };
}

/** Six records in WS (ids in order), two in OTHER. */
async function fill(store: Storage): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 1; i <= 6; i++) {
    const e = event(WS, i);
    ids.push(e.id);
    await store.transaction((tx) => tx.appendAudit(e));
    if (i % 3 === 0) await store.direct.appendAudit(event(OTHER, i));
  }
  return ids;
}

const verify = (...args: string[]) => run(["audit", "verify", ...args]);

describe("keyguard audit verify --data (SQLite)", () => {
  /** A new data file with the records, then `sql` run on it straight (the store closed). */
  async function tampered(sql: (ids: string[]) => string[]): Promise<{ file: string; ids: string[] }> {
    const file = join(dir, `${newId("req")}.db`);
    const store = await sqliteStorage(file);
    const ids = await fill(store);
    await store.close();
    const db = await openConnection(file);
    try {
      for (const statement of sql(ids)) db.exec(statement);
    } finally {
      db.close();
    }
    return { file, ids };
  }

  it("says every workspace's chain is intact when nothing was touched", async () => {
    const { file } = await tampered(() => []);
    const out = await verify("--data", file);
    expect(out.stderr).toBe("");
    expect(out.status).toBe(0);
    expect(out.stdout).toMatch(new RegExp(`^${OTHER}: ok: 2 records, #1..#2 intact, head [0-9a-f]{64}$`, "m"));
    expect(out.stdout).toMatch(new RegExp(`^${WS}: ok: 6 records, #1..#6 intact, head [0-9a-f]{64}$`, "m"));
  });

  it("names a record whose data or column was changed", async () => {
    const data = await tampered((ids) => [`UPDATE audit_events SET data = json_set(data, '$.ip', '203.0.113.9') WHERE id = '${ids[2]}'`]);
    const out = await verify("--data", data.file);
    expect(out.status).toBe(1);
    expect(out.stderr).toContain(`${WS}: CHANGED: record #3 (${data.ids[2]}) does not match its hash`);
    expect(out.stdout).toContain(`${OTHER}: ok`);

    const column = await tampered((ids) => [`UPDATE audit_events SET actor_id = 'rk_someone_else' WHERE id = '${ids[1]}'`]);
    const second = await verify("--data", column.file);
    expect(second.status).toBe(1);
    expect(second.stderr).toContain(`CHANGED: record #2 (${column.ids[1]})`);
  });

  it("names the first record removed, in the middle or at the end", async () => {
    const middle = await tampered((ids) => [`DELETE FROM audit_events WHERE id IN ('${ids[3]}', '${ids[4]}')`]);
    const out = await verify("--data", middle.file);
    expect(out.status).toBe(1);
    expect(out.stderr).toContain(`${WS}: REMOVED: record #4 is missing (between ${middle.ids[2]} and ${middle.ids[5]})`);

    const last = await tampered((ids) => [`DELETE FROM audit_events WHERE id = '${ids[5]}'`]);
    const end = await verify("--data", last.file);
    expect(end.status).toBe(1);
    expect(end.stderr).toContain(`${WS}: REMOVED: record #6 is missing`);
  });

  it("names a record inserted, with a place taken from another or with none", async () => {
    const copy = await tampered((ids) => [
      `INSERT INTO audit_events (id, workspace_id, time, actor_id, operation, chain_seq, data)
       SELECT 'aud_0inserted', workspace_id, time, actor_id, operation, chain_seq, json_set(data, '$.id', 'aud_0inserted', '$.ip', '198.51.100.1')
       FROM audit_events WHERE id = '${ids[1]}'`,
    ]);
    const out = await verify("--data", copy.file);
    expect(out.status).toBe(1);
    expect(out.stderr).toContain(`${WS}: INSERTED: record aud_0inserted takes the place #2 of ${copy.ids[1]}`);

    const placeless = await tampered((ids) => [
      `INSERT INTO audit_events (id, workspace_id, time, actor_id, operation, chain_seq, data)
       SELECT 'aud_zzinserted', workspace_id, time, actor_id, operation, NULL, json_remove(json_set(data, '$.id', 'aud_zzinserted'), '$.seq', '$.prevHash', '$.hash')
       FROM audit_events WHERE id = '${ids[4]}'`,
    ]);
    const second = await verify("--data", placeless.file);
    expect(second.status).toBe(1);
    expect(second.stderr).toContain(`${WS}: INSERTED: record aud_zzinserted has no place in the chain`);
  });

  it("counts the records from before the chain (an older version's) without failing on them", async () => {
    const legacy = await tampered(() => [
      `INSERT INTO audit_events (id, workspace_id, time, actor_id, operation, data)
       VALUES ('aud_000legacy', '${WS}', 1000, 'rk_old', 'keys.createKey', '{"id":"aud_000legacy","time":1000,"workspaceId":"${WS}","actorId":"rk_old","operation":"keys.createKey","targets":[],"outcome":"success","requestId":"req_1","ip":"127.0.0.1","change":{}}')`,
    ]);
    const out = await verify("--data", legacy.file);
    expect(out.status).toBe(0);
    expect(out.stdout).toMatch(
      new RegExp(`^${WS}: ok: 7 records, #1..#6 intact, head [0-9a-f]{64} \\(1 from before the chain, not covered\\)$`, "m"),
    );
  });

  it("refuses a missing file and a command without a source (exit code 2)", async () => {
    const missing = await verify("--data", join(dir, "none.db"));
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain("does not exist");
    const none = await verify();
    expect(none.status).toBe(2);
    expect(none.stderr).toContain("give one source");
  });
});

describe("keyguard audit verify --postgres", async () => {
  const skip = await postgresRedisSkipReason("keyguard audit verify --postgres");

  it.skipIf(skip)("keeps one line for two stores appending at once, and names what was changed, removed or inserted", async () => {
    const ns = isolatedNamespace();
    const open = () => postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, redisPrefix: ns.redisPrefix });
    const [a, b] = [await open(), await open()];
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    try {
      // Two instances of a fleet, 20 appends each to one workspace, half in transactions.
      await Promise.all(
        [a, b].flatMap((store, s) =>
          Array.from({ length: 20 }, (_, i) =>
            i % 2 === 0
              ? store.direct.appendAudit(event(WS, s * 100 + i))
              : store.transaction((tx) => tx.appendAudit(event(WS, s * 100 + i))),
          ),
        ),
      );
      const args = ["--postgres", POSTGRES_URL, "--postgres-schema", ns.schema];
      const intact = await verify(...args);
      expect(intact.stderr).toBe("");
      expect(intact.status).toBe(0);
      expect(intact.stdout).toMatch(new RegExp(`^${WS}: ok: 40 records, #1..#40 intact`, "m"));

      await client.connect();
      const t = (name: string) => `"${ns.schema}".${name}`;
      const idAt = async (seq: number) =>
        (await client.query<{ id: string }>(`SELECT id FROM ${t("audit_events")} WHERE chain_seq = $1`, [seq])).rows[0]!.id;
      const [id7, id9, id10, id12] = [await idAt(7), await idAt(9), await idAt(10), await idAt(12)];

      await client.query(
        `INSERT INTO ${t("audit_events")} SELECT 'aud_0inserted', workspace_id, "time", actor_id, operation, targets, data, chain_seq FROM ${t("audit_events")} WHERE id = $1`,
        [id12],
      );
      let out = await verify(...args);
      expect(out.status).toBe(1);
      expect(out.stderr).toContain(`INSERTED: record aud_0inserted takes the place #12 of ${id12}`);

      await client.query(`DELETE FROM ${t("audit_events")} WHERE id = $1`, [id10]);
      out = await verify(...args);
      expect(out.stderr).toContain(`REMOVED: record #10 is missing (between ${id9} and `);

      await client.query(`UPDATE ${t("audit_events")} SET data = jsonb_set(data, '{change,name}', '"renamed"') WHERE id = $1`, [id7]);
      out = await verify(...args);
      expect(out.status).toBe(1);
      expect(out.stderr).toContain(`${WS}: CHANGED: record #7 (${id7}) does not match its hash`);
    } finally {
      await client.end().catch(() => undefined);
      await a.close();
      await b.close();
      await ns.drop();
    }
  });
});

describe("keyguard audit verify <export.ndjson>", () => {
  it("checks an export of audit.listEvents and names the first record changed, removed or inserted", async () => {
    const s = await start();
    let lines: string[];
    try {
      for (let i = 0; i < 5; i++) await s.createKey({ name: `key ${i}` });
      const res = await fetch(`${s.baseUrl}/v2/audit.listEvents`, {
        method: "POST",
        headers: { authorization: `Bearer ${s.rootKey}`, "content-type": "application/json", accept: "application/x-ndjson" },
        body: "{}",
      });
      expect(res.status).toBe(200);
      lines = (await res.text()).split("\n").filter((l) => l !== "");
    } finally {
      await s.close();
    }
    // Newest first: line 0 is #5, line 4 is #1.
    expect(lines.map((l) => (JSON.parse(l) as { seq: number }).seq)).toEqual([5, 4, 3, 2, 1]);
    const ids = lines.map((l) => (JSON.parse(l) as { id: string }).id);
    const file = (name: string, content: string[]) => {
      const path = join(dir, name);
      writeFileSync(path, `${content.join("\n")}\n`);
      return path;
    };

    const intact = await verify(file("intact.ndjson", lines));
    expect(intact.status).toBe(0);
    expect(intact.stdout).toMatch(/^export: ok: 5 records, #1..#5 intact, head [0-9a-f]{64}$/m);
    expect(readFileSync(join(dir, "intact.ndjson"), "utf8")).toContain(ids[0]!);

    const changed = lines.map((l, i) => (i === 3 ? l.replace('"127.0.0.1"', '"203.0.113.9"') : l));
    expect(changed[3]).not.toBe(lines[3]);
    const c = await verify(file("changed.ndjson", changed));
    expect(c.status).toBe(1);
    expect(c.stderr).toContain(`export: CHANGED: record #2 (${ids[3]}) does not match its hash`);

    const removed = await verify(
      file(
        "removed.ndjson",
        lines.filter((_, i) => i !== 2),
      ),
    );
    expect(removed.status).toBe(1);
    expect(removed.stderr).toContain(`export: REMOVED: record #3 is missing (between ${ids[3]} and ${ids[1]})`);

    const copy = JSON.parse(lines[1]!) as Record<string, unknown>;
    const inserted = await verify(file("inserted.ndjson", [...lines, JSON.stringify({ ...copy, id: "aud_zzzinserted", ip: "10.0.0.1" })]));
    expect(inserted.status).toBe(1);
    expect(inserted.stderr).toContain(`export: INSERTED: record aud_zzzinserted takes the place #4 of ${ids[1]}`);
  });
});
