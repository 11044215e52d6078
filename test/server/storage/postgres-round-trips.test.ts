// The PostgreSQL statements a service instance sends per call once its record cache is warm: the
// CPU a call costs follows its round trips (docs/scale.md), so each one here is a budget. Against
// a real PostgreSQL and Redis; the statements are those the driver is given (counted, not changed).
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { silentLogger } from "keyguard";
import {
  postgresStorage,
  startLocalKeyService,
  type PostgresStorageOptions,
  type RunningLocalKeyService,
  type Storage,
} from "keyguard/server";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";
import { makeCall, type Call } from "../helpers";

const skip = await postgresRedisSkipReason("the PostgreSQL statements of a call");

/**
 * What a statement is, by its first words and the table it names. Left out, as they run in the
 * background on timers and can land inside any counted window: the verification events' writes and
 * the webhook dispatcher's claim of due messages (an `UPDATE` of the outbox; a message written by a
 * call is an `INSERT` and stays counted).
 */
function kindOf(text: string): string | undefined {
  const t = text.replace(/\s+/g, " ").trim();
  if (/verification_events|verification_rollup|key_verifications/.test(t)) return undefined;
  if (t.startsWith("UPDATE") && /webhook_outbox/.test(t)) return undefined;
  if (t === "BEGIN" || t === "COMMIT") return t;
  // An optimistic transaction's one statement: the check of what it read, then the tables it writes.
  if (t.startsWith("WITH g AS ( SELECT") || t.startsWith("WITH g AS (SELECT")) {
    return `check, then write ${[...new Set([...t.matchAll(/INSERT INTO "[^"]+"\.(\w+)/g)].map((m) => m[1]))].join(", ")}`;
  }
  // A record's read names its table as `r` (its links come along in subqueries).
  const table = (/FROM "[^"]+"\.(\w+) r\b/.exec(t) ?? /(?:FROM|INTO|UPDATE) "[^"]+"\.(\w+)/.exec(t))?.[1] ?? "?";
  const verb = t.startsWith("WITH wk AS ( INSERT") ? "INSERT" : t.split(" ")[0]!;
  return `${verb} ${table}${t.includes("FOR SHARE") ? " FOR SHARE" : t.includes("FOR UPDATE") ? " FOR UPDATE" : ""}`;
}

describe.skipIf(skip !== undefined)("the PostgreSQL statements of a call, record cache warm", () => {
  const ns = isolatedNamespace();
  let storage: Storage;
  let svc: RunningLocalKeyService;
  let call: Call;

  beforeAll(async () => {
    // The record cache kept for the whole file: with its default of 10 s, a busy machine let the
    // root key expire between the warm-up and the call counted, and the count saw its read.
    storage = await postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, recordCacheTtlMs: 3_600_000 });
    svc = await startLocalKeyService({ storage, logger: silentLogger });
    call = makeCall(svc.baseUrl, svc.rootKey);
  });
  afterAll(async () => {
    await svc?.close();
    await storage?.close();
    await ns.drop();
  });

  /** The kinds of the statements `fn` sent, in order. */
  async function statementsOf(fn: () => Promise<unknown>): Promise<string[]> {
    const spy = vi.spyOn(pg.Client.prototype, "query");
    try {
      await fn();
      return spy.mock.calls.flatMap(([q]) => kindOf(typeof q === "string" ? q : (q as { text: string }).text) ?? []);
    } finally {
      spy.mockRestore();
    }
  }

  const createKey = async (body: object = {}) => {
    const res = await call("keys.createKey", { apiId: svc.apiId, ...body });
    expect(res.status).toBe(200);
    return res.body.data as { keyId: string; key: string };
  };
  const verify = async (key: string) => {
    const res = await call("keys.verifyKey", { key });
    expect(res.status).toBe(200);
    expect(res.body.data.valid).toBe(true);
  };

  it("createKey: one statement that checks the API and writes the key and its audit record; the root key, the API and the workspace's webhook endpoints come from the cache", async () => {
    await createKey();
    expect(await statementsOf(() => createKey())).toEqual([
      // The API as the cache kept it (its row's data, locked FOR SHARE until the statement ends),
      // the key with its links, the audit record at the end of its workspace's chain (the head
      // locked and moved, the record hashed after it and written).
      "check, then write keys, key_permissions, key_roles, audit_chain, audit_events",
    ]);
  });

  it("createApi: one statement, the API and its audit record", async () => {
    const res = await call("apis.createApi", { name: "counted" });
    expect(res.status).toBe(200);
    // The first API's announcement empties the record cache of this instance too (a change to an
    // API does so), so the root key and the webhook endpoints may be read again first.
    const kinds = await statementsOf(() => call("apis.createApi", { name: "counted" }));
    expect(kinds.filter((k) => k !== "SELECT root_keys" && k !== "SELECT meta")).toEqual([
      "check, then write apis, audit_chain, audit_events",
    ]);
  });

  it("createKey naming permissions: a transaction, as the permissions are looked up by name", async () => {
    await createKey({ permissions: ["docs.read"] });
    const kinds = await statementsOf(() => createKey({ permissions: ["docs.read"] }));
    // From BEGIN on (the root key may be read again first: the permission created above was announced).
    const inTransaction = kinds.slice(kinds.indexOf("BEGIN"));
    expect(inTransaction.slice(0, 2)).toEqual(["BEGIN", "SELECT apis FOR SHARE"]);
    expect(inTransaction.slice(-3)).toEqual(["INSERT keys", "WITH audit_chain", "COMMIT"]);
    expect(kinds.filter((k) => k.startsWith("check"))).toEqual([]);
  });

  /** Another instance on the same schema, its store opened with `options` besides; closed after `fn`. */
  async function withInstance(options: Partial<PostgresStorageOptions>, fn: (call: Call) => Promise<void>): Promise<void> {
    const storage = await postgresStorage({
      postgres: POSTGRES_URL,
      redis: REDIS_URL,
      schema: ns.schema,
      recordCacheTtlMs: 3_600_000,
      ...options,
    });
    const other = await startLocalKeyService({ storage, rootKey: svc.rootKey, logger: silentLogger });
    try {
      await fn(makeCall(other.baseUrl, svc.rootKey));
    } finally {
      await other.close();
      await storage.close();
    }
  }

  it("createKey with optimisticWrites off: the transaction, the API, the key, its audit record", async () => {
    await withInstance({ optimisticWrites: false }, async (callThere) => {
      const createThere = async () => expect((await callThere("keys.createKey", { apiId: svc.apiId })).status).toBe(200);
      await createThere();
      expect(await statementsOf(createThere)).toEqual(["BEGIN", "SELECT apis FOR SHARE", "INSERT keys", "WITH audit_chain", "COMMIT"]);
    });
  });

  it("verifyKey of a kept key without credits: no statement; with credits: the charge alone", async () => {
    const plain = await createKey();
    const paid = await createKey({ credits: { remaining: 10 } });
    await verify(plain.key);
    await verify(paid.key);
    expect(await statementsOf(() => verify(plain.key))).toEqual([]);
    expect(await statementsOf(() => verify(paid.key))).toEqual(["UPDATE keys"]);
  });

  it("verifyKey with cacheKeys off: the lookup; with credits: the lookup and the charge", async () => {
    await withInstance({ cacheKeys: false }, async (callThere) => {
      const verifyThere = async (key: string) => expect((await callThere("keys.verifyKey", { key })).body.data.valid).toBe(true);
      const plain = await createKey();
      const paid = await createKey({ credits: { remaining: 10 } });
      await verifyThere(plain.key);
      await verifyThere(paid.key);
      expect(await statementsOf(() => verifyThere(plain.key))).toEqual(["SELECT keys"]);
      expect(await statementsOf(() => verifyThere(paid.key))).toEqual(["SELECT keys", "UPDATE keys"]);
    });
  });
});
