// audit.listEvents over real HTTP: what a record tells (actor, targets, outcome, address, a
// description without secrets), the filters and the cursor, the NDJSON export, a change rolled
// back leaving no record, and a namespace created on first use leaving one.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyHash } from "../../../src/protocol/key-hash";
import { manualClock, start, type Started } from "../helpers";

describe("audit.listEvents", () => {
  const clock = manualClock();
  let s: Started;
  let deployer: { id: string; key: string };

  const events = async (body: Record<string, unknown> = {}) => {
    const res = await s.call("audit.listEvents", body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { data: Array<Record<string, unknown>>; pagination: { cursor?: string; hasMore: boolean } };
  };

  beforeAll(async () => {
    s = await start({ now: clock.now });
    const created = await s.call("rootKeys.createRootKey", { name: "deploy bot", permissions: ["api.*.create_key", "api.*.update_key"] });
    deployer = { id: created.body.data.keyId, key: created.body.data.key };
  });
  afterAll(() => s?.close());

  it("tells who changed what, from where, and describes the change without its secrets", async () => {
    clock.advance(1000);
    const res = await s.call("keys.createKey", { apiId: s.apiId, name: "billing", meta: { plan: "secret-plan" } }, deployer.key);
    expect(res.status).toBe(200);
    const { keyId, key } = res.body.data as { keyId: string; key: string };
    const [record] = (await events({ targetId: keyId })).data;
    expect(record).toEqual({
      id: expect.stringMatching(/^aud_/),
      time: clock.t,
      actorId: deployer.id,
      actorName: "deploy bot",
      operation: "keys.createKey",
      targets: [keyId, s.apiId],
      outcome: "success",
      requestId: res.body.meta.requestId,
      ip: "127.0.0.1",
      change: { apiId: s.apiId, name: "billing", meta: "(1 fields)" },
      // Its place in the workspace's audit chain (docs/security.md, "The audit chain").
      seq: expect.any(Number),
      prevHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      hash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const text = JSON.stringify(record);
    expect(text).not.toContain(key);
    expect(text).not.toContain(keyHash(key));
    expect(text).not.toContain("secret-plan");
  });

  it("records a refused attempt with the permission it lacked, and nothing for a change rolled back", async () => {
    const { keyId } = await s.createKey();
    const refused = await s.call("keys.deleteKey", { keyId }, deployer.key);
    expect(refused.status).toBe(403);
    // A 400 thrown inside the transaction: the change and its record go together.
    const rolledBack = await s.call("keys.updateKey", { keyId, credits: { refill: { interval: "daily", amount: 5 } } });
    expect(rolledBack.status).toBe(400);
    const history = (await events({ targetId: keyId })).data;
    expect(history.map((e) => [e.operation, e.outcome])).toEqual([
      ["keys.deleteKey", "refused"],
      ["keys.createKey", "success"],
    ]);
    expect(history[0]!.change).toMatchObject({ status: 403, permission: "api.<the key's apiId>.delete_key" });
  });

  it("filters by actor, operation and time range, and pages newest first with a cursor", async () => {
    const from = clock.t + 1;
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      const res = await s.call("keys.createKey", { apiId: s.apiId, name: `k${i}` }, deployer.key);
      made.push(res.body.data.keyId);
    }
    clock.advance(1000);
    await s.call("apis.createApi", { name: "other api" });
    const mine = { actorId: deployer.id, operation: "keys.createKey", since: from };
    expect((await events(mine)).data.map((e) => (e.targets as string[])[0])).toEqual([...made].reverse());
    expect((await events({ ...mine, until: from + 2000 })).data).toHaveLength(2);
    expect((await events({ since: clock.t })).data.map((e) => e.operation)).toEqual(["apis.createApi"]);
    // Pages of 2: every record once, in order.
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const res = await events({ ...mine, limit: 2, ...(cursor && { cursor }) });
      seen.push(...res.data.map((e) => (e.targets as string[])[0]!));
      if (!res.pagination.hasMore) break;
      cursor = res.pagination.cursor;
    }
    expect(seen).toEqual([...made].reverse());
  });

  it("refuses a time range that ends before it starts", async () => {
    const res = await s.call("audit.listEvents", { since: 10, until: 5 });
    expect(res.status).toBe(400);
    expect(res.body.error.errors[0]).toMatchObject({ location: "body.until" });
  });

  it("exports every matching record as NDJSON, whatever the page size", async () => {
    const all = (await events({ limit: 100 })).data;
    const res = await fetch(`${s.baseUrl}/v2/audit.listEvents`, {
      method: "POST",
      headers: { authorization: `Bearer ${s.rootKey}`, "content-type": "application/json", accept: "application/x-ndjson" },
      body: JSON.stringify({ limit: 1 }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/x-ndjson/);
    const lines = (await res.text()).split("\n");
    expect(lines.pop()).toBe("");
    expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual(all);
    const filtered = await fetch(`${s.baseUrl}/v2/audit.listEvents`, {
      method: "POST",
      headers: { authorization: `Bearer ${deployer.key}`, "content-type": "application/json", accept: "application/x-ndjson" },
      body: JSON.stringify({ actorId: deployer.id }),
    });
    expect(filtered.status).toBe(403);
  });

  it("records a rate-limit namespace created on first use, and no limit check after it", async () => {
    // Other tests of this file create namespaces too (in any order): count what these two calls add.
    const before = (await events({ operation: "ratelimit.limit" })).data.length;
    const body = { namespace: "audit.ns", identifier: "u", limit: 5, duration: 60_000 };
    expect((await s.call("ratelimit.limit", body)).status).toBe(200);
    expect((await s.call("ratelimit.limit", body)).status).toBe(200);
    const records = (await events({ operation: "ratelimit.limit" })).data;
    expect(records).toHaveLength(before + 1);
    // Newest first.
    expect(records[0]).toMatchObject({ change: { createdNamespace: "audit.ns" }, targets: [expect.stringMatching(/^rlns_/)] });
  });

  it("keeps a caller's string only as a name it gave a record or an id it resolved; describes every other", async () => {
    // Lower-case letters only: no shape tells them from a word, and no shape tells a key either.
    const secret = Array.from(randomBytes(28), (b) => "abcdefghijklmnopqrstuvwxyz"[b % 26]).join("");
    const limit = { namespace: "audit.override", identifier: "u", limit: 5, duration: 60_000 };
    expect((await s.call("ratelimit.limit", limit)).status).toBe(200);
    const res = await s.call("ratelimit.setOverride", { namespace: "audit.override", identifier: secret, limit: 5, duration: 60_000 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [record] = (await events({ operation: "ratelimit.setOverride" })).data;
    expect(record!.change).toEqual({ namespace: "audit.override", identifier: "(a string of 28 characters)", limit: 5, duration: 60_000 });
    expect(JSON.stringify(record)).not.toContain(secret);

    // A refused request's targets are the records of the workspace it named, looked up; any other string is not kept.
    // A root key without any permission: refused (403, or the 404 that hides a key it may not see).
    const bare = await s.service.createRootKey({ permissions: [] });
    const { keyId } = await s.createKey();
    for (const named of [keyId, secret, `key_${secret.slice(0, 22)}`]) {
      expect([403, 404]).toContain((await s.call("keys.deleteKey", { keyId: named }, bare.rootKey)).status);
    }
    const refusals = (await events({ operation: "keys.deleteKey" })).data.filter((e) => e.actorId !== deployer.id);
    expect(refusals.map((e) => [e.outcome, e.targets])).toContainEqual(["refused", [keyId]]);
    for (const e of refusals) expect((e.targets as string[]).filter((t) => t !== keyId)).toEqual([]);
    expect(JSON.stringify(refusals)).not.toContain(secret.slice(0, 22));
  });
});

describe("audit retention", () => {
  it("is a whole number of days from 1 to 3650", async () => {
    await expect(start({ auditRetentionDays: 0 })).rejects.toThrow(/auditRetentionDays/);
    await expect(start({ auditRetentionDays: 1.5 })).rejects.toThrow(/auditRetentionDays/);
  });
});
