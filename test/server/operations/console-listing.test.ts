// keyguard's own listing aids of the console: apis.listKeys' `search` (every key of the API, not
// a page) and ratelimit.listNamespaces (the namespaces ratelimit.limit created).
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { start, type Started } from "../helpers";

let s: Started;
beforeAll(async () => {
  s = await start();
});
afterAll(() => s.close());

const ids = (res: { body: { data: Array<{ keyId: string }> } }) => res.body.data.map((k) => k.keyId).sort();

describe("apis.listKeys { search }", () => {
  it("matches the id, the name or the start, in any case, across pages, with the owner filter too", async () => {
    const made: Array<{ keyId: string; name: string }> = [];
    for (let i = 0; i < 12; i++) {
      const name = i % 4 === 0 ? `Billing worker ${i}` : `reporting job ${i}`;
      made.push({ ...(await s.createKey({ name, ...(i === 8 ? { externalId: "acme" } : {}) })), name });
    }
    const billing = made.filter((k) => k.name.startsWith("Billing")).map((k) => k.keyId);
    expect(billing).toHaveLength(3);

    expect(ids(await s.call("apis.listKeys", { apiId: s.apiId, search: "bILLing" }))).toEqual([...billing].sort());
    // Paged: two at a time, every match once.
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 5; page++) {
      const res = await s.call("apis.listKeys", { apiId: s.apiId, search: "billing", limit: 2, ...(cursor ? { cursor } : {}) });
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((k: { keyId: string }) => k.keyId));
      if (!res.body.pagination.hasMore) break;
      cursor = res.body.pagination.cursor;
    }
    expect(seen.sort()).toEqual([...billing].sort());

    const one = made[5]!;
    expect(ids(await s.call("apis.listKeys", { apiId: s.apiId, search: one.keyId.slice(-10).toUpperCase() }))).toEqual([one.keyId]);
    const info = (await s.call("keys.getKey", { keyId: one.keyId })).body.data;
    expect(ids(await s.call("apis.listKeys", { apiId: s.apiId, search: info.start }))).toContain(one.keyId);

    expect(ids(await s.call("apis.listKeys", { apiId: s.apiId, externalId: "acme", search: "billing" }))).toEqual([made[8]!.keyId]);
    expect(ids(await s.call("apis.listKeys", { apiId: s.apiId, externalId: "acme", search: "reporting" }))).toEqual([]);
    expect((await s.call("apis.listKeys", { apiId: s.apiId, search: "nothing like this" })).body).toMatchObject({
      data: [],
      pagination: { hasMore: false },
    });
    expect((await s.call("apis.listKeys", { apiId: s.apiId, search: "" })).status).toBe(400);
  });

  it("reads past the first thousand keys: a match near the end of a large API is found", async () => {
    const { apiId } = (await s.call("apis.createApi", { name: "large" })).body.data;
    const { migrationId } = await s.service.createKeyMigration();
    for (let from = 0; from < 2500; from += 500) {
      const keys = Array.from({ length: 500 }, (_, i) => ({
        hash: createHash("sha256")
          .update(`large-${from + i}`)
          .digest("base64"),
        name: `large-${String(from + i).padStart(4, "0")}`,
      }));
      expect((await s.call("keys.migrateKeys", { migrationId, apiId, keys })).status).toBe(200);
    }
    const res = await s.call("apis.listKeys", { apiId, search: "large-24", limit: 10 });
    expect(res.status).toBe(200);
    // Keys are listed in id order, which is the order they were created in.
    expect(res.body.data.map((k: { name: string }) => k.name)).toEqual(Array.from({ length: 10 }, (_, i) => `large-240${i}`));
    const next = await s.call("apis.listKeys", { apiId, search: "large-24", limit: 95, cursor: res.body.pagination.cursor });
    expect(next.body.data).toHaveLength(90);
    expect(next.body.data.at(-1).name).toBe("large-2499");
    expect(next.body.pagination).toEqual({ hasMore: false });
  });
});

describe("ratelimit.listNamespaces", () => {
  it("lists the namespaces ratelimit.limit created, and only those the root key may read the overrides of", async () => {
    expect((await s.call("ratelimit.listNamespaces", {})).body).toMatchObject({ data: [], pagination: { hasMore: false } });
    for (const namespace of ["email.outbound", "api.requests", "sms.sign_up"]) {
      expect((await s.call("ratelimit.limit", { namespace, identifier: "u1", limit: 5, duration: 60_000 })).status).toBe(200);
    }
    const all = await s.call("ratelimit.listNamespaces", {});
    expect(all.status).toBe(200);
    expect(all.body.data.map((n: { name: string }) => n.name).sort()).toEqual(["api.requests", "email.outbound", "sms.sign_up"]);
    for (const ns of all.body.data)
      expect(ns).toEqual({ namespaceId: expect.stringMatching(/^rlns_/), name: expect.any(String), createdAt: expect.any(Number) });

    const first = await s.call("ratelimit.listNamespaces", { limit: 2 });
    expect(first.body.data).toHaveLength(2);
    const rest = await s.call("ratelimit.listNamespaces", { limit: 2, cursor: first.body.pagination.cursor });
    expect([...first.body.data, ...rest.body.data]).toEqual(all.body.data);

    const email = all.body.data.find((n: { name: string }) => n.name === "email.outbound");
    const narrow = (await s.service.createRootKey({ permissions: [`ratelimit.${email.namespaceId}.read_override`] })).rootKey;
    expect((await s.call("ratelimit.listNamespaces", {}, narrow)).body.data).toEqual([email]);
    const none = (await s.service.createRootKey({ permissions: ["api.*.read_api"] })).rootKey;
    const nothing = await s.call("ratelimit.listNamespaces", {}, none);
    expect(nothing.status).toBe(200);
    expect(nothing.body.data).toEqual([]);
  });
});
