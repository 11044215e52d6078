// Checksummed keys in the key service: an API of the checksummed format issues `prefix_kg0…` keys
// (createKey and rerollKey); keys.verifyKey answers NOT_FOUND to one whose checksum fails without
// reading a key from the store (the store's own call counts, from the metrics, show it) and counts
// it in keyguard_checksum_rejections_total; keys of the plain format keep verifying.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failsChecksum } from "../../../src/protocol/key-checksum";
import { start, type Started } from "../helpers";

/** `name{labels} value` samples of one family, by their label text (`""` without labels). */
async function samples(s: Started, name: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${s.baseUrl}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`, "gm"))) out[m[1] ?? ""] = Number(m[2]);
  return out;
}

/** Store calls so far, by operation, from keyguard_store_duration_seconds. */
const storeCalls = (s: Started) => samples(s, "keyguard_store_duration_seconds_count");

/** A key like `key` with one character of its random part changed (to another base58 digit). */
function mistyped(key: string, at = key.length - 10): string {
  const swap = key[at] === "z" ? "y" : "z";
  return key.slice(0, at) + swap + key.slice(at + 1);
}

describe("checksummed keys", () => {
  let s: Started;
  let apiId: string;
  beforeAll(async () => {
    s = await start({ metrics: true });
    apiId = (await s.service.createApi({ name: "checksummed", keyFormat: "checksummed" })).apiId;
  });
  afterAll(() => s.close());

  it("createKey and rerollKey issue keys of the API's format; they verify, and so do plain keys", async () => {
    const created = (await s.call("keys.createKey", { apiId, prefix: "acme_live", byteLength: 24 })).body.data;
    expect(created.key).toMatch(/^acme_live_kg0[1-9A-HJ-NP-Za-km-z]{39}$/);
    expect(failsChecksum(created.key)).toBe(false);
    expect(await s.verify(created.key)).toMatchObject({ valid: true, code: "VALID", keyId: created.keyId });
    const info = (await s.call("keys.getKey", { keyId: created.keyId })).body.data;
    expect(info.start).toBe(created.key.slice(0, "acme_live_kg0".length + 4));

    const rerolled = (await s.call("keys.rerollKey", { keyId: created.keyId, expiration: 0 })).body.data;
    expect(rerolled.key).toMatch(/^acme_live_kg0/);
    expect(await s.verify(rerolled.key)).toMatchObject({ code: "VALID" });

    const unprefixed = (await s.call("keys.createKey", { apiId })).body.data.key as string;
    expect(unprefixed).toMatch(/^kg0[1-9A-HJ-NP-Za-km-z]{28}$/);
    expect(await s.verify(unprefixed)).toMatchObject({ code: "VALID" });

    const plain = await s.createKey({ prefix: "acme" });
    expect(await s.verify(plain.key)).toMatchObject({ code: "VALID" });
  });

  it("a key whose checksum fails is NOT_FOUND without a key read, counted in the metrics", async () => {
    const { key } = (await s.call("keys.createKey", { apiId, prefix: "sk" })).body.data;
    const bad = [mistyped(key), mistyped(key, key.length - 1), key.slice(0, -1), `${key}1`, "sk_kg0NotARealKeyAtAll1234567890ab"];
    for (const k of bad) expect(failsChecksum(k), k).toBe(true);

    // The verification events of the test before are written now, not during the count.
    await s.service.flushVerifications();
    const callsBefore = await storeCalls(s);
    const rejectedBefore = (await samples(s, "keyguard_checksum_rejections_total"))[""] ?? 0;
    for (let i = 0; i < 50; i++) {
      expect(await s.verify(bad[i % bad.length]!)).toEqual({ valid: false, code: "NOT_FOUND" });
    }
    const callsAfter = await storeCalls(s);
    // The only store call a verification of such a key makes is the root key's authentication (the
    // verification-event and webhook-outbox calls are the service's own, on timers: none is noted
    // for NOT_FOUND).
    for (const [labels, count] of Object.entries(callsAfter)) {
      if (/Verifications"|Webhooks"/.test(labels)) continue;
      const expected = (callsBefore[labels] ?? 0) + (labels.includes('"rootKeyByHash"') ? 50 : 0);
      expect(count, labels).toBe(expected);
    }
    expect(callsAfter['{operation="keyByHash"}']).toBe(callsBefore['{operation="keyByHash"}']);
    expect((await samples(s, "keyguard_checksum_rejections_total"))[""]).toBe(rejectedBefore + 50);
    expect((await samples(s, "keyguard_verifications_total"))['{code="NOT_FOUND"}']).toBeGreaterThanOrEqual(50);

    // The prefix is covered by the checksum too.
    const readsBefore = (await storeCalls(s))['{operation="keyByHash"}'] ?? 0;
    expect(await s.verify(key.replace(/^sk_/, "pk_"))).toEqual({ valid: false, code: "NOT_FOUND" });
    expect((await storeCalls(s))['{operation="keyByHash"}'] ?? 0).toBe(readsBefore);
    // A key that passes its checksum but is unknown is looked up (and not counted as a rejection).
    const unknownButWellFormed = (await s.call("keys.createKey", { apiId })).body.data;
    await s.call("keys.deleteKey", { keyId: unknownButWellFormed.keyId, permanent: true });
    expect(await s.verify(unknownButWellFormed.key)).toEqual({ valid: false, code: "NOT_FOUND" });
    expect((await storeCalls(s))['{operation="keyByHash"}'] ?? 0).toBe(readsBefore + 1);
    expect((await samples(s, "keyguard_checksum_rejections_total"))[""]).toBe(rejectedBefore + 51);

    // keys.whoami too: 404 without a key read.
    const whoamiBefore = (await storeCalls(s))['{operation="keyByHash"}'] ?? 0;
    for (const k of bad) {
      const res = await s.call("keys.whoami", { key: k });
      expect(res.status).toBe(404);
      expect(res.body.error.detail).toBe("The specified key was not found.");
    }
    expect((await storeCalls(s))['{operation="keyByHash"}'] ?? 0).toBe(whoamiBefore);
    expect((await s.call("keys.whoami", { key })).status).toBe(200);
    expect((await storeCalls(s))['{operation="keyByHash"}'] ?? 0).toBe(whoamiBefore + 1);
  });

  it("the root key is still checked first: a bad root key is 401 whatever the key", async () => {
    const res = await s.call("keys.verifyKey", { key: "sk_kg0NotARealKeyAtAll1234567890ab" }, "not-a-root-key");
    expect(res.status).toBe(401);
  });
});
