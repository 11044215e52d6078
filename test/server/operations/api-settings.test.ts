// keyguard's apis.updateApi and the settings getApiSettings and listApis answer with (production's
// getApi answers id and name only), and keys.getKeySettings: an omitted field is
// unchanged, `ipWhitelist: []` clears the list, storeKeys needs a key-encryption key, the
// permission is api.*.update_api or api.<apiId>.update_api, and each setting takes effect.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failsChecksum } from "../../../src/protocol/key-checksum";
import { start, type Started } from "../helpers";

const DEFAULTS = { storeKeys: false, keyFormat: "plain", leakResponse: "disable" };

describe("apis.updateApi", () => {
  let s: Started;
  beforeAll(async () => {
    s = await start({ encryptionKey: randomBytes(32).toString("base64") });
  });
  afterAll(() => s.close());

  async function newApi(name = "settings") {
    const res = await s.call("apis.createApi", { name });
    expect(res.status).toBe(200);
    return res.body.data.apiId as string;
  }

  it("getApiSettings and listApis answer with the settings, defaults spelled out; getApi with production's shape", async () => {
    const apiId = await newApi();
    const got = await s.call("apis.getApiSettings", { apiId });
    expect(got.body.data).toEqual({ id: apiId, name: "settings", ...DEFAULTS });
    expect((await s.call("apis.getApi", { apiId })).body.data).toEqual({ id: apiId, name: "settings" });
    const listed = (await s.call("apis.listApis", {})).body.data.find((a: { id: string }) => a.id === apiId);
    expect(listed).toEqual({ id: apiId, name: "settings", createdAt: expect.any(Number), ...DEFAULTS });
  });

  it("changes only the fields given and answers with the API as getApiSettings would", async () => {
    const apiId = await newApi();
    const changed = await s.call("apis.updateApi", {
      apiId,
      name: "renamed",
      ipWhitelist: ["10.0.0.0/8", "::1", "10.0.0.0/8"],
      storeKeys: true,
      keyFormat: "checksummed",
      leakResponse: "flag",
    });
    expect(changed.status).toBe(200);
    expect(changed.body.meta.requestId).toMatch(/^req_/);
    const all = {
      id: apiId,
      name: "renamed",
      ipWhitelist: ["10.0.0.0/8", "::1"],
      storeKeys: true,
      keyFormat: "checksummed",
      leakResponse: "flag",
    };
    expect(changed.body.data).toEqual(all);
    expect((await s.call("apis.getApiSettings", { apiId })).body.data).toEqual(all);

    // Omitted fields stay; [] clears the list.
    const one = await s.call("apis.updateApi", { apiId, leakResponse: "disable" });
    expect(one.body.data).toEqual({ ...all, leakResponse: "disable" });
    const cleared = await s.call("apis.updateApi", { apiId, ipWhitelist: [], storeKeys: false, keyFormat: "plain" });
    expect(cleared.body.data).toEqual({ id: apiId, name: "renamed", ...DEFAULTS });
    expect(cleared.body.data).not.toHaveProperty("ipWhitelist");
    expect((await s.call("apis.updateApi", { apiId })).body.data).toEqual(cleared.body.data);
  });

  it("each setting takes effect: the list on verification, the key format on createKey, storeKeys on recoverable keys", async () => {
    const apiId = await newApi();
    const { key } = (await s.call("keys.createKey", { apiId, prefix: "sk" })).body.data;
    expect(failsChecksum(key)).toBe(false);
    expect(key).not.toMatch(/^sk_kg0/);
    await s.call("apis.updateApi", { apiId, ipWhitelist: ["192.0.2.0/24"] });
    expect(await s.verify(key)).toMatchObject({ code: "FORBIDDEN" });
    await s.call("apis.updateApi", { apiId, ipWhitelist: ["127.0.0.0/8", "::1/128"] });
    expect(await s.verify(key)).toMatchObject({ code: "VALID" });

    await s.call("apis.updateApi", { apiId, keyFormat: "checksummed" });
    const checksummed = (await s.call("keys.createKey", { apiId, prefix: "sk" })).body.data.key as string;
    expect(checksummed).toMatch(/^sk_kg0[1-9A-HJ-NP-Za-km-z]{28}$/);
    expect(await s.verify(checksummed)).toMatchObject({ code: "VALID" });
    // The plain key made before still verifies.
    expect(await s.verify(key)).toMatchObject({ code: "VALID" });

    const refused = await s.call("keys.createKey", { apiId, recoverable: true });
    expect(refused.status).toBe(412);
    await s.call("apis.updateApi", { apiId, storeKeys: true });
    expect((await s.call("keys.createKey", { apiId, recoverable: true })).status).toBe(200);
  });

  it("storeKeys: true without a key-encryption key is 412, and nothing changes", async () => {
    const plain = await start();
    try {
      const res = await plain.call("apis.updateApi", { apiId: plain.apiId, storeKeys: true, name: "changed" });
      expect(res.status).toBe(412);
      expect(res.body.error.detail).toMatch(/KEYGUARD_ENCRYPTION_KEY/);
      expect((await plain.call("apis.getApiSettings", { apiId: plain.apiId })).body.data).toMatchObject({
        name: "default",
        storeKeys: false,
      });
    } finally {
      await plain.close();
    }
  });

  it("needs api.*.update_api or api.<apiId>.update_api: 403 without, then 404 for a missing API", async () => {
    const apiId = await newApi();
    const other = await newApi("other");
    const { rootKey: onOne } = await s.service.createRootKey({ permissions: [`api.${apiId}.update_api`] });
    expect((await s.call("apis.updateApi", { apiId, name: "mine" }, onOne)).status).toBe(200);
    const refused = await s.call("apis.updateApi", { apiId: other, name: "theirs" }, onOne);
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expect(refused.body.error.detail).toBe("Missing one of these permissions: api.*.update_api or api.<apiId>.update_api");
    const { rootKey: reader } = await s.service.createRootKey({ permissions: ["api.*.read_api"] });
    expect((await s.call("apis.updateApi", { apiId, name: "nope" }, reader)).status).toBe(403);
    const missing = await s.call("apis.updateApi", { apiId: "api_doesnotexist", name: "xyz" });
    expect(missing.status).toBe(404);
    expect((await s.call("apis.getApi", { apiId: other })).body.data.name).toBe("other");
  });

  it("refuses bad values with 400 naming the field", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ keyFormat: "hex" }, "body.keyFormat"],
      [{ leakResponse: "delete" }, "body.leakResponse"],
      [{ name: "ab" }, "body.name"],
      [{ storeKeys: "yes" }, "body.storeKeys"],
      [{ unknown: 1 }, "body.unknown"],
    ];
    for (const [body, location] of cases) {
      const res = await s.call("apis.updateApi", { apiId: s.apiId, ...body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.errors[0].location).toBe(location);
    }
    const created = await s.call("apis.createApi", { name: "formats", keyFormat: "checksummed" });
    expect((await s.call("apis.getApiSettings", { apiId: created.body.data.apiId })).body.data.keyFormat).toBe("checksummed");
    expect((await s.call("apis.createApi", { name: "formats", keyFormat: "hex" })).status).toBe(400);
    // The admin surface checks the same.
    await expect(s.service.createApi({ name: "formats", keyFormat: "hex" as never })).rejects.toThrow(
      /createApi: keyFormat must be one of "plain", "checksummed"/,
    );
    const admin = await s.service.createApi({ name: "formats", keyFormat: "checksummed", ipWhitelist: ["10.0.0.0/8"] });
    expect((await s.call("apis.getApiSettings", { apiId: admin.apiId })).body.data).toMatchObject({
      keyFormat: "checksummed",
      ipWhitelist: ["10.0.0.0/8"],
    });
  });

  it("creditsLowThreshold: set on createApi or updateApi, removed with null, a whole number of at least 1", async () => {
    const created = await s.call("apis.createApi", { name: "metered", creditsLowThreshold: 10 });
    const apiId = created.body.data.apiId as string;
    expect((await s.call("apis.getApiSettings", { apiId })).body.data).toEqual({
      id: apiId,
      name: "metered",
      ...DEFAULTS,
      creditsLowThreshold: 10,
    });
    expect((await s.call("apis.updateApi", { apiId, creditsLowThreshold: 3 })).body.data.creditsLowThreshold).toBe(3);
    expect((await s.call("apis.updateApi", { apiId, name: "metered too" })).body.data.creditsLowThreshold).toBe(3);
    const removed = await s.call("apis.updateApi", { apiId, creditsLowThreshold: null });
    expect(removed.body.data).toEqual({ id: apiId, name: "metered too", ...DEFAULTS });
    for (const bad of [0, -1, 1.5, "5"]) {
      const res = await s.call("apis.updateApi", { apiId, creditsLowThreshold: bad });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.error.errors[0].location).toBe("body.creditsLowThreshold");
    }
    expect((await s.call("apis.createApi", { name: "metered", creditsLowThreshold: 0 })).status).toBe(400);
    await expect(s.service.createApi({ name: "metered", creditsLowThreshold: 0 })).rejects.toThrow(
      /createApi: creditsLowThreshold must be a whole number/,
    );
    const admin = await s.service.createApi({ name: "metered", creditsLowThreshold: 7 });
    expect((await s.call("apis.getApiSettings", { apiId: admin.apiId })).body.data.creditsLowThreshold).toBe(7);
  });
});

describe("keys.getKeySettings", () => {
  let s: Started;
  beforeAll(async () => {
    s = await start();
  });
  afterAll(() => s.close());

  it("answers the settings getKey leaves out, key by key, in the order asked (a repeated id once)", async () => {
    const a = await s.createKey({ ipWhitelist: ["10.0.0.0/8"], creditsLowThreshold: 3 });
    const b = await s.createKey();
    const got = await s.call("keys.getKeySettings", { keyIds: [a.keyId, b.keyId, a.keyId] });
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual([{ keyId: a.keyId, ipWhitelist: ["10.0.0.0/8"], creditsLowThreshold: 3 }, { keyId: b.keyId }]);
    const key = (await s.call("keys.getKey", { keyId: a.keyId })).body.data;
    for (const field of ["ipWhitelist", "creditsLowThreshold", "leakReports"]) expect(key).not.toHaveProperty(field);
  });

  it("is 404 for a missing key, 403 without read_key on its API, 400 for no ids or more than 100", async () => {
    const { keyId } = await s.createKey();
    const missing = await s.call("keys.getKeySettings", { keyIds: [keyId, "key_missing123"] });
    expect(missing.status).toBe(404);
    expect(missing.body.error.type).toMatch(/key_not_found$/);
    const { rootKey } = await s.service.createRootKey({ permissions: ["api.*.read_api"] });
    expect((await s.call("keys.getKeySettings", { keyIds: [keyId] }, rootKey)).status).toBe(403);
    const { rootKey: reader } = await s.service.createRootKey({ permissions: [`api.${s.apiId}.read_key`] });
    expect((await s.call("keys.getKeySettings", { keyIds: [keyId] }, reader)).status).toBe(200);
    expect((await s.call("keys.getKeySettings", { keyIds: [] })).status).toBe(400);
    expect((await s.call("keys.getKeySettings", { keyIds: Array.from({ length: 101 }, () => keyId) })).status).toBe(400);
  });
});
