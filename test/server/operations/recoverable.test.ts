// Recoverable keys: an API that stores keys keeps an AES-256-GCM copy of each
// recoverable key; `decrypt: true` returns it to a root key holding decrypt_key; 412 otherwise,
// as production. The state never holds a plaintext key nor the key-encryption key.
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Unkey } from "@unkey/api";
import * as errors from "@unkey/api/models/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalServiceArgumentError, LocalServiceConfigError } from "keyguard/server";
import { KeyVault, parseEncryptionKey } from "../../../src/server/domain/key-vault";
import { parseOptions } from "../../../src/server/options";
import { start, type Started } from "../helpers";

const KEK = randomBytes(32);
const dir = mkdtempSync(join(tmpdir(), "keyguard-recoverable-"));
let s: Started;
let storing: string;
beforeAll(async () => {
  s = await start({ encryptionKey: KEK.toString("base64") });
  ({ apiId: storing } = await s.service.createApi({ name: "stores-keys", storeKeys: true }));
});
afterAll(async () => {
  await s.close();
  rmSync(dir, { recursive: true, force: true });
});

async function recoverable(apiId = storing, extra: Record<string, unknown> = {}) {
  const res = await s.call("keys.createKey", { apiId, recoverable: true, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as { keyId: string; key: string };
}

describe("createKey recoverable", () => {
  it("on an API that does not store keys → 412 precondition_failed, as production", async () => {
    const res = await s.call("keys.createKey", { apiId: s.apiId, recoverable: true });
    expect(res.status).toBe(412);
    expect(res.body.error).toMatchObject({ title: "Precondition Failed", detail: "This API does not support key encryption." });
    expect(res.body.error.type).toMatch(/\/application\/precondition_failed$/);
  });

  it("without encrypt_key → 404 api_not_found (masked, as production); with an API-scoped grant it works", async () => {
    const { rootKey } = await s.service.createRootKey({ permissions: ["api.*.create_key"] });
    const res = await s.call("keys.createKey", { apiId: storing, recoverable: true }, rootKey);
    expect(res.status).toBe(404);
    expect(res.body.error.detail).toBe("The specified API was not found.");
    expect((await s.call("keys.createKey", { apiId: storing }, rootKey)).status).toBe(200);
    const { rootKey: scoped } = await s.service.createRootKey({ permissions: [`api.${storing}.create_key`, `api.${storing}.encrypt_key`] });
    expect((await s.call("keys.createKey", { apiId: storing, recoverable: true }, scoped)).status).toBe(200);
  });

  it("without a key-encryption key → 412 naming how to set one up; storeKeys is refused at once", async () => {
    const bare = await start();
    try {
      const res = await bare.call("keys.createKey", { apiId: bare.apiId, recoverable: true });
      expect(res.status).toBe(412);
      expect(res.body.error.detail).toMatch(/^Vault hasn't been set up\..*KEYGUARD_ENCRYPTION_KEY/);
      await expect(bare.service.createApi({ name: "no-kek", storeKeys: true })).rejects.toThrow(LocalServiceArgumentError);
      await expect(bare.service.createApi({ name: "no-kek", storeKeys: true })).rejects.toThrow(/KEYGUARD_ENCRYPTION_KEY/);
      // Keys that are not recoverable need nothing.
      expect((await bare.call("keys.createKey", { apiId: bare.apiId })).status).toBe(200);
    } finally {
      await bare.close();
    }
  });
});

describe("decrypt", () => {
  it("getKey and listKeys return the plaintext of recoverable keys only, and only when asked", async () => {
    const { keyId, key } = await recoverable(storing, { prefix: "rec", externalId: "rec-owner" });
    const plain = await s.createKey({ apiId: storing, externalId: "rec-owner" });
    expect((await s.call("keys.getKey", { keyId, decrypt: true })).body.data).toMatchObject({ keyId, plaintext: key });
    expect((await s.call("keys.getKey", { keyId })).body.data).not.toHaveProperty("plaintext");
    expect((await s.call("keys.getKey", { keyId: plain.keyId, decrypt: true })).body.data).not.toHaveProperty("plaintext");
    const listed = await s.call("apis.listKeys", { apiId: storing, externalId: "rec-owner", decrypt: true });
    expect(listed.status).toBe(200);
    const byId = new Map(listed.body.data.map((k: { keyId: string }) => [k.keyId, k]));
    expect(byId.get(keyId)).toMatchObject({ plaintext: key });
    expect(byId.get(plain.keyId)).not.toHaveProperty("plaintext");
    expect((await s.call("apis.listKeys", { apiId: storing })).body.data.some((k: object) => "plaintext" in k)).toBe(false);
    // The plaintext verifies.
    expect(await s.verify(key)).toMatchObject({ code: "VALID", keyId });
  });

  it("without decrypt_key → 403 for getKey and listKeys; an API-scoped decrypt_key works", async () => {
    const { keyId, key } = await recoverable();
    const { rootKey } = await s.service.createRootKey({ permissions: ["api.*.read_key", "api.*.read_api"] });
    const get = await s.call("keys.getKey", { keyId, decrypt: true }, rootKey);
    expect(get.status).toBe(403);
    expect(get.body.error.detail).toBe(`Missing one of these permissions: api.*.decrypt_key or api.${storing}.decrypt_key`);
    expect((await s.call("apis.listKeys", { apiId: storing, decrypt: true }, rootKey)).status).toBe(403);
    expect(JSON.stringify(get.body)).not.toContain(key);
    const { rootKey: scoped } = await s.service.createRootKey({ permissions: ["api.*.read_key", `api.${storing}.decrypt_key`] });
    expect((await s.call("keys.getKey", { keyId, decrypt: true }, scoped)).body.data.plaintext).toBe(key);
  });

  it("on an API that does not store keys → 412 with production's details", async () => {
    const { keyId } = await s.createKey();
    const get = await s.call("keys.getKey", { keyId, decrypt: true });
    expect(get.status).toBe(412);
    expect(get.body.error.detail).toBe("The API for this key does not support key encryption.");
    const list = await s.call("apis.listKeys", { apiId: s.apiId, decrypt: true });
    expect(list.status).toBe(412);
    expect(list.body.error.detail).toBe("The requested API does not support key encryption.");
  });

  it("rerollKey keeps a key recoverable; the new key is sealed, not copied", async () => {
    const { keyId, key } = await recoverable(storing, { prefix: "rr" });
    const res = await s.call("keys.rerollKey", { keyId, expiration: 0 });
    expect(res.status).toBe(200);
    const { keyId: newId, key: newKey } = res.body.data;
    expect((await s.call("keys.getKey", { keyId: newId, decrypt: true })).body.data.plaintext).toBe(newKey);
    expect((await s.call("keys.getKey", { keyId, decrypt: true })).body.data.plaintext).toBe(key);
    // Without encrypt_key the reroll of a recoverable key is refused.
    const { rootKey } = await s.service.createRootKey({ permissions: ["api.*.create_key"] });
    const denied = await s.call("keys.rerollKey", { keyId: newId, expiration: 0 }, rootKey);
    expect(denied.status).toBe(403);
    expect(denied.body.error.detail).toContain("encrypt_key");
    // A key that is not recoverable stays so.
    const plain = await s.createKey({ apiId: storing });
    const rolled = await s.call("keys.rerollKey", { keyId: plain.keyId, expiration: 0 });
    expect((await s.call("keys.getKey", { keyId: rolled.body.data.keyId, decrypt: true })).body.data).not.toHaveProperty("plaintext");
  });
});

describe("the state", () => {
  it("never holds a plaintext key nor the key-encryption key (export and data file)", async () => {
    const dataFile = join(dir, "state.db");
    const kekText = randomBytes(32).toString("hex");
    const own = await start({ dataFile, encryptionKey: kekText, storeKeys: true });
    const created: string[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const res = await own.call("keys.createKey", { apiId: own.apiId, recoverable: true, prefix: "st" });
        created.push(res.body.data.key);
        const rolled = await own.call("keys.rerollKey", { keyId: res.body.data.keyId, expiration: 60_000 });
        created.push(rolled.body.data.key);
      }
      const exported = JSON.stringify(await own.service.exportState());
      await own.close();
      // The SQLite file's bytes (and its write-ahead log, if one is left), as text.
      const bytes = (path: string) => (existsSync(path) ? readFileSync(path).toString("latin1") : "");
      const file = bytes(dataFile) + bytes(`${dataFile}-wal`);
      for (const text of [exported, file]) {
        for (const key of created) {
          expect(text).not.toContain(key);
          expect(text).not.toContain(key.slice(3)); // without its prefix
        }
        expect(text).not.toContain(kekText);
        expect(text).not.toContain(Buffer.from(kekText, "hex").toString("base64"));
        expect(text).toContain('"encrypted":"v1.');
      }
    } finally {
      await own.close();
    }
  });

  it("survives a restart with the same key-encryption key; another one yields no plaintext", async () => {
    const dataFile = join(dir, "restart.db");
    const kek = randomBytes(32).toString("base64");
    const first = await start({ dataFile, encryptionKey: kek, storeKeys: true });
    const { keyId, key } = (await first.call("keys.createKey", { apiId: first.apiId, recoverable: true })).body.data;
    await first.close();

    const same = await start({ dataFile, encryptionKey: kek });
    try {
      expect((await same.call("keys.getKey", { keyId, decrypt: true })).body.data.plaintext).toBe(key);
    } finally {
      await same.close();
    }
    const other = await start({ dataFile, encryptionKey: randomBytes(32).toString("base64") });
    try {
      const res = await other.call("keys.getKey", { keyId, decrypt: true });
      expect(res.status).toBe(200);
      expect(res.body.data).not.toHaveProperty("plaintext");
    } finally {
      await other.close();
    }
  });
});

describe("the official SDK", () => {
  it("createKey recoverable, then getKey and listKeys with decrypt", async () => {
    const unkey = new Unkey({ rootKey: s.rootKey, serverURL: s.baseUrl, retryConfig: { strategy: "none" } });
    const created = await unkey.keys.createKey({ apiId: storing, recoverable: true, prefix: "sdkrec", externalId: "sdk-rec" });
    const got = await unkey.keys.getKey({ keyId: created.data.keyId, decrypt: true });
    expect(got.data.plaintext).toBe(created.data.key);
    const listed = await unkey.apis.listKeys({ apiId: storing, externalId: "sdk-rec", decrypt: true });
    expect(listed.result.data.map((k) => k.plaintext)).toEqual([created.data.key]);
    const refused = await unkey.keys.createKey({ apiId: s.apiId, recoverable: true }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(errors.UnkeyError);
    expect(refused).not.toBeInstanceOf(errors.ResponseValidationError);
    expect((refused as errors.UnkeyError).statusCode).toBe(412);
    expect((refused as errors.UnkeyError).body).toContain("This API does not support key encryption.");
  });
});

describe("configuration", () => {
  const hex = randomBytes(32).toString("hex");

  it("the key-encryption key: hex, base64 or base64url of 32 bytes; anything else is refused without echoing it", () => {
    expect(parseEncryptionKey(hex)).toHaveLength(32);
    expect(parseEncryptionKey(Buffer.from(hex, "hex").toString("base64"))).toEqual(Buffer.from(hex, "hex"));
    expect(parseEncryptionKey(Buffer.from(hex, "hex").toString("base64url"))).toEqual(Buffer.from(hex, "hex"));
    for (const bad of ["", "short", hex.slice(2), randomBytes(31).toString("base64"), randomBytes(33).toString("base64")]) {
      expect(parseEncryptionKey(bad), bad).toBeUndefined();
    }
    const wrong = "not-a-32-byte-key-but-a-secret-anyway";
    for (const [options, env] of [
      [{ encryptionKey: wrong }, {}],
      [{}, { KEYGUARD_ENCRYPTION_KEY: wrong }],
    ] as const) {
      let thrown: unknown;
      try {
        parseOptions(options, env);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(LocalServiceConfigError);
      expect((thrown as Error).message).toMatch(/32 bytes/);
      expect((thrown as Error).message).not.toContain(wrong);
    }
  });

  it("from env, a file, or the option; not both options; storeKeys needs one", () => {
    expect(parseOptions({}, { KEYGUARD_ENCRYPTION_KEY: hex }).encryptionKey).toEqual(Buffer.from(hex, "hex"));
    expect(parseOptions({}, {}).encryptionKey).toBeUndefined();
    const file = join(dir, "kek.txt");
    writeFileSync(file, `${hex}\n`);
    expect(parseOptions({ encryptionKeyFile: file }, {}).encryptionKey).toEqual(Buffer.from(hex, "hex"));
    expect(() => parseOptions({ encryptionKeyFile: join(dir, "missing.txt") }, {})).toThrow(/cannot be read \(ENOENT\)/);
    expect(() => parseOptions({ encryptionKey: hex, encryptionKeyFile: file }, {})).toThrow(/not both/);
    expect(() => parseOptions({ storeKeys: true }, {})).toThrow(/storeKeys.*KEYGUARD_ENCRYPTION_KEY/);
    expect(parseOptions({ storeKeys: true }, { KEYGUARD_ENCRYPTION_KEY: hex }).storeKeys).toBe(true);
  });

  it("a sealed copy opens only with its key-encryption key, for its own record, undamaged", () => {
    const vault = new KeyVault(randomBytes(32));
    const record = { workspaceId: "ws_1", id: "key_1" };
    const sealed = vault.seal("secret_key_value", record);
    expect(sealed).not.toContain("secret");
    expect(vault.open(sealed, record)).toBe("secret_key_value");
    expect(vault.open(sealed, { ...record, id: "key_2" })).toBeUndefined();
    expect(new KeyVault(randomBytes(32)).open(sealed, record)).toBeUndefined();
    const parts = sealed.split(".");
    const body = Buffer.from(parts[3]!, "base64url");
    body[0]! ^= 1;
    expect(vault.open([...parts.slice(0, 3), body.toString("base64url")].join("."), record)).toBeUndefined();
    expect(vault.open("garbage", record)).toBeUndefined();
    // Two seals of one key differ (fresh IV).
    expect(vault.seal("secret_key_value", record)).not.toBe(sealed);
  });
});
