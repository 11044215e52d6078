// Three service instances on one PostgreSQL + Redis, as behind a load balancer: they share one
// bootstrap, charge credits and rate limits exactly across instances, and see each other's
// changes: keys, root keys (their expiry and allow-list too), roles and permissions (kept in each
// instance) once the change's answer returned and the instances' Redis channel delivered its
// message (test/server/storage/postgres-verify-cache.test.ts measures how soon).
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import { postgresStorage, startLocalKeyService, type RunningLocalKeyService, type Storage } from "keyguard/server";
import {
  POSTGRES_URL,
  REDIS_URL,
  isolatedNamespace,
  listenToRecords,
  postgresRedisSkipReason,
  type RecordsChannel,
} from "../../support/postgres-redis";
import { makeCall, type Call } from "../helpers";

const skip = await postgresRedisSkipReason("3 service instances on one PostgreSQL + Redis");
const ROOT_KEY = `root_instances${Date.now()}_4f1c9e27b8a35d60e2b7c41f9a0d8e36`;
/** Half-way through a minute: a 60 s window never rolls over during a test. */
const NOW = Date.UTC(2030, 0, 1, 0, 0, 30);

describe.skipIf(skip !== undefined)("3 service instances on one PostgreSQL + Redis", () => {
  const ns = isolatedNamespace();
  let instances: RunningLocalKeyService[] = [];
  let calls: Call[] = [];
  const on = (i: number): Call => calls[i % calls.length]!;
  let records: RecordsChannel | undefined;
  const nextMessage = () => records!.nextMessage();
  /** Rows right after the three started, before any test adds its own (tests run in any order). */
  let rowsAtStart: Record<"workspaces" | "apis" | "root_keys", number>;

  beforeAll(async () => {
    // Started together: the bootstrap must be created once, not three times.
    instances = await Promise.all(
      [0, 1, 2].map(() =>
        startLocalKeyService({
          postgres: POSTGRES_URL,
          redis: REDIS_URL,
          postgresSchema: ns.schema,
          rootKey: ROOT_KEY,
          now: () => NOW,
          logger: silentLogger,
        }),
      ),
    );
    calls = instances.map((s) => makeCall(s.baseUrl, ROOT_KEY));
    records = await listenToRecords(ns.redisPrefix);
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      const count = async (table: string) => Number((await client.query(`SELECT count(*) AS n FROM "${ns.schema}".${table}`)).rows[0].n);
      rowsAtStart = { workspaces: await count("workspaces"), apis: await count("apis"), root_keys: await count("root_keys") };
    } finally {
      await client.end();
    }
  });
  afterAll(async () => {
    records?.close();
    await Promise.all(instances.map((s) => s.close()));
    await ns.drop();
  });

  async function createKey(body: Record<string, unknown> = {}): Promise<{ keyId: string; key: string }> {
    const res = await on(0)("keys.createKey", { apiId: instances[0]!.apiId, ...body });
    expect(res.status).toBe(200);
    return res.body.data;
  }

  /** `n` concurrent verifications, spread round-robin over the instances; the codes answered. */
  async function verifyConcurrently(key: string, n: number): Promise<Record<string, number>> {
    const results = await Promise.all(Array.from({ length: n }, (_, i) => on(i)("keys.verifyKey", { key })));
    const codes: Record<string, number> = {};
    for (const r of results) {
      expect(r.status).toBe(200);
      codes[r.body.data.code] = (codes[r.body.data.code] ?? 0) + 1;
    }
    return codes;
  }

  it("instances started together share one workspace, API and root key", async () => {
    expect(new Set(instances.map((s) => s.workspaceId)).size).toBe(1);
    expect(new Set(instances.map((s) => s.apiId)).size).toBe(1);
    expect(rowsAtStart).toEqual({ workspaces: 1, apis: 1, root_keys: 1 });
  });

  it("a key with 40 credits gives exactly 40 VALID of 200 concurrent verifications over 3 instances", async () => {
    const { key, keyId } = await createKey({ credits: { remaining: 40 } });
    expect(await verifyConcurrently(key, 200)).toEqual({ VALID: 40, USAGE_EXCEEDED: 160 });
    const got = await on(2)("keys.getKey", { keyId });
    expect(got.body.data.credits.remaining).toBe(0);
  });

  it("a 10-per-minute limit lets exactly 10 of 100 concurrent verifications through", async () => {
    const { key } = await createKey({ ratelimits: [{ name: "requests", limit: 10, duration: 60_000, autoApply: true }] });
    expect(await verifyConcurrently(key, 100)).toEqual({ VALID: 10, RATE_LIMITED: 90 });
  });

  it("a key deleted or disabled through one instance is so on the others once its message is delivered", async () => {
    const deleted = await createKey();
    const disabled = await createKey();
    for (const i of [0, 1, 2]) expect((await on(i)("keys.verifyKey", { key: deleted.key })).body.data.code).toBe("VALID");
    let heard = nextMessage();
    expect((await on(0)("keys.deleteKey", { keyId: deleted.keyId })).status).toBe(200);
    await heard;
    heard = nextMessage();
    expect((await on(1)("keys.updateKey", { keyId: disabled.keyId, enabled: false })).status).toBe(200);
    await heard;
    for (const i of [1, 2, 0]) {
      expect((await on(i)("keys.verifyKey", { key: deleted.key })).body.data.code).toBe("NOT_FOUND");
      expect((await on(i)("keys.verifyKey", { key: disabled.key })).body.data.code).toBe("DISABLED");
    }
  });

  it("a root key deleted through one instance is refused by the others once its message is delivered", async () => {
    const created = (await on(0)("rootKeys.createRootKey", { permissions: ["api.*.read_api"] })).body.data;
    // Each instance keeps the root key after using it.
    for (const i of [0, 1, 2]) expect((await on(i)("apis.getApi", { apiId: instances[0]!.apiId }, created.key)).status).toBe(200);
    const heard = nextMessage();
    expect((await on(0)("rootKeys.deleteRootKey", { keyId: created.keyId })).status).toBe(200);
    await heard;
    for (const i of [0, 1, 2]) expect((await on(i)("apis.getApi", { apiId: instances[0]!.apiId }, created.key)).status).toBe(401);
  });

  it("a root key's allow-list or expiry changed through one instance is applied by the others once its message is delivered", async () => {
    const created = (await on(0)("rootKeys.createRootKey", { permissions: ["api.*.read_api"] })).body.data;
    const use = (i: number) => on(i)("apis.getApi", { apiId: instances[0]!.apiId }, created.key);
    for (const i of [0, 1, 2]) expect((await use(i)).status).toBe(200);
    let heard = nextMessage();
    expect((await on(1)("rootKeys.updateRootKey", { keyId: created.keyId, ipWhitelist: ["203.0.113.0/24"] })).status).toBe(200);
    await heard;
    for (const i of [0, 1, 2]) expect((await use(i)).status).toBe(401);
    heard = nextMessage();
    expect((await on(2)("rootKeys.updateRootKey", { keyId: created.keyId, ipWhitelist: [], expires: NOW + 1 })).status).toBe(200);
    await heard;
    for (const i of [0, 1, 2]) expect((await use(i)).status).toBe(200);
    heard = nextMessage();
    expect((await on(0)("rootKeys.updateRootKey", { keyId: created.keyId, expires: NOW })).status).toBe(200);
    await heard;
    for (const i of [0, 1, 2]) expect((await use(i)).body.error?.detail).toBe("The provided root key has expired. Use another root key.");
  });

  it("a role's permissions changed, or a permission deleted, through one instance: the others' verifications follow", async () => {
    const role = `editor_${Date.now()}`;
    const { roleId } = (await on(0)("permissions.createRole", { name: role, permissions: ["docs.read"] })).body.data;
    const { key } = await createKey({ roles: [role], permissions: ["docs.write"] });
    const verify = (i: number, permissions: string) => on(i)("keys.verifyKey", { key, permissions });
    for (const i of [0, 1, 2]) expect((await verify(i, "docs.read AND docs.write")).body.data.code).toBe("VALID");

    let heard = nextMessage();
    expect((await on(1)("permissions.setRolePermissions", { roleId, permissions: ["docs.admin"] })).status).toBe(200);
    await heard;
    for (const i of [0, 1, 2]) {
      expect((await verify(i, "docs.read")).body.data.code).toBe("INSUFFICIENT_PERMISSIONS");
      expect((await verify(i, "docs.admin AND docs.write")).body.data.code).toBe("VALID");
    }

    heard = nextMessage();
    expect((await on(2)("permissions.deletePermission", { permission: "docs.write" })).status).toBe(200);
    await heard;
    for (const i of [0, 1, 2]) {
      const data = (await verify(i, "docs.write")).body.data;
      expect(data.code).toBe("INSUFFICIENT_PERMISSIONS");
      expect(data.permissions).toEqual(["docs.admin"]);
    }
  });
});

describe.skipIf(skip !== undefined)("2 service instances keeping keys too (cacheKeys, the default)", () => {
  const ns = isolatedNamespace();
  const rootKey = `root_cached_keys${Date.now()}`;
  let instances: RunningLocalKeyService[] = [];
  const stores: Storage[] = [];
  let calls: Call[] = [];
  let records: RecordsChannel | undefined;
  const nextMessage = () => records!.nextMessage();

  beforeAll(async () => {
    // One after the other: the first creates the bootstrap.
    for (let i = 0; i < 2; i++) {
      const storage = await postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, cacheKeys: true });
      stores.push(storage);
      instances.push(await startLocalKeyService({ storage, rootKey, now: () => NOW, logger: silentLogger }));
    }
    calls = instances.map((s) => makeCall(s.baseUrl, rootKey));
    records = await listenToRecords(ns.redisPrefix);
  });
  afterAll(async () => {
    records?.close();
    await Promise.all(instances.map((s) => s.close()));
    instances = [];
    // Each service closed before its store.
    await Promise.all(stores.map((s) => s.close()));
    await ns.drop();
  });

  it("a key deleted, disabled or given credits through one instance: the other follows once the message is delivered", async () => {
    const create = async () =>
      (await calls[0]!("keys.createKey", { apiId: instances[0]!.apiId })).body.data as { keyId: string; key: string };
    const deleted = await create();
    const disabled = await create();
    const paid = await create();
    const code = async (i: number, key: string) => (await calls[i]!("keys.verifyKey", { key })).body.data.code as string;
    // Each instance keeps the keys after verifying them.
    for (const i of [0, 1]) for (const k of [deleted, disabled, paid]) expect(await code(i, k.key)).toBe("VALID");

    let heard = nextMessage();
    expect((await calls[0]!("keys.deleteKey", { keyId: deleted.keyId })).status).toBe(200);
    await heard;
    heard = nextMessage();
    expect((await calls[0]!("keys.updateKey", { keyId: disabled.keyId, enabled: false })).status).toBe(200);
    await heard;
    heard = nextMessage();
    expect((await calls[0]!("keys.updateCredits", { keyId: paid.keyId, operation: "set", value: 2 })).status).toBe(200);
    await heard;
    for (const i of [1, 0]) {
      expect(await code(i, deleted.key)).toBe("NOT_FOUND");
      expect(await code(i, disabled.key)).toBe("DISABLED");
    }
    // Credits from now on, charged exactly across both instances.
    const codes = await Promise.all([0, 1, 0, 1].map((i) => code(i, paid.key)));
    expect(codes.filter((c) => c === "VALID")).toHaveLength(2);
    expect(codes.filter((c) => c === "USAGE_EXCEEDED")).toHaveLength(2);
  });
});
