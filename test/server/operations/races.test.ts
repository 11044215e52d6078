// Creations and changes racing the deletion of what they hang on, over real HTTP: keys created and
// changed while their API is deleted, a key changed while it is deleted, permissions and roles
// granted while they are deleted, keys joined to an identity while it is deleted. After each race
// nothing of the deleted record is left: no key of it verifies or lists, the store holds no record
// pointing at it (read through the storage seam and, on PostgreSQL, the link rows too), and on
// PostgreSQL a second instance sharing the database and Redis (both keeping keys in their caches)
// refuses the keys as well. A service-level suite: it runs on memory, SQLite and PostgreSQL + Redis.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import { memoryStorage, postgresStorage, startLocalKeyService, type RunningLocalKeyService, type Storage } from "keyguard/server";
import { storeUnderTest } from "../../support/store-under-test";
import { makeCall, type Call, type CallResult } from "../helpers";

const ON_POSTGRES = process.env.KEYGUARD_TEST_STORE === "postgres";
const ROOT_KEY = `root_${randomBytes(24).toString("hex")}`;
/** Rounds of each race. */
const ROUNDS = 3;
/** The deletion is sent once this many of the racing writes were answered: the rest are in flight. */
const DELETE_AFTER = 3;

let store: Storage;
let instances: RunningLocalKeyService[] = [];
/** The instance every write goes to. */
let a: Call;
/** Every instance: one on memory and SQLite, two on PostgreSQL. */
let everyInstance: Call[] = [];
let workspaceId: string;
let pgClient: pg.Client | undefined;
let schema: string | undefined;
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  if (ON_POSTGRES) {
    const { POSTGRES_URL, REDIS_URL, isolatedNamespace } = await import("../../support/postgres-redis");
    const ns = isolatedNamespace();
    schema = ns.schema;
    // Both keep keys in their record cache (`cacheKeys`, the same on every instance of a fleet):
    // a key the second instance verified before the race is refused there only once the first
    // instance's deletion reached it through Redis. A generous statement limit: writes queue on
    // one row's lock (every join to one identity), which on a busy machine takes longer than the
    // default 5 s; this suite checks what happens, not how fast.
    const open = () =>
      postgresStorage({
        postgres: POSTGRES_URL,
        redis: REDIS_URL,
        schema: ns.schema,
        redisPrefix: ns.redisPrefix,
        cacheKeys: true,
        timeoutMs: 30_000,
      });
    store = await open();
    const second = await open();
    closers.push(
      () => second.close(),
      () => store.close(),
      () => ns.drop(),
    );
    instances = [
      await startLocalKeyService({ storage: store, rootKey: ROOT_KEY, logger: silentLogger }),
      await startLocalKeyService({ storage: second, rootKey: ROOT_KEY, logger: silentLogger }),
    ];
    pgClient = new pg.Client({ connectionString: POSTGRES_URL });
    await pgClient.connect();
  } else {
    store = (await storeUnderTest()) ?? memoryStorage();
    closers.push(() => store.close());
    instances = [await startLocalKeyService({ storage: store, rootKey: ROOT_KEY, logger: silentLogger })];
  }
  everyInstance = instances.map((s) => makeCall(s.baseUrl, ROOT_KEY));
  a = everyInstance[0]!;
  workspaceId = instances[0]!.workspaceId;
});

afterAll(async () => {
  await pgClient?.end().catch(() => undefined);
  await Promise.all(instances.map((s) => s.close()));
  for (const close of closers) await close();
});

/** Calls `op` and expects 200; its `data`. */
async function ok(op: string, body: Record<string, unknown>): Promise<CallResult["body"]> {
  const res = await a(op, body);
  if (res.status !== 200) throw new Error(`${op} answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.data;
}

/** A request: the operation and its body. */
type Write = readonly [op: string, body: Record<string, unknown>];

/** The lists' items taken in turn, one of each list at a time. */
function interleave<T>(...lists: ReadonlyArray<readonly T[]>): T[] {
  const out: T[] = [];
  for (let i = 0; i < Math.max(...lists.map((l) => l.length)); i++) for (const l of lists) if (i < l.length) out.push(l[i]!);
  return out;
}

/**
 * Sends two thirds of the writes at once, the deletions once `DELETE_AFTER` of them were answered
 * (or all settled, should they fail), and the last third right after the deletions. Each write may
 * succeed or be refused as not found, never otherwise; each deletion succeeds. The answers, with
 * their requests.
 */
async function race(writes: readonly Write[], deletions: readonly Write[]): Promise<Array<{ op: string; res: CallResult }>> {
  const early = Math.ceil((writes.length * 2) / 3);
  let answered = 0;
  let release!: () => void;
  const enough = new Promise<void>((resolve) => (release = resolve));
  const sent = writes.slice(0, early).map(([op, body]) =>
    a(op, body).then((res) => {
      if (++answered === DELETE_AFTER) release();
      return res;
    }),
  );
  await Promise.race([enough, Promise.allSettled(sent)]);
  const deleted = Promise.all(deletions.map(([op, body]) => a(op, body)));
  sent.push(...writes.slice(early).map(([op, body]) => a(op, body)));
  const results = await Promise.all(sent);
  for (const d of await deleted) expect(d.status, JSON.stringify(d.body)).toBe(200);
  for (const r of results) expect([200, 404], JSON.stringify(r.body)).toContain(r.status);
  return results.map((res, i) => ({ op: writes[i]![0], res }));
}

/** Expects `op` with `body` to be refused with a 404 of this type (e.g. `api_not_found`). */
async function refused(op: string, body: Record<string, unknown>, type: string): Promise<void> {
  const res = await a(op, body);
  expect(res.status, JSON.stringify(res.body)).toBe(404);
  expect(res.body.error.type).toMatch(new RegExp(`${type}$`));
}

/** Dangling references found so far, each reported once (a test reports only what its races left). */
const seen = new Set<string>();

/**
 * What the store holds that points at a record that does not exist and was not reported before,
 * counted by kind: keys of a missing API or identity, keys and roles naming a missing permission
 * or role (read through the seam, in one transaction), and on PostgreSQL the link rows the seam
 * cannot see (a key's or role's permissions and roles whose key or role is gone).
 */
async function dangling(round: number): Promise<string[]> {
  const found = await store.transaction(async (tx) => {
    const [apis, identities, permissions, roles, keys] = await Promise.all([
      tx.list("apis", workspaceId),
      tx.list("identities", workspaceId),
      tx.list("permissions", workspaceId),
      tx.list("roles", workspaceId),
      tx.list("keys", workspaceId),
    ]);
    const ids = (records: Array<{ id: string }>) => new Set(records.map((r) => r.id));
    const [apiIds, identityIds, permissionIds, roleIds] = [ids(apis), ids(identities), ids(permissions), ids(roles)];
    const out: Array<[kind: string, id: string]> = [];
    for (const k of keys) {
      if (!apiIds.has(k.apiId)) out.push(["keys of a deleted API", k.id]);
      if (k.identityId !== undefined && !identityIds.has(k.identityId)) out.push(["keys of a deleted identity", k.id]);
      for (const p of k.permissionIds) if (!permissionIds.has(p)) out.push(["keys with a deleted permission", `${k.id}/${p}`]);
      for (const r of k.roleIds) if (!roleIds.has(r)) out.push(["keys with a deleted role", `${k.id}/${r}`]);
    }
    for (const r of roles)
      for (const p of r.permissionIds) if (!permissionIds.has(p)) out.push(["roles with a deleted permission", `${r.id}/${p}`]);
    return out;
  });
  if (pgClient && schema) {
    const s = `"${schema}"`;
    const links: Array<[string, string, string, string, string]> = [
      ["key_permissions", "key_id", "keys", "permission_id", "permissions"],
      ["key_roles", "key_id", "keys", "role_id", "roles"],
      ["role_permissions", "role_id", "roles", "permission_id", "permissions"],
    ];
    for (const [table, owner, owners, target, targets] of links) {
      const { rows } = await pgClient.query<{ owner: string; target: string; gone: string }>(
        `SELECT l.${owner} AS owner, l.${target} AS target,
           CASE WHEN NOT EXISTS (SELECT 1 FROM ${s}.${owners} o WHERE o.id = l.${owner}) THEN '${owners}' ELSE '${targets}' END AS gone
         FROM ${s}.${table} l
         WHERE NOT EXISTS (SELECT 1 FROM ${s}.${owners} o WHERE o.id = l.${owner})
            OR NOT EXISTS (SELECT 1 FROM ${s}.${targets} t WHERE t.id = l.${target})`,
      );
      for (const r of rows) found.push([`${table} rows of deleted ${r.gone}`, `${r.owner}/${r.target}`]);
    }
  }
  const counts = new Map<string, number>();
  for (const [kind, id] of found) {
    if (seen.has(`${kind}:${id}`)) continue;
    seen.add(`${kind}:${id}`);
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return [...counts].map(([kind, n]) => `round ${round}: ${n} ${kind}`);
}

/** Every instance's verification codes for `key`. */
async function verifiedEverywhere(key: string): Promise<Array<{ code: string; identity?: { id: string } }>> {
  return Promise.all(
    everyInstance.map(async (call) => {
      const res = await call("keys.verifyKey", { key });
      expect(res.status).toBe(200);
      return res.body.data;
    }),
  );
}

/** Verifies every key on every instance, so that an instance keeping keys holds them before the race. */
async function warm(keys: readonly string[]): Promise<void> {
  for (const key of keys) for (const v of await verifiedEverywhere(key)) expect(v.code).toBe("VALID");
}

describe("creations and changes racing the deletion of what they hang on", () => {
  let roleName: string;
  beforeAll(async () => {
    roleName = `reader-${randomBytes(3).toString("hex")}`;
    await ok("permissions.createRole", { name: roleName, permissions: ["race.read"] });
  });

  it("keys created and changed while their API is deleted: none is left, none verifies, none lists", async () => {
    const problems: string[] = [];
    let acknowledged = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const { apiId } = await ok("apis.createApi", { name: `racing-${round}` });
      const existing: Array<{ keyId: string; key: string }> = [];
      for (let i = 0; i < 6; i++) existing.push(await ok("keys.createKey", { apiId, permissions: ["race.old"] }));
      await warm(existing.map((k) => k.key));
      const bodies = [
        {},
        { permissions: ["race.write"] },
        { roles: [roleName] },
        { externalId: `owner-${round}` },
        { name: "n", meta: { m: 1 } },
      ];
      const creations = Array.from({ length: 40 }, (_, i): Write => ["keys.createKey", { apiId, ...bodies[i % bodies.length] }]);
      const updates = existing.flatMap(({ keyId }): Write[] => [
        ["keys.updateKey", { keyId, name: "renamed", externalId: `owner-${round}` }],
        ["keys.addPermissions", { keyId, permissions: ["race.more"] }],
        ["keys.setRoles", { keyId, roles: [roleName] }],
      ]);
      const results = await race(interleave(creations, updates), [["apis.deleteApi", { apiId }]]);
      for (const { op, res } of results) {
        if (res.status === 404) expect(res.body.error.type).toMatch(op === "keys.createKey" ? /api_not_found$/ : /key_not_found$/);
      }
      const created = results.filter((r) => r.op === "keys.createKey" && r.res.status === 200).map((r) => r.res.body.data);
      acknowledged += created.length;
      const keys: Array<{ keyId: string; key: string }> = [...existing, ...created];
      const verified = await Promise.all(keys.map(({ key }) => verifiedEverywhere(key)));
      const verifying = verified.filter((codes) => codes.some((v) => v.code !== "NOT_FOUND")).length;
      const found = (await Promise.all(keys.map(({ keyId }) => a("keys.getKey", { keyId })))).filter((r) => r.status !== 404).length;
      const listed = await a("apis.listKeys", { apiId });
      const inStore = await store.transaction((tx) => tx.find("keys", workspaceId, "apiId", apiId));
      if (verifying > 0) problems.push(`round ${round}: ${verifying} of ${keys.length} keys still verify`);
      if (found > 0) problems.push(`round ${round}: getKey finds ${found} of ${keys.length} keys`);
      if (listed.status !== 404) problems.push(`round ${round}: listKeys answers ${listed.status}`);
      if (inStore.length > 0) problems.push(`round ${round}: ${inStore.length} key records of the deleted API`);
      problems.push(...(await dangling(round)));
      await refused("keys.createKey", { apiId }, "api_not_found");
    }
    // The race was one: creations went through before the deletion.
    expect(acknowledged).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });

  it("a key changed while it is deleted: it is gone, with its links, on every instance", async () => {
    const problems: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const { keyId, key } = await ok("keys.createKey", { apiId: instances[0]!.apiId, permissions: ["race.k"], roles: [roleName] });
      await warm([key]);
      const changes = Array.from({ length: 5 }, (_, i): Write[] => [
        ["keys.updateKey", { keyId, name: `n${i}`, externalId: `changer-${round}` }],
        ["keys.addPermissions", { keyId, permissions: [`race.k${i}`] }],
        ["keys.setPermissions", { keyId, permissions: ["race.k", `race.s${i}`] }],
        ["keys.addRoles", { keyId, roles: [roleName] }],
        ["keys.setRoles", { keyId, roles: [roleName] }],
      ]).flat();
      await race(changes, [["keys.deleteKey", { keyId }]]);
      if ((await verifiedEverywhere(key)).some((v) => v.code !== "NOT_FOUND")) problems.push(`round ${round}: the key still verifies`);
      if ((await a("keys.getKey", { keyId })).status !== 404) problems.push(`round ${round}: getKey finds the key`);
      if ((await store.transaction((tx) => tx.get("keys", keyId))) !== undefined) problems.push(`round ${round}: the key's record is left`);
      problems.push(...(await dangling(round)));
      await refused("keys.updateKey", { keyId, name: "late" }, "key_not_found");
    }
    expect(problems).toEqual([]);
  });

  it("permissions and roles granted while they are deleted: nothing names them afterwards", async () => {
    const problems: string[] = [];
    const apiId = instances[0]!.apiId;
    for (let round = 0; round < ROUNDS; round++) {
      const slug = `race.granted${round}`;
      const role = `granted-${round}`;
      const { permissionId } = await ok("permissions.createPermission", { name: slug, slug });
      const { roleId } = await ok("permissions.createRole", { name: role, permissions: [slug] });
      const keys: Array<{ keyId: string; key: string }> = [];
      for (let i = 0; i < 4; i++) keys.push(await ok("keys.createKey", { apiId }));
      const grants = interleave(
        keys.flatMap(({ keyId }): Write[] => [
          ["keys.addPermissions", { keyId, permissions: [slug] }],
          ["keys.setPermissions", { keyId, permissions: [slug, "race.other"] }],
          ["keys.addRoles", { keyId, roles: [role] }],
          ["keys.setRoles", { keyId, roles: [role] }],
        ]),
        Array.from({ length: 8 }, (): Write => ["keys.createKey", { apiId, permissions: [slug], roles: [role] }]),
        Array.from({ length: 4 }, (_, i): Write => ["permissions.createRole", { name: `${role}-${i}`, permissions: [slug] }]),
      );
      const results = await race(grants, [
        ["permissions.deletePermission", { permission: permissionId }],
        ["permissions.deleteRole", { role: roleId }],
      ]);
      for (const { res } of results) if (res.status === 404) expect(res.body.error.type).toMatch(/role_not_found$/);
      problems.push(...(await dangling(round)));
      // No key holds the deleted role.
      for (const { keyId } of keys) {
        const info = await a("keys.getKey", { keyId });
        if ((info.body.data.roles ?? []).includes(role)) problems.push(`round ${round}: key ${keyId} still holds the deleted role`);
      }
      await refused("permissions.getRole", { role: roleId }, "role_not_found");
      await refused("permissions.getPermission", { permission: permissionId }, "permission_not_found");
      await refused("keys.createKey", { apiId, roles: [role] }, "role_not_found");
    }
    expect(problems).toEqual([]);
  });

  it("keys joined to an identity while it is deleted: none keeps it, on any instance", async () => {
    const problems: string[] = [];
    const apiId = instances[0]!.apiId;
    for (let round = 0; round < ROUNDS; round++) {
      const externalId = `joined-${round}`;
      const { identityId } = await ok("identities.createIdentity", { externalId });
      const keys: Array<{ keyId: string; key: string }> = [];
      for (let i = 0; i < 4; i++) keys.push(await ok("keys.createKey", { apiId, externalId }));
      // Keys without an identity yet, joined to it by updateKey during the race. (On PostgreSQL,
      // joining again a key that has the identity deadlocks with its deletion, which holds the
      // identity and waits for the key: PostgreSQL aborts one and the store runs it again, a
      // request of many such at once may run out of attempts.)
      const joining: Array<{ keyId: string; key: string }> = [];
      for (let i = 0; i < 4; i++) joining.push(await ok("keys.createKey", { apiId }));
      keys.push(...joining);
      await warm(keys.map((k) => k.key));
      const joins = interleave(
        Array.from({ length: 12 }, (): Write => ["keys.createKey", { apiId, externalId }]),
        joining.map(({ keyId }): Write => ["keys.updateKey", { keyId, externalId, name: "joined" }]),
        Array.from({ length: 4 }, (_, i): Write => ["identities.updateIdentity", { identity: identityId, meta: { i } }]),
      );
      const results = await race(joins, [["identities.deleteIdentity", { identity: identityId }]]);
      for (const { op, res } of results) {
        if (res.status === 404) expect(op).toBe("identities.updateIdentity");
        if (op === "keys.createKey") keys.push(res.body.data);
      }
      const verified = (await Promise.all(keys.map(({ key }) => verifiedEverywhere(key)))).flat();
      const joined = verified.filter((v) => v.identity?.id === identityId).length;
      if (joined > 0) problems.push(`round ${round}: ${joined} verifications name the deleted identity`);
      problems.push(...(await dangling(round)));
      await refused("identities.getIdentity", { identity: identityId }, "identity_not_found");
      await refused("identities.updateIdentity", { identity: identityId, meta: {} }, "identity_not_found");
    }
    expect(problems).toEqual([]);
  });
});
