// The SQLite data file under the service: state survives a restart, each answer is committed
// first, a failing file answers 503 and recovers, and neither the file nor exportState() ever
// holds a plaintext key or root key.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { exportState, LocalServiceConfigError, sqliteStorage } from "keyguard/server";
import { openConnection } from "../../../src/server/storage/sqlite/driver";
import { start } from "../helpers";

const dir = mkdtempSync(join(tmpdir(), "keyguard-local-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// These tests rely on a generated root key when none is given.
beforeEach(() => {
  vi.stubEnv("UNKEY_ROOT_KEY", "");
});
afterEach(() => {
  vi.unstubAllEnvs();
});

describe("persistence across a restart", () => {
  it("a key created before close() verifies after starting again with the same dataFile", async () => {
    const dataFile = join(dir, "restart.db");
    const first = await start({ dataFile });
    const { key, keyId } = await first.createKey({ credits: { remaining: 5 }, externalId: "user_p", permissions: ["p.read"] });
    expect(await first.verify(key)).toMatchObject({ code: "VALID", credits: 4 });
    await first.close();

    const second = await start({ dataFile });
    expect(second.workspaceId).toBe(first.workspaceId);
    expect(second.apiId).toBe(first.apiId);
    expect(second.service.restored).toBe(true);
    // The first root key still works (stored hashed); a new one was generated because none was given.
    expect(second.rootKey).not.toBe(first.rootKey);
    const viaOldRoot = await second.call("keys.verifyKey", { key, permissions: "p.read" }, first.rootKey);
    expect(viaOldRoot.body.data).toMatchObject({ valid: true, code: "VALID", keyId, credits: 3, identity: { externalId: "user_p" } });
    await second.close();
  });

  it("a given rootKey is reused when stored, added when new", async () => {
    const dataFile = join(dir, "given.db");
    const a = await start({ dataFile, rootKey: "root_givenKeyOne_4f1c9e27b8a35d60e2b7c41f9a0d8e36" });
    expect(a.rootKey).toBe("root_givenKeyOne_4f1c9e27b8a35d60e2b7c41f9a0d8e36");
    expect(a.service.rootKeyGenerated).toBe(false);
    await a.close();
    const b = await start({ dataFile, rootKey: "root_givenKeyOne_4f1c9e27b8a35d60e2b7c41f9a0d8e36" });
    expect(Object.keys((await b.service.exportState()).rootKeys)).toHaveLength(1);
    await b.close();
    const c = await start({ dataFile, rootKey: "root_givenKeyTwo_4f1c9e27b8a35d60e2b7c41f9a0d8e36" });
    expect(Object.keys((await c.service.exportState()).rootKeys)).toHaveLength(2);
    expect((await c.call("apis.getApi", { apiId: c.apiId }, "root_givenKeyOne_4f1c9e27b8a35d60e2b7c41f9a0d8e36")).status).toBe(200);
    expect((await c.call("apis.getApi", { apiId: c.apiId }, "root_givenKeyTwo_4f1c9e27b8a35d60e2b7c41f9a0d8e36")).status).toBe(200);
    await c.close();
  });

  it("namespaces, overrides and key migrations are kept; a stored bootstrap root key gains the permissions added since", async () => {
    const dataFile = join(dir, "ratelimit.db");
    const a = await start({ dataFile, rootKey: "root_rateLimitKey1_4f1c9e27b8a35d60e2b7c41f9a0d8e36" });
    await a.call("ratelimit.limit", { namespace: "kept", identifier: "u", limit: 1, duration: 60_000 });
    const { overrideId } = (await a.call("ratelimit.setOverride", { namespace: "kept", identifier: "vip", limit: 5, duration: 60_000 }))
      .body.data;
    const { migrationId } = await a.service.createKeyMigration();
    await a.close();
    // As an earlier keyguard stored it: without the rate-limit override permissions.
    const store = await sqliteStorage(dataFile);
    const [root] = Object.values((await exportState(store)).rootKeys);
    await store.transaction((tx) =>
      tx.put("rootKeys", { ...root!, permissions: root!.permissions.filter((p) => !p.startsWith("ratelimit.")) }),
    );
    await store.close();

    const b = await start({ dataFile, rootKey: "root_rateLimitKey1_4f1c9e27b8a35d60e2b7c41f9a0d8e36" });
    expect((await b.call("ratelimit.getOverride", { namespace: "kept", identifier: "vip" })).body.data).toEqual({
      overrideId,
      identifier: "vip",
      limit: 5,
      duration: 60_000,
    });
    expect((await b.call("ratelimit.limit", { namespace: "new", identifier: "u", limit: 1, duration: 60_000 })).status).toBe(200);
    expect((await b.service.exportState()).keyMigrations?.[migrationId]).toMatchObject({ algorithm: "sha256" });
    await b.close();
  });

  it("admin changes are persisted too", async () => {
    const dataFile = join(dir, "admin.db");
    const a = await start({ dataFile, rootKey: "root_adminKey123_4f1c9e27b8a35d60e2b7c41f9a0d8e36" });
    const { rootKey } = await a.service.createRootKey({ permissions: ["api.*.read_api"] });
    const { apiId } = await a.service.createApi({ name: "second" });
    await a.close();
    const b = await start({ dataFile, rootKey: "root_adminKey123_4f1c9e27b8a35d60e2b7c41f9a0d8e36" });
    expect((await b.call("apis.getApi", { apiId }, rootKey)).body.data).toMatchObject({ id: apiId, name: "second" });
    await b.close();
  });

  it("commits before answering: another reader of the file sees each key as soon as it is answered", async () => {
    const dataFile = join(dir, "committed.db");
    const s = await start({ dataFile });
    const reader = await openConnection(dataFile);
    try {
      for (let i = 0; i < 5; i++) {
        const { keyId } = await s.createKey();
        expect(reader.prepare("SELECT id FROM keys WHERE id = ?").get(keyId)).toEqual({ id: keyId });
      }
    } finally {
      reader.close();
    }
    expect(
      readdirSync(dir)
        .filter((f) => f.startsWith("committed.db"))
        .sort(),
    ).toEqual(["committed.db", "committed.db-lock", "committed.db-shm", "committed.db-wal"]);
    await s.close();
  });

  it("a data file that is not a SQLite database fails fast naming the file; a JSON state file names keyguard migrate", async () => {
    const dataFile = join(dir, "corrupt.db");
    writeFileSync(dataFile, "not a database");
    await expect(start({ dataFile })).rejects.toThrow(LocalServiceConfigError);
    await expect(start({ dataFile })).rejects.toThrow(/corrupt\.db" is not a SQLite database/);
    const json = join(dir, "state.json");
    writeFileSync(json, JSON.stringify({ version: 1, workspaces: {} }));
    await expect(start({ dataFile: json })).rejects.toThrow(/state\.json" is a JSON state file of an earlier keyguard.*keyguard migrate/);
  });

  it("a data file that cannot be created fails the start with a config error naming it", async () => {
    const dataFile = join(dir, "no-such-dir", "keys.db");
    await expect(start({ dataFile })).rejects.toThrow(LocalServiceConfigError);
    await expect(start({ dataFile })).rejects.toThrow(/cannot open the SQLite data file ".*no-such-dir.*keys\.db".*directory exists/);
  });

  it("a start that fails to listen (port in use) writes no state into the data file", async () => {
    const holder = await start();
    const port = Number(new URL(holder.baseUrl).port);
    const fresh = join(dir, "never-written.db");
    await expect(start({ dataFile: fresh, port })).rejects.toThrow(/EADDRINUSE/);
    const empty = await sqliteStorage(fresh);
    expect(await empty.isEmpty()).toBe(true);
    await empty.close();

    const existing = join(dir, "unchanged.db");
    const first = await start({ dataFile: existing, rootKey: "root_unchangedKey1_4f1c9e27b8a35d60e2b7c41f9a0d8e36" });
    const before = await first.service.exportState();
    await first.close();
    // A new root key would be added to the file by a successful start.
    await expect(start({ dataFile: existing, port, rootKey: "root_unchangedKey2_4f1c9e27b8a35d60e2b7c41f9a0d8e36" })).rejects.toThrow(
      /EADDRINUSE/,
    );
    const again = await sqliteStorage(existing);
    expect(await exportState(again)).toEqual(before);
    await again.close();
    await holder.close();
  });
});

describe("a failing data file", () => {
  it("a read-only database answers 503 service_unavailable (never a 500), logs one line, keeps nothing, and recovers", async () => {
    const store = await sqliteStorage(join(dir, "readonly.db"));
    const logger = { warn: vi.fn(), error: vi.fn() };
    const s = await start({ store, logger, rootKey: "root_readOnlyDisk1_4f1c9e27b8a35d60e2b7c41f9a0d8e36" });
    const { key, keyId } = await s.createKey({
      credits: { remaining: 3 },
      ratelimits: [{ name: "rpm", limit: 3, duration: 60_000, autoApply: true }],
    });
    expect(await s.verify(key)).toMatchObject({ code: "VALID", credits: 2 });
    const keysBefore = Object.keys((await s.service.exportState()).keys);

    await store.pragma("query_only", 1);
    for (let i = 0; i < 3; i++) {
      const res = await s.call("keys.verifyKey", { key });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("1");
      expect(res.body.error.type).toMatch(/\/application\/service_unavailable$/);
      expect(JSON.stringify(res.body)).not.toContain("readonly.db");
    }
    expect((await s.call("keys.createKey", { apiId: s.apiId })).status).toBe(503);
    expect((await s.call("keys.updateKey", { keyId, name: "renamed" })).status).toBe(503);
    expect(logger.error).toHaveBeenCalledOnce();
    expect(JSON.stringify(logger.error.mock.calls)).not.toContain(key);

    await store.pragma("query_only", 0);
    expect(Object.keys((await s.service.exportState()).keys)).toEqual(keysBefore);
    expect(await s.verify(key)).toMatchObject({ code: "VALID", credits: 1, ratelimits: [{ name: "rpm", remaining: 1 }] });
    expect((await s.call("keys.getKey", { keyId })).body.data).not.toHaveProperty("name");
    await s.close();
    await store.close();
  });

  it("a full disk answers 503 to what needs room, serves the rest, and recovers once there is room", async () => {
    const store = await sqliteStorage(join(dir, "full.db"));
    const s = await start({ store, rootKey: "root_fullDiskKey12_4f1c9e27b8a35d60e2b7c41f9a0d8e36" });
    const { key } = await s.createKey({ credits: { remaining: 100 } });
    const { page_count } = (await store.pragma("page_count")) as { page_count: number };
    await store.pragma("max_page_count", page_count);
    let status = 200;
    for (let i = 0; i < 300 && status === 200; i++) {
      status = (await s.call("keys.createKey", { apiId: s.apiId, meta: { pad: "x".repeat(3000) } })).status;
    }
    expect(status).toBe(503);
    expect(await s.verify(key)).toMatchObject({ code: "VALID" });
    await store.pragma("max_page_count", 1_000_000);
    expect((await s.call("keys.createKey", { apiId: s.apiId, meta: { pad: "x".repeat(3000) } })).status).toBe(200);
    await s.close();
    await store.close();
  });

  it("a data file deleted while serving answers 503 (nothing written into the deleted file), never a 500", async () => {
    const sub = join(dir, "vanishing");
    mkdirSync(sub);
    const logger = { warn: vi.fn(), error: vi.fn() };
    const s = await start({ dataFile: join(sub, "keys.db"), logger });
    const { key } = await s.createKey({ credits: { remaining: 3 } });
    rmSync(sub, { recursive: true, force: true });
    expect((await s.call("keys.verifyKey", { key })).status).toBe(503);
    const res = await s.call("keys.createKey", { apiId: s.apiId });
    expect(res.status).toBe(503);
    expect(JSON.stringify(res.body)).not.toContain(sub);
    expect(logger.error).toHaveBeenCalledOnce();
    await s.close();
  });
});

describe("no plaintext secrets at rest", () => {
  it("exportState() and the data file hold hashes only", async () => {
    const dataFile = join(dir, "secrets.db");
    const s = await start({ dataFile, rootKey: "root_plaintextRootKeyXYZ_4f1c9e27b8a35d60e2b7c41f9a0d8e36" });
    const created = [await s.createKey({ prefix: "sk" }), await s.createKey({ byteLength: 32 })];
    const reroll = await s.call("keys.rerollKey", { keyId: created[0]!.keyId, expiration: 60_000 });
    const { rootKey: extraRoot } = await s.service.createRootKey({ permissions: ["api.*.verify_key"] });
    const secrets = [
      ...created.map((c) => c.key),
      reroll.body.data.key,
      "root_plaintextRootKeyXYZ_4f1c9e27b8a35d60e2b7c41f9a0d8e36",
      extraRoot,
    ];
    const snapshot = JSON.stringify(await s.service.exportState());
    // The database and its write-ahead log, as bytes.
    const file = [dataFile, `${dataFile}-wal`].map((f) => readFileSync(f).toString("latin1")).join("");
    for (const secret of secrets) {
      expect(snapshot).not.toContain(secret);
      expect(file).not.toContain(secret);
      // Not even the random part without the prefix.
      expect(file).not.toContain(secret.slice(secret.indexOf("_") + 1));
    }
    // What is stored is base64(SHA-256(key)) and the short `start`.
    const { createHash } = await import("node:crypto");
    expect(snapshot).toContain(createHash("sha256").update(created[0]!.key).digest("base64"));
    await s.close();
  });

  it("exportState() is a deep copy", async () => {
    const s = await start();
    const snap = await s.service.exportState();
    snap.apis = {};
    expect(Object.keys((await s.service.exportState()).apis)).toHaveLength(1);
    await s.close();
  });
});
