// Hostile or oversized input: metadata depth and size limits, and the validator's cap on the
// number of problems it collects. The service must keep answering (and saving) afterwards.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Type from "typebox";
import { checkValue } from "../../../src/protocol/contract/check";
import { MAX_META_BYTES, MAX_META_DEPTH, Meta, strict, text } from "../../../src/protocol/contract/fields";
import { openConnection } from "../../../src/server/storage/sqlite/driver";
import { start, type Started } from "../helpers";

const dir = mkdtempSync(join(tmpdir(), "keyguard-robust-"));
const dataFile = join(dir, "keys.db");
let s: Started;
beforeAll(async () => {
  s = await start({ dataFile, rootKey: "root_robustnessTests1_4f1c9e27b8a35d60e2b7c41f9a0d8e36" });
});
afterAll(async () => {
  await s.close();
  rmSync(dir, { recursive: true, force: true });
});

/** `{"a":{"a":…1…}}` with `depth` nested objects, as raw JSON text (built without recursion). */
function nested(depth: number): string {
  return '{"a":'.repeat(depth - 1) + '{"a":1}' + "}".repeat(depth - 1);
}

describe("metadata limits", () => {
  it(`meta nested deeper than ${MAX_META_DEPTH} levels → 400 with errors[], for keys and identities`, async () => {
    const deep = nested(5000);
    const bodies: Array<[string, string]> = [
      ["keys.createKey", `{"apiId":"${s.apiId}","meta":${deep}}`],
      ["identities.createIdentity", `{"externalId":"deep","meta":${deep}}`],
      ["identities.updateIdentity", `{"identity":"deep","meta":${deep}}`],
      ["keys.updateKey", `{"keyId":"key_x","meta":${deep}}`],
    ];
    for (const [op, body] of bodies) {
      const res = await s.call(op, body);
      expect(res.status, op).toBe(400);
      expect(res.body.error.errors[0]).toMatchObject({ location: "body.meta", message: expect.stringMatching(/nested deeper than 32/) });
    }
    const justTooDeep = await s.call("keys.createKey", `{"apiId":"${s.apiId}","meta":${nested(MAX_META_DEPTH + 1)}}`);
    expect(justTooDeep.status).toBe(400);
    // Arrays count as levels too.
    const arrays = await s.call("keys.createKey", `{"apiId":"${s.apiId}","meta":{"a":${"[".repeat(40)}${"]".repeat(40)}}}`);
    expect(arrays.status).toBe(400);
  });

  it(`meta exactly ${MAX_META_DEPTH} levels deep is accepted and verifies`, async () => {
    const res = await s.call("keys.createKey", `{"apiId":"${s.apiId}","meta":${nested(MAX_META_DEPTH)}}`);
    expect(res.status).toBe(200);
    const verified = await s.verify(res.body.data.key);
    expect(verified).toMatchObject({ code: "VALID", meta: JSON.parse(nested(MAX_META_DEPTH)) });
  });

  it(`meta larger than ${MAX_META_BYTES} bytes serialized → 400`, async () => {
    const big = { blob: "x".repeat(MAX_META_BYTES) };
    const res = await s.call("keys.createKey", { apiId: s.apiId, meta: big });
    expect(res.status).toBe(400);
    expect(res.body.error.errors[0]).toMatchObject({ location: "body.meta", message: expect.stringMatching(/at most 65536 bytes/) });
    const fits = await s.call("keys.createKey", { apiId: s.apiId, meta: { blob: "x".repeat(MAX_META_BYTES - 20) } });
    expect(fits.status).toBe(200);
  });

  it("after hostile input the service still answers, saves and exports", async () => {
    await s.call("keys.createKey", `{"apiId":"${s.apiId}","meta":${nested(20_000)}}`);
    const { key, keyId } = await s.createKey({ meta: { ok: true } });
    expect(await s.verify(key)).toMatchObject({ code: "VALID", meta: { ok: true } });
    await expect(s.service.exportState()).resolves.toMatchObject({ version: 1 });
    const reader = await openConnection(dataFile);
    const saved = reader.prepare("SELECT data FROM keys WHERE id = ?").get(keyId) as { data: string };
    reader.close();
    expect(JSON.parse(saved.data)).toMatchObject({ meta: { ok: true } });
  });
});

describe("the validator's cap on problems", () => {
  it("stops reading a body once it has collected 20 problems", () => {
    let reads = 0;
    const fields = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`f${i}`, i]));
    const body = new Proxy(fields, {
      get(target, prop, receiver) {
        reads++;
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
    const errors = checkValue(strict({ key: text(), meta: Type.Optional(Meta) }), body);
    expect(errors).toHaveLength(20);
    expect(errors[0]).toMatchObject({ location: "body.key", message: "is required" });
    expect(reads).toBeLessThan(100);
  });

  it("a body with 60 000 unknown fields answers 400 with 20 problems", async () => {
    const body = Object.fromEntries(Array.from({ length: 60_000 }, (_, i) => [`f${i}`, 1]));
    const res = await s.call("keys.verifyKey", body);
    expect(res.status).toBe(400);
    expect(res.body.error.errors).toHaveLength(20);
  });
});
