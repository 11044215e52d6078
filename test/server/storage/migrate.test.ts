// `keyguard migrate`: a JSON state file of keyguard 0.1 imported once into a SQLite data file,
// through the real CLI; and what it refuses.
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ALL_ROOT_PERMISSIONS } from "../../../src/protocol/contract/root-permissions";
import type { LocalState } from "../../../src/server/records";
import { sqliteStorage } from "../../../src/server/storage/sqlite/store";
import { killChildren, run, serve } from "../../cli/cli-process";
import { makeCall } from "../helpers";

const dir = mkdtempSync(join(tmpdir(), "keyguard-migrate-"));
afterEach(killChildren);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const hash = (key: string) => createHash("sha256").update(key, "utf8").digest("base64");
const MIGRATED_KEY = "sk_migratedKey7Hq2";
const MIGRATED_ROOT_KEY = "root_migratedRoot5Zp9_4f1c9e27b8a35d60e2b7c41f9a0d8e36";

/** A state file as keyguard 0.1's `--data` wrote it (before rate-limit namespaces and overrides). */
function stateFile(): Omit<LocalState, "ratelimitNamespaces" | "ratelimitOverrides" | "portals" | "portalSessions"> {
  const ws = "ws_mig";
  return {
    version: 1,
    bootstrap: { workspaceId: ws, apiId: "api_mig" },
    workspaces: { [ws]: { id: ws, name: "default", createdAt: 1_700_000_000_000 } },
    rootKeys: {
      rk_1: {
        id: "rk_1",
        workspaceId: ws,
        hash: hash(MIGRATED_ROOT_KEY),
        permissions: [...ALL_ROOT_PERMISSIONS],
        createdAt: 1_700_000_000_000,
      },
    },
    apis: { api_mig: { id: "api_mig", workspaceId: ws, name: "default", createdAt: 1_700_000_000_001 } },
    permissions: { perm_1: { id: "perm_1", workspaceId: ws, name: "docs.read", slug: "docs.read", createdAt: 1_700_000_000_002 } },
    roles: { role_1: { id: "role_1", workspaceId: ws, name: "reader", permissionIds: ["perm_1"], createdAt: 1_700_000_000_003 } },
    identities: {
      id_1: {
        id: "id_1",
        workspaceId: ws,
        externalId: "user_42",
        meta: { plan: "pro" },
        ratelimits: [{ id: "rl_i", name: "requests", limit: 100, duration: 60_000, autoApply: true }],
        createdAt: 1_700_000_000_004,
      },
    },
    keys: {
      key_1: {
        id: "key_1",
        workspaceId: ws,
        apiId: "api_mig",
        hash: hash(MIGRATED_KEY),
        start: "sk_migr",
        prefix: "sk",
        byteLength: 16,
        name: "migrated",
        meta: { team: "a" },
        createdAt: 1_700_000_000_005,
        enabled: true,
        identityId: "id_1",
        permissionIds: ["perm_1"],
        roleIds: ["role_1"],
        credits: { remaining: 7, refill: { interval: "daily", amount: 10 }, lastRefillAt: 1_700_000_000_005 },
        ratelimits: [{ id: "rl_k", name: "burst", limit: 5, duration: 1000, autoApply: false }],
      },
    },
    windows: { "rl_k/1000": { duration: 1000, window: 1, current: 2, previous: 0, owner: "key_1" } },
  };
}

describe("keyguard migrate", () => {
  it("imports every record of a JSON state file into a new SQLite file, leaving the JSON file as it was", async () => {
    const json = join(dir, "state.json");
    const db = join(dir, "imported.db");
    const text = JSON.stringify(stateFile(), null, 2);
    writeFileSync(json, text);
    const res = await run(["migrate", json, "--data", db]);
    expect(res.stderr).toBe("");
    expect(res.status).toBe(0);
    expect(res.stdout).toContain(
      `imported ${json} into ${db}: 1 workspaces, 1 rootKeys, 1 apis, 1 permissions, 1 roles, 1 identities, 1 keys, 0 ratelimitNamespaces, 0 ratelimitOverrides, 0 portals, 0 portalSessions.`,
    );
    expect(res.stdout).toContain(`keyguard serve --data ${db}`);
    expect(readFileSync(json, "utf8")).toBe(text);

    const store = await sqliteStorage(db);
    try {
      const state = stateFile();
      for (const table of ["workspaces", "rootKeys", "apis", "permissions", "roles", "identities", "keys"] as const) {
        for (const record of Object.values(state[table])) expect(await store.direct.get(table, record.id)).toEqual(record);
      }
      expect((await store.direct.keyByHash(hash(MIGRATED_KEY)))?.id).toBe("key_1");
      expect(JSON.parse((await store.direct.getMeta("bootstrap"))!)).toEqual(state.bootstrap);
    } finally {
      await store.close();
    }
  });

  it("the migrated file serves: same API, root key and keys, credits carried over", async () => {
    const json = join(dir, "served.json");
    const db = join(dir, "served.db");
    writeFileSync(json, JSON.stringify(stateFile()));
    expect((await run(["migrate", json, "--data", db])).status).toBe(0);
    const rootKeyFile = join(dir, "root-key");
    writeFileSync(rootKeyFile, MIGRATED_ROOT_KEY, { mode: 0o600 });
    const served = await serve(["--port", "0", "--data", db, "--root-key-file", rootKeyFile]);
    expect(served.apiId).toBe("api_mig");
    const call = makeCall(served.baseUrl, MIGRATED_ROOT_KEY);
    const verified = await call("keys.verifyKey", { key: MIGRATED_KEY, permissions: "docs.read" });
    // The daily refill fell due long ago: the balance is refilled to 10, then charged.
    expect(verified.body.data).toMatchObject({
      valid: true,
      code: "VALID",
      keyId: "key_1",
      credits: 9,
      identity: { externalId: "user_42" },
    });
    expect((await call("keys.getKey", { keyId: "key_1" })).body.data).toMatchObject({
      name: "migrated",
      meta: { team: "a" },
      roles: ["reader"],
    });
  }, 60_000);

  it("refuses a database that already holds a state, and never changes it", async () => {
    const json = join(dir, "again.json");
    const db = join(dir, "again.db");
    writeFileSync(json, JSON.stringify(stateFile()));
    expect((await run(["migrate", json, "--data", db])).status).toBe(0);
    const before = readFileSync(db);
    const res = await run(["migrate", json, "--data", db]);
    expect(res.status).toBe(2);
    expect(res.stderr).toContain(
      `keyguard migrate: "${db}" already holds a state; migrate imports into a new or empty file only and never overwrites.`,
    );
    expect(readFileSync(db).equals(before)).toBe(true);
  });

  it("refuses bad arguments and bad input with a clear message", async () => {
    const json = join(dir, "ok.json");
    writeFileSync(json, JSON.stringify(stateFile()));
    const broken = join(dir, "broken.json");
    writeFileSync(broken, "{ not json");
    const partial = join(dir, "partial.json");
    const { apis: _apis, ...withoutApis } = stateFile();
    writeFileSync(partial, JSON.stringify(withoutApis));
    const cases: Array<[string[], RegExp]> = [
      [["migrate", json], /keyguard migrate needs --data <file\.db>/],
      [["migrate", "--data", join(dir, "x.db")], /needs one JSON state file/],
      [["migrate", json, "--data", json], /--data must name a new SQLite file, not the JSON state file itself/],
      [["migrate", join(dir, "missing.json"), "--data", join(dir, "y.db")], /missing\.json" does not exist/],
      [["migrate", broken, "--data", join(dir, "z.db")], /broken\.json" is not valid JSON/],
      [["migrate", partial, "--data", join(dir, "v.db")], /partial\.json" is damaged: the table "apis" is missing/],
      [["migrate", json, "--data", join(dir, "w.db"), "--port", "1"], /keyguard migrate takes no --port/],
    ];
    const results = await Promise.all(cases.map(([args]) => run(args)));
    results.forEach((res, i) => {
      const [args, message] = cases[i]!;
      expect(res.status, args.join(" ")).toBe(2);
      expect(res.stderr, args.join(" ")).toMatch(message);
    });
  });
});
