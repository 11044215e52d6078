// The data file: state survives a restart, the file is written atomically, and neither the
// file nor exportState() ever holds a plaintext key or root key.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LocalServiceConfigError } from "keyguard/local";
import { start } from "./helpers";

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
    const dataFile = join(dir, "restart.json");
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
    const dataFile = join(dir, "given.json");
    const a = await start({ dataFile, rootKey: "root_givenKeyOne" });
    expect(a.rootKey).toBe("root_givenKeyOne");
    expect(a.service.rootKeyGenerated).toBe(false);
    await a.close();
    const b = await start({ dataFile, rootKey: "root_givenKeyOne" });
    expect(Object.keys((await b.service.exportState()).rootKeys)).toHaveLength(1);
    await b.close();
    const c = await start({ dataFile, rootKey: "root_givenKeyTwo" });
    expect(Object.keys((await c.service.exportState()).rootKeys)).toHaveLength(2);
    expect((await c.call("apis.getApi", { apiId: c.apiId }, "root_givenKeyOne")).status).toBe(200);
    expect((await c.call("apis.getApi", { apiId: c.apiId }, "root_givenKeyTwo")).status).toBe(200);
    await c.close();
  });

  it("admin changes are persisted too", async () => {
    const dataFile = join(dir, "admin.json");
    const a = await start({ dataFile, rootKey: "root_adminKey123" });
    const { rootKey } = await a.service.createRootKey({ permissions: ["api.*.read_api"] });
    const { apiId } = await a.service.createApi({ name: "second" });
    await a.close();
    const b = await start({ dataFile, rootKey: "root_adminKey123" });
    expect((await b.call("apis.getApi", { apiId }, rootKey)).body.data).toEqual({ id: apiId, name: "second" });
    await b.close();
  });

  it("writes atomically: no temp file is left behind, and the file is valid JSON after each answer", async () => {
    const dataFile = join(dir, "atomic.json");
    const s = await start({ dataFile });
    for (let i = 0; i < 5; i++) {
      await s.createKey();
      const parsed = JSON.parse(readFileSync(dataFile, "utf8"));
      expect(Object.keys(parsed.keys)).toHaveLength(i + 1);
    }
    expect(readdirSync(dir).filter((f) => f.includes(".tmp"))).toEqual([]);
    await s.close();
  });

  it("a corrupt data file fails fast naming the file", async () => {
    const dataFile = join(dir, "corrupt.json");
    writeFileSync(dataFile, "{ not json");
    await expect(start({ dataFile })).rejects.toThrow(LocalServiceConfigError);
    await expect(start({ dataFile })).rejects.toThrow(/corrupt\.json.*not valid JSON/);
    writeFileSync(dataFile, JSON.stringify({ hello: "world" }));
    await expect(start({ dataFile })).rejects.toThrow(/not a keyguard state file/);
  });

  it("a data file that cannot be written fails the start with a config error naming it", async () => {
    const dataFile = join(dir, "no-such-dir", "state.json");
    await expect(start({ dataFile })).rejects.toThrow(LocalServiceConfigError);
    await expect(start({ dataFile })).rejects.toThrow(/cannot write dataFile ".*no-such-dir.*state\.json".*directory exists/);
  });

  it("a state file missing a table fails fast naming the file and the table", async () => {
    const dataFile = join(dir, "partial.json");
    const s = await start({ dataFile, rootKey: "root_partialState1" });
    await s.close();
    const state = JSON.parse(readFileSync(dataFile, "utf8"));
    delete state.apis;
    writeFileSync(dataFile, JSON.stringify(state));
    await expect(start({ dataFile })).rejects.toThrow(LocalServiceConfigError);
    await expect(start({ dataFile })).rejects.toThrow(/partial\.json.*"apis"/);
    state.apis = [];
    writeFileSync(dataFile, JSON.stringify(state));
    await expect(start({ dataFile })).rejects.toThrow(/partial\.json.*"apis"/);
  });

  it("a start that fails to listen (port in use) leaves the data file untouched", async () => {
    const holder = await start();
    const port = Number(new URL(holder.baseUrl).port);
    const fresh = join(dir, "never-written.json");
    await expect(start({ dataFile: fresh, port })).rejects.toThrow(/EADDRINUSE/);
    expect(existsSync(fresh)).toBe(false);

    const existing = join(dir, "unchanged.json");
    const first = await start({ dataFile: existing, rootKey: "root_unchangedKey1" });
    await first.close();
    const before = readFileSync(existing, "utf8");
    // A new root key would be added to the file by a successful start.
    await expect(start({ dataFile: existing, port, rootKey: "root_unchangedKey2" })).rejects.toThrow(/EADDRINUSE/);
    expect(readFileSync(existing, "utf8")).toBe(before);
    await holder.close();
  });
});

describe("a failing write", () => {
  it("answers 500 unexpected_error (never a success that was not saved) and logs it", async () => {
    const sub = join(dir, "vanishing");
    mkdirSync(sub);
    const logger = { warn: vi.fn(), error: vi.fn() };
    const s = await start({ dataFile: join(sub, "state.json"), logger });
    rmSync(sub, { recursive: true, force: true });
    const res = await s.call("keys.createKey", { apiId: s.apiId });
    expect(res.status).toBe(500);
    expect(res.body.error.type).toMatch(/\/application\/unexpected_error$/);
    expect(JSON.stringify(res.body)).not.toContain(sub);
    expect(logger.error).toHaveBeenCalledOnce();
    await s.close();
  });

  it("keeps nothing of a change it could not save: credits, rate limits and new keys are rolled back", async () => {
    const sub = join(dir, "flaky");
    mkdirSync(sub);
    const dataFile = join(sub, "state.json");
    const s = await start({ dataFile, rootKey: "root_flakyDiskKey1" });
    const { key, keyId } = await s.createKey({
      credits: { remaining: 3 },
      ratelimits: [{ name: "rpm", limit: 3, duration: 60_000, autoApply: true }],
    });
    const keysBefore = Object.keys((await s.service.exportState()).keys);

    rmSync(sub, { recursive: true, force: true });
    for (let i = 0; i < 3; i++) expect((await s.call("keys.verifyKey", { key })).status).toBe(500);
    expect((await s.call("keys.createKey", { apiId: s.apiId })).status).toBe(500);
    expect((await s.call("keys.updateKey", { keyId, name: "renamed" })).status).toBe(500);
    await expect(s.service.createApi({ name: "unsaved" })).rejects.toThrow(/ENOENT/);

    mkdirSync(sub);
    expect(Object.keys((await s.service.exportState()).keys)).toEqual(keysBefore);
    expect(Object.values((await s.service.exportState()).apis).map((a) => a.name)).not.toContain("unsaved");
    expect(await s.verify(key)).toMatchObject({ code: "VALID", credits: 2, ratelimits: [{ name: "rpm", remaining: 2 }] });
    expect((await s.call("keys.getKey", { keyId })).body.data).not.toHaveProperty("name");
    const saved = JSON.parse(readFileSync(dataFile, "utf8"));
    expect(saved.keys[keyId].credits.remaining).toBe(2);
    expect(Object.keys(saved.keys)).toEqual(keysBefore);
    await s.close();
  });
});

describe("no plaintext secrets at rest", () => {
  it("exportState() and the data file hold hashes only", async () => {
    const dataFile = join(dir, "secrets.json");
    const s = await start({ dataFile, rootKey: "root_plaintextRootKeyXYZ" });
    const created = [await s.createKey({ prefix: "sk" }), await s.createKey({ byteLength: 32 })];
    const reroll = await s.call("keys.rerollKey", { keyId: created[0]!.keyId, expiration: 60_000 });
    const { rootKey: extraRoot } = await s.service.createRootKey({ permissions: ["api.*.verify_key"] });
    const secrets = [...created.map((c) => c.key), reroll.body.data.key, "root_plaintextRootKeyXYZ", extraRoot];
    const snapshot = JSON.stringify(await s.service.exportState());
    const file = readFileSync(dataFile, "utf8");
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
