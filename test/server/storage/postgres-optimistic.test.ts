// The PostgreSQL store's optimistic transactions (src/server/storage/postgres/optimistic.ts), against
// a real PostgreSQL and Redis: what they write, that a record read and changed before the writes
// (or read stale from the record cache) sends the operation round again with locks (nothing of the
// first attempt kept), that a call they cannot defer does the same, and that keys.createKey racing
// the deletion of its API leaves no key behind, and that one instance sends a workspace's audit
// appends two at a time (the rest wait in the service, not on the chain head's lock). How many
// statements a createKey takes is in postgres-round-trips.test.ts.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import { startLocalKeyService } from "keyguard/server";
import type { Storage, StorageTx } from "../../../src/server/storage/seam";
import type { ApiRecord, AuditEvent, PermissionRecord } from "../../../src/server/records";
import { postgresStorage } from "../../../src/server/storage/postgres/store";
import { verifyStoredAudit, type AuditChainSource } from "../../../src/server/storage/audit-verify";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, listenToRecords, postgresRedisSkipReason } from "../../support/postgres-redis";
import { makeCall } from "../helpers";

const skip = await postgresRedisSkipReason("the PostgreSQL store's optimistic transactions");

const OPTIMISTIC = { optimistic: true };

describe.skipIf(skip !== undefined)("the PostgreSQL store's optimistic transactions", () => {
  const ns = isolatedNamespace();
  let store: Storage;
  /** The same database through a store of its own: a writer the transactions under test race. */
  let other: Storage;
  let sql: pg.Client;

  beforeAll(async () => {
    const options = { postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema };
    store = await postgresStorage(options);
    other = await postgresStorage(options);
    sql = new pg.Client({ connectionString: POSTGRES_URL });
    await sql.connect();
  });
  afterAll(async () => {
    await sql?.end();
    await Promise.all([store, other].map((s) => s?.close()));
    await ns.drop();
  });

  let n = 0;
  const api = (name: string): ApiRecord => ({ id: `api_opt_${++n}`, workspaceId: "ws_opt", name, createdAt: 1 });
  /** A permission named after what the transaction read of `api`: what it writes shows what it saw. */
  const permissionOf = (api: ApiRecord | undefined, id: string): PermissionRecord => ({
    id,
    workspaceId: "ws_opt",
    name: api?.name ?? "no api",
    slug: `from.${id}`,
    createdAt: 1,
  });
  const event = (id: string): AuditEvent => ({
    id,
    time: Date.now(),
    workspaceId: "ws_opt",
    actorId: "root_opt",
    operation: "test.optimistic",
    targets: [id],
    outcome: "success",
    requestId: "req_opt",
    ip: "127.0.0.1",
    change: {},
  });
  const rows = async (table: string, where: string, params: unknown[]) =>
    (await sql.query(`SELECT * FROM "${ns.schema}".${table} WHERE ${where}`, params)).rows;

  it("reads by id, then writes a record and an audit record in one statement, kept", async () => {
    const a = api("first");
    await store.transaction((tx) => tx.put("apis", a));
    const perm = `perm_opt_${++n}`;
    const out = await store.transaction(async (tx) => {
      const read = await tx.get("apis", a.id);
      await tx.put("permissions", permissionOf(read, perm));
      await tx.appendAudit(event(`aud_${perm}`));
      return read?.name;
    }, OPTIMISTIC);
    expect(out).toBe("first");
    expect((await store.direct.get("permissions", perm))?.name).toBe("first");
    const [audit] = await rows("audit_events", "id = $1", [`aud_${perm}`]);
    expect(audit?.chain_seq).toBeDefined();
  });

  it("writes nothing when its operation throws after its writes", async () => {
    const a = api("thrown");
    await store.transaction((tx) => tx.put("apis", a));
    const perm = `perm_opt_${++n}`;
    await expect(
      store.transaction(async (tx) => {
        await tx.put("permissions", permissionOf(await tx.get("apis", a.id), perm));
        throw new Error("refused");
      }, OPTIMISTIC),
    ).rejects.toThrow("refused");
    expect(await rows("permissions", "id = $1", [perm])).toEqual([]);
  });

  it("a record changed between its read and the writes: run again with locks, the first attempt's writes not kept", async () => {
    const a = api("before");
    await store.transaction((tx) => tx.put("apis", a));
    const perm = `perm_opt_${++n}`;
    const seen: string[] = [];
    await store.transaction(async (tx) => {
      const read = await tx.get("apis", a.id);
      seen.push(read!.name);
      // The first attempt's read is overtaken by another instance's change.
      if (seen.length === 1) await other.transaction((o) => o.put("apis", { ...a, name: "after" }));
      await tx.put("permissions", permissionOf(read, perm));
      await tx.appendAudit(event(`aud_${perm}_${seen.length}`));
    }, OPTIMISTIC);
    expect(seen).toEqual(["before", "after"]);
    expect((await store.direct.get("permissions", perm))?.name).toBe("after");
    // The first attempt's audit record was not written, the second's was.
    expect(await rows("audit_events", "id = $1", [`aud_${perm}_1`])).toEqual([]);
    expect(await rows("audit_events", "id = $1", [`aud_${perm}_2`])).toHaveLength(1);
  });

  it("a record deleted, or one absent and then created, between the read and the writes: run again", async () => {
    const gone = api("to delete");
    await store.transaction((tx) => tx.put("apis", gone));
    const seen: Array<string | undefined> = [];
    const perm1 = `perm_opt_${++n}`;
    await store.transaction(async (tx) => {
      const read = await tx.get("apis", gone.id);
      seen.push(read?.name);
      if (seen.length === 1) await other.transaction((o) => o.delete("apis", gone.id));
      await tx.put("permissions", permissionOf(read, perm1));
    }, OPTIMISTIC);
    expect(seen).toEqual(["to delete", undefined]);
    expect((await store.direct.get("permissions", perm1))?.name).toBe("no api");

    const late = api("created meanwhile");
    const perm2 = `perm_opt_${++n}`;
    seen.length = 0;
    await store.transaction(async (tx) => {
      const read = await tx.get("apis", late.id);
      seen.push(read?.name);
      if (seen.length === 1) await other.transaction((o) => o.put("apis", late));
      await tx.put("permissions", permissionOf(read, perm2));
    }, OPTIMISTIC);
    expect(seen).toEqual([undefined, "created meanwhile"]);
    expect((await store.direct.get("permissions", perm2))?.name).toBe("created meanwhile");
  });

  it("a stale copy in the record cache: the check finds the row changed, the operation runs again and sees it", async () => {
    const a = api("cached");
    await store.transaction((tx) => tx.put("apis", a));
    expect((await store.direct.get("apis", a.id))?.name).toBe("cached");
    // Changed behind the caches' back: no announcement, so the store keeps its copy.
    await sql.query(`UPDATE "${ns.schema}".apis SET data = jsonb_set(data, '{name}', '"by hand"') WHERE id = $1`, [a.id]);
    expect((await store.direct.get("apis", a.id))?.name).toBe("cached");
    const perm = `perm_opt_${++n}`;
    const seen: string[] = [];
    await store.transaction(async (tx) => {
      const read = await tx.get("apis", a.id);
      seen.push(read!.name);
      await tx.put("permissions", permissionOf(read, perm));
    }, OPTIMISTIC);
    expect(seen).toEqual(["cached", "by hand"]);
    expect((await store.direct.get("permissions", perm))?.name).toBe("by hand");
  });

  it("a call it cannot defer (a lookup by name, a read after a write) runs the operation again as a transaction", async () => {
    const a = api("lookup");
    await store.transaction((tx) => tx.put("apis", a));
    for (const [what, steps] of [
      ["find", async (tx: StorageTx) => (await tx.find("permissions", "ws_opt", "slug", "nothing")).length],
      [
        "a read after a write",
        async (tx: StorageTx) => {
          await tx.put("permissions", permissionOf(a, `perm_opt_${++n}`));
          return (await tx.get("apis", a.id)) ? 1 : 0;
        },
      ],
    ] as const) {
      let runs = 0;
      const perm = `perm_opt_${++n}`;
      const out = await store.transaction(async (tx) => {
        runs++;
        const result = await steps(tx);
        await tx.put("permissions", permissionOf(await tx.get("apis", a.id), perm));
        return result;
      }, OPTIMISTIC);
      expect({ what, runs, kept: (await store.direct.get("permissions", perm))?.name }).toEqual({ what, runs: 2, kept: "lookup" });
      expect(out).toBe(what === "find" ? 0 : 1);
    }
  });

  it("a change to a record others keep is announced: another instance's copy is forgotten before it answers", async () => {
    const a = api("kept");
    await store.transaction((tx) => tx.put("apis", a));
    const records = await listenToRecords(ns.redisPrefix);
    try {
      // Kept by the other instance's record cache, read outside a transaction.
      expect((await other.direct.get("apis", a.id))?.name).toBe("kept");
      const heard = records.nextMessage();
      await store.transaction(async (tx) => {
        const read = await tx.get("apis", a.id);
        await tx.put("apis", { ...read!, name: "renamed" });
      }, OPTIMISTIC);
      // Announced before the transaction returned: heard here, and by the other instance on its own
      // connection at the same moment (one PostgreSQL round trip more lets it handle it).
      await heard;
      await sql.query("SELECT 1");
      expect((await other.direct.get("apis", a.id))?.name).toBe("renamed");
    } finally {
      records.close();
    }
  });

  it("sends one workspace's audit appends two at a time: the others wait in the service, not on the chain head", async () => {
    const a = api("turns");
    await store.transaction((tx) => tx.put("apis", a));
    const write = (id: string) =>
      store.transaction(async (tx) => {
        await tx.get("apis", a.id);
        await tx.appendAudit(event(id));
      }, OPTIMISTIC);
    const ids = Array.from({ length: 6 }, (_, i) => `aud_turns_${++n}_${i}`);
    await write(ids[0]!); // the workspace's chain has its head
    /** The store's statements waiting for a lock on this schema's chain head. */
    const waiting = async () =>
      Number(
        (
          await sql.query<{ n: string }>(
            `SELECT count(*) AS n FROM pg_stat_activity
             WHERE state = 'active' AND wait_event_type = 'Lock' AND query LIKE '%audit_chain%' AND query LIKE '%' || $1 || '%'`,
            [ns.schema],
          )
        ).rows[0]!.n,
      );
    const holder = new pg.Client({ connectionString: POSTGRES_URL });
    await holder.connect();
    let writes: Array<Promise<void>> = [];
    try {
      await holder.query("BEGIN");
      await holder.query(`SELECT 1 FROM "${ns.schema}".audit_chain WHERE workspace_id = 'ws_opt' FOR UPDATE`);
      writes = ids.slice(1).map(write);
      await expect.poll(waiting, { timeout: 30_000, interval: 50 }).toBe(2);
      // The other three were not sent: none joins the two while the head stays locked.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await waiting()).toBe(2);
    } finally {
      await holder.query("COMMIT");
      await holder.end();
    }
    await Promise.all(writes);
    // Every one chained, one after another.
    const chained = await rows("audit_events", "id = ANY($1) ORDER BY chain_seq", [ids]);
    expect(chained.map((r) => r.id).sort()).toEqual([...ids].sort());
    const seqs = chained.map((r) => Number(r.chain_seq));
    expect(seqs).toEqual(seqs.map((_, i) => seqs[0]! + i));
    const verdicts = await verifyStoredAudit(store as AuditChainSource);
    expect(verdicts.filter((v) => v.problem !== undefined)).toEqual([]);
  });

  it("keys.createKey racing the deletion of its API leaves no key of it; the audit chain stays one line", async () => {
    const svc = await startLocalKeyService({ storage: store, logger: silentLogger });
    try {
      const call = makeCall(svc.baseUrl, svc.rootKey);
      const created = await call("apis.createApi", { name: "raced" });
      expect(created.status).toBe(200);
      const apiId = created.body.data.apiId as string;
      const creates = Array.from({ length: 40 }, () => call("keys.createKey", { apiId }));
      const deleted = call("apis.deleteApi", { apiId });
      const statuses = (await Promise.all([...creates, deleted])).map((r) => r.status);
      // Each createKey made its key before the API went (and the deletion took it), or found none.
      expect(statuses.every((s) => s === 200 || s === 404)).toBe(true);
      expect(statuses.at(-1)).toBe(200);
      expect(await rows("keys", "api_id = $1", [apiId])).toEqual([]);
      // Concurrent optimistic appends kept the workspace's chain one line.
      const verdicts = await verifyStoredAudit(store as AuditChainSource);
      expect(verdicts.length).toBeGreaterThan(0);
      expect(verdicts.filter((v) => v.problem !== undefined)).toEqual([]);
    } finally {
      await svc.close();
    }
  });
});
