// keyguard's own operations: rootKeys.createRootKey / listRootKeys / deleteRootKey and
// apis.listApis, over HTTP with root keys of chosen permissions.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memoryStorage } from "keyguard/server";
import { manualClock, start, type CallResult, type Started } from "../helpers";
import { overriding } from "../../support/storage-wrapper";

let s: Started;
beforeAll(async () => {
  s = await start();
});
afterAll(async () => {
  await s.close();
});

async function rootKeyWith(permissions: string[], name?: string): Promise<{ keyId: string; key: string }> {
  const res = await s.call("rootKeys.createRootKey", { permissions, ...(name ? { name } : {}) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

describe("rootKeys.*", () => {
  it("creates a root key that works at once with exactly its permissions, answered once and listed without the key", async () => {
    const name = `reader-${Math.random().toString(36).slice(2)}`;
    const created = await rootKeyWith(["api.*.read_api"], name);
    expect(created.keyId).toMatch(/^rk_/);
    expect(created.key).toMatch(/^root_/);
    expect((await s.call("apis.getApi", { apiId: s.apiId }, created.key)).status).toBe(200);
    const refused = await s.call("apis.createApi", { name: "not allowed" }, created.key);
    expect(refused.status).toBe(403);
    expect(refused.body.error.detail).toContain("api.*.create_api");

    const listed = await s.call("rootKeys.listRootKeys", {});
    expect(listed.status).toBe(200);
    const mine = listed.body.data.find((k: { keyId: string }) => k.keyId === created.keyId);
    expect(mine).toMatchObject({ keyId: created.keyId, name, permissions: ["api.*.read_api"] });
    expect(JSON.stringify(listed.body)).not.toContain(created.key);
  });

  it("refuses to grant a permission the caller does not hold", async () => {
    const limited = await rootKeyWith(["workspace.*.create_root_key", "api.*.read_api"]);
    const res = await s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api", "api.*.delete_api"] }, limited.key);
    expect(res.status).toBe(403);
    expect(res.body.error.detail).toBe(
      "A root key can only grant permissions it holds itself; this one lacks those of body.permissions[1]",
    );
    expect((await s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"] }, limited.key)).status).toBe(200);
  });

  it("checks the permission tuples and needs the rootKeys permissions", async () => {
    const bad = await s.call("rootKeys.createRootKey", { permissions: ["not a tuple"] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.detail).toContain("permissions[0]");
    const empty = await s.call("rootKeys.createRootKey", { permissions: [] });
    expect(empty.status).toBe(400);
    const plain = await rootKeyWith(["api.*.read_api"]);
    for (const [op, body, perm] of [
      ["rootKeys.createRootKey", { permissions: ["api.*.read_api"] }, "workspace.*.create_root_key"],
      ["rootKeys.listRootKeys", {}, "workspace.*.read_root_key"],
      ["rootKeys.deleteRootKey", { keyId: plain.keyId }, "workspace.*.delete_root_key"],
    ] as const) {
      const res = await s.call(op, body, plain.key);
      expect(res.status, op).toBe(403);
      expect(res.body.error.detail).toContain(perm);
    }
  });

  it("deletes a root key (it stops working), but not the one making the request nor another workspace's", async () => {
    const doomed = await rootKeyWith(["api.*.read_api"]);
    expect((await s.call("rootKeys.deleteRootKey", { keyId: doomed.keyId })).status).toBe(200);
    expect((await s.call("apis.getApi", { apiId: s.apiId }, doomed.key)).status).toBe(401);
    const again = await s.call("rootKeys.deleteRootKey", { keyId: doomed.keyId });
    expect(again.status).toBe(404);

    const deleter = await rootKeyWith(["workspace.*.delete_root_key"]);
    const self = await s.call("rootKeys.deleteRootKey", { keyId: deleter.keyId }, deleter.key);
    expect(self.status).toBe(400);
    expect(self.body.error.detail).toContain("cannot delete itself");

    const other = await s.service.createWorkspace({ name: "other" });
    const foreign = await s.service.createRootKey({ workspaceId: other.workspaceId, permissions: ["api.*.read_api"] });
    const listed = await s.call("rootKeys.listRootKeys", {}, foreign.rootKey);
    expect(listed.status).toBe(403);
    const own = await s.call("rootKeys.listRootKeys", {});
    const ids: string[] = own.body.data.map((k: { keyId: string }) => k.keyId);
    const foreignRecords = Object.values((await s.service.exportState()).rootKeys).filter((r) => r.workspaceId === other.workspaceId);
    expect(foreignRecords.length).toBeGreaterThan(0);
    for (const r of foreignRecords) {
      expect(ids).not.toContain(r.id);
      expect((await s.call("rootKeys.deleteRootKey", { keyId: r.id })).status).toBe(404);
    }
  });
});

describe("a weaker root key never removes a stronger one", () => {
  it("deletes only root keys whose permissions it holds itself (or through their wildcard form)", async () => {
    const weak = await rootKeyWith(["workspace.*.delete_root_key", "workspace.*.read_root_key"]);
    const bootstrapId = (await s.call("rootKeys.listRootKeys", {})).body.data.find((k: { permissions: string[] }) =>
      k.permissions.includes("api.*.create_api"),
    ).keyId;
    const stronger = await rootKeyWith(["api.*.read_api"]);
    for (const keyId of [bootstrapId, stronger.keyId]) {
      const res = await s.call("rootKeys.deleteRootKey", { keyId }, weak.key);
      expect(res.status).toBe(403);
      expect(res.body.error.type).toMatch(/\/authorization\/insufficient_permissions$/);
      expect(res.body.error.detail).toMatch(/^A root key can only delete root keys whose permissions it holds itself; this one lacks: /);
    }
    // Both still work: nothing was deleted.
    expect((await s.call("apis.getApi", { apiId: s.apiId })).status).toBe(200);
    expect((await s.call("apis.getApi", { apiId: s.apiId }, stronger.key)).status).toBe(200);

    // A key with the same or fewer permissions (a wildcard covers an API's own tuple) may go.
    const equal = await rootKeyWith(["workspace.*.read_root_key"]);
    expect((await s.call("rootKeys.deleteRootKey", { keyId: equal.keyId }, weak.key)).status).toBe(200);
    const scoped = await rootKeyWith(["api.*.read_api", "workspace.*.delete_root_key"]);
    const narrower = await rootKeyWith([`api.${s.apiId}.read_api`]);
    expect((await s.call("rootKeys.deleteRootKey", { keyId: narrower.keyId }, scoped.key)).status).toBe(200);
    // A missing key is still 404 (not 403), whatever the caller holds.
    expect((await s.call("rootKeys.deleteRootKey", { keyId: narrower.keyId }, weak.key)).status).toBe(404);
  });
});

describe("apis.listApis", () => {
  it("lists the workspace's APIs the root key may read, paginated", async () => {
    const names = ["list-a", "list-b", "list-c"].map((n) => `${n}-${Math.random().toString(36).slice(2)}`);
    const ids: string[] = [];
    for (const name of names) ids.push((await s.call("apis.createApi", { name })).body.data.apiId);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 50; i++) {
      const res = await s.call("apis.listApis", { limit: 2, ...(cursor ? { cursor } : {}) });
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data.map((a: { id: string }) => a.id));
      if (!res.body.pagination.hasMore) break;
      cursor = res.body.pagination.cursor;
    }
    expect(seen).toEqual(expect.arrayContaining([s.apiId, ...ids]));
    expect(new Set(seen).size).toBe(seen.length);

    const one = await rootKeyWith([`api.${ids[1]}.read_api`]);
    const scoped = await s.call("apis.listApis", {}, one.key);
    expect(scoped.body.data).toEqual([expect.objectContaining({ id: ids[1], name: names[1] })]);
  });
});

describe("root keys with less reach: expiry, IP allow-list, last use, the bootstrap key's name", () => {
  const ROOT_KEY_NOT_FOUND = /\/svc\/authentication\/key_not_found$/;

  it("refuses a root key past its expires as an unknown one (401), and lists its expiry", async () => {
    const clock = manualClock();
    const t = await start({ now: clock.now });
    try {
      const created = await t.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"], expires: clock.t + 60_000 });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const { key, keyId } = created.body.data as { key: string; keyId: string };
      expect((await t.call("apis.getApi", { apiId: t.apiId }, key)).status).toBe(200);
      clock.advance(60_000);
      const refused = await t.call("apis.getApi", { apiId: t.apiId }, key);
      expect(refused.status).toBe(401);
      expect(refused.body.error.type).toMatch(ROOT_KEY_NOT_FOUND);
      expect(refused.body.error.detail).toBe("The provided root key has expired. Use another root key.");
      const listed = (await t.call("rootKeys.listRootKeys", {})).body.data.find((k: { keyId: string }) => k.keyId === keyId);
      expect(listed).toMatchObject({ keyId, expires: clock.t });
    } finally {
      await t.close();
    }
  });

  it("accepts a root key only from the addresses of its allow-list, X-Forwarded-For only with trustProxy", async () => {
    const direct = await rootKeyWith(["api.*.read_api"]);
    const local = await s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"], ipWhitelist: ["127.0.0.1", "::1"] });
    const elsewhere = await s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"], ipWhitelist: ["203.0.113.0/24"] });
    expect([local.status, elsewhere.status]).toEqual([200, 200]);
    // makeCall's init replaces its headers: these carry the root key themselves.
    const forwarded = (key: string, ip: string) => ({
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-forwarded-for": ip },
    });
    expect((await s.call("apis.getApi", { apiId: s.apiId }, direct.key)).status).toBe(200);
    expect((await s.call("apis.getApi", { apiId: s.apiId }, local.body.data.key)).status).toBe(200);
    // Without trustProxy the header counts for nothing: the socket's address (loopback) is not on the list.
    const refused = await s.call(
      "apis.getApi",
      { apiId: s.apiId },
      elsewhere.body.data.key,
      forwarded(elsewhere.body.data.key, "203.0.113.7"),
    );
    expect(refused.status).toBe(401);
    expect(refused.body.error.type).toMatch(ROOT_KEY_NOT_FOUND);
    expect(refused.body.error.detail).toContain("not accepted from this address");

    // Behind a proxy (trustProxy, the setting of the keys' allow-lists): the last X-Forwarded-For
    // entry, the one the proxy added; what the caller put before it opens nothing.
    const proxied = await start({ trustProxy: true });
    try {
      const created = await proxied.call("rootKeys.createRootKey", {
        permissions: ["api.*.read_api"],
        ipWhitelist: ["203.0.113.0/24", "2001:db8::/32"],
      });
      const key = created.body.data.key as string;
      const from = (ip: string) => proxied.call("apis.getApi", { apiId: proxied.apiId }, key, forwarded(key, `10.0.0.1, ${ip}`));
      expect((await from("203.0.113.7")).status).toBe(200);
      expect((await from("2001:db8::1")).status).toBe(200);
      expect((await from("198.51.100.7")).status).toBe(401);
      expect((await proxied.call("apis.getApi", { apiId: proxied.apiId }, key)).status).toBe(401);
      const spoofed = await proxied.call("apis.getApi", { apiId: proxied.apiId }, key, forwarded(key, "203.0.113.7, 198.51.100.7"));
      expect(spoofed.status).toBe(401);
    } finally {
      await proxied.close();
    }
  });

  it("checks the allow-list's entries (400 naming the entry) and the expiry's range", async () => {
    const bad = await s.call("rootKeys.createRootKey", {
      permissions: ["api.*.read_api"],
      ipWhitelist: ["10.0.0.0/8", "10.0.0.0/33", "nonsense"],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.errors.map((e: { location: string }) => e.location)).toEqual(["body.ipWhitelist[1]", "body.ipWhitelist[2]"]);
    const late = await s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"], expires: 1e15 });
    expect(late.status).toBe(400);
    expect(late.body.error.detail).toContain("body.expires");
  });

  it("lists when each root key was last used, written at most once a minute per key", async () => {
    const clock = manualClock();
    const store = memoryStorage();
    let writes = 0;
    const counted = new Proxy(store.direct, {
      get(target, name) {
        const value: unknown = Reflect.get(target, name);
        if (name !== "markUsed") return typeof value === "function" ? (value as () => unknown).bind(target) : value;
        return (uses: ReadonlyMap<string, number>) => {
          writes++;
          return target.markUsed(uses);
        };
      },
    });
    const t = await start({ now: clock.now, storage: overriding(store, { direct: counted }) });
    try {
      const { keyId, key } = (await t.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"] })).body.data as {
        keyId: string;
        key: string;
      };
      const lastUsedAt = async () =>
        (await t.call("rootKeys.listRootKeys", {})).body.data.find((k: { keyId: string }) => k.keyId === keyId).lastUsedAt as
          number | undefined;
      expect(await lastUsedAt()).toBeUndefined();
      const first = clock.t;
      const before = writes;
      for (let i = 0; i < 5; i++) {
        expect((await t.call("apis.getApi", { apiId: t.apiId }, key)).status).toBe(200);
        clock.advance(10_000);
      }
      await expect.poll(lastUsedAt).toBe(first);
      // Five requests in 50 s of one root key: one write (the bootstrap key was written at the start, under a minute ago).
      expect(writes - before).toBe(1);
      clock.advance(20_000);
      expect((await t.call("apis.getApi", { apiId: t.apiId }, key)).status).toBe(200);
      await expect.poll(lastUsedAt).toBe(first + 70_000);
    } finally {
      await t.close();
    }
  });

  it("changes a root key's expiry, allow-list and name (rootKeys.updateRootKey), not its own nor a stronger one's", async () => {
    const target = await rootKeyWith(["api.*.read_api"], "to change");
    const update = (body: Record<string, unknown>, as?: string) => s.call("rootKeys.updateRootKey", { keyId: target.keyId, ...body }, as);
    const fenced = await update({ ipWhitelist: ["203.0.113.0/24"], expires: 4_000_000_000_000 });
    expect(fenced.status, JSON.stringify(fenced.body)).toBe(200);
    expect(fenced.body.data).toMatchObject({
      keyId: target.keyId,
      name: "to change",
      ipWhitelist: ["203.0.113.0/24"],
      expires: 4_000_000_000_000,
    });
    expect((await s.call("apis.getApi", { apiId: s.apiId }, target.key)).status).toBe(401);
    const opened = await update({ ipWhitelist: [], expires: null, name: null });
    expect(opened.status).toBe(200);
    expect(opened.body.data).not.toHaveProperty("ipWhitelist");
    expect(opened.body.data).not.toHaveProperty("expires");
    expect(opened.body.data).not.toHaveProperty("name");
    expect((await s.call("apis.getApi", { apiId: s.apiId }, target.key)).status).toBe(200);

    const bad = await update({ ipWhitelist: ["300.1.1.1"] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.errors[0].location).toBe("body.ipWhitelist[0]");
    // A weaker root key loosens no stronger one, and no root key frees itself.
    const updater = await rootKeyWith(["workspace.*.update_root_key"]);
    const weaker = await update({ ipWhitelist: [] }, updater.key);
    expect(weaker.status).toBe(403);
    expect(weaker.body.error.detail).toContain("api.*.read_api");
    const self = await s.call("rootKeys.updateRootKey", { keyId: updater.keyId, expires: null }, updater.key);
    expect(self.status).toBe(400);
    expect(self.body.error.detail).toContain("cannot change itself");
  });

  it("names the operator's root key bootstrap, in the list and as the audit log's actor", async () => {
    const listed = (await s.call("rootKeys.listRootKeys", {})).body.data as Array<{ keyId: string; name?: string; lastUsedAt?: number }>;
    const bootstrap = listed.filter((k) => k.name === "bootstrap");
    expect(bootstrap).toHaveLength(1);
    await s.call("apis.createApi", { name: `named-${Math.random().toString(36).slice(2)}` });
    const [record] = (await s.call("audit.listEvents", { actorId: bootstrap[0]!.keyId, limit: 1 })).body.data;
    expect(record).toMatchObject({ actorId: bootstrap[0]!.keyId, actorName: "bootstrap", operation: "apis.createApi" });
  });

  it("names a bootstrap root key stored without a name by an earlier version when the service starts again", async () => {
    const store = memoryStorage();
    const rootKey = `root_${randomBytes(24).toString("hex")}`;
    const first = await start({ storage: store, rootKey });
    const id = (await first.call("rootKeys.listRootKeys", {})).body.data[0].keyId as string;
    await first.close();
    await store.transaction(async (tx) => {
      const record = (await tx.get("rootKeys", id))!;
      delete record.name;
      await tx.put("rootKeys", record);
    });
    const second = await start({ storage: store, rootKey });
    try {
      expect((await second.call("rootKeys.listRootKeys", {})).body.data).toEqual([
        expect.objectContaining({ keyId: id, name: "bootstrap" }),
      ]);
    } finally {
      await second.close();
    }
  });
});

describe("a root key never makes or leaves another with more reach than itself", () => {
  const DAY = 86_400_000;
  // The test server is reached over loopback: this fence lets the caller in.
  const FENCE = ["127.0.0.0/8", "::1"];
  const FORBIDDEN = /\/authorization\/insufficient_permissions$/;

  async function fencedCaller(expires: number): Promise<{ keyId: string; key: string }> {
    const res = await s.call("rootKeys.createRootKey", {
      permissions: ["workspace.*.create_root_key", "workspace.*.update_root_key", "api.*.read_api"],
      expires,
      ipWhitelist: FENCE,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data;
  }

  /** The 403 names the field and never repeats the caller's values. */
  function expectRefused(res: CallResult, field: string, expires: number): void {
    expect(res.status, JSON.stringify(res.body)).toBe(403);
    expect(res.body.error.type).toMatch(FORBIDDEN);
    expect(res.body.error.detail).toContain("reach no further than itself");
    expect(res.body.error.detail).toContain(field);
    for (const value of [String(expires), "127.0.0", "::1", "10.0.0.0"]) expect(res.body.error.detail).not.toContain(value);
  }

  it("refuses a child with no expiry, a later one, no allow-list or a wider range; grants one within its fence", async () => {
    const expires = Date.now() + DAY;
    const caller = await fencedCaller(expires);
    const create = (body: Record<string, unknown>) =>
      s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"], ...body }, caller.key);

    expectRefused(await create({ ipWhitelist: ["127.0.0.1"] }), "body.expires", expires);
    expectRefused(await create({ ipWhitelist: ["127.0.0.1"], expires: expires + 1 }), "body.expires", expires);
    expectRefused(await create({ expires }), "body.ipWhitelist", expires);
    expectRefused(await create({ expires, ipWhitelist: [] }), "body.ipWhitelist", expires);
    const wider = await create({ expires, ipWhitelist: ["127.0.0.1", "10.0.0.0/8", "0.0.0.0/0", "::/0"] });
    expectRefused(wider, "body.ipWhitelist[1], body.ipWhitelist[2], body.ipWhitelist[3] lie outside", expires);
    expect(wider.body.error.detail).not.toContain("body.ipWhitelist[0]");
    // Both fields wrong: both named.
    const both = await create({});
    expectRefused(both, "body.expires", expires);
    expect(both.body.error.detail).toContain("body.ipWhitelist");

    const within = await create({ expires: expires - 1000, ipWhitelist: ["127.0.0.1", "127.0.0.0/16", "::1/128"] });
    expect(within.status, JSON.stringify(within.body)).toBe(200);
    expect((await s.call("apis.getApi", { apiId: s.apiId }, within.body.data.key)).status).toBe(200);
    const same = await create({ expires, ipWhitelist: FENCE });
    expect(same.status, JSON.stringify(same.body)).toBe(200);
  });

  it("applies to the expiry alone and to the allow-list alone", async () => {
    const byDate = await s.call("rootKeys.createRootKey", {
      permissions: ["workspace.*.create_root_key", "api.*.read_api"],
      expires: Date.now() + DAY,
    });
    const dated = byDate.body.data.key as string;
    expect((await s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"] }, dated)).status).toBe(403);
    const okDated = await s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"], expires: Date.now() + 1000 }, dated);
    expect(okDated.status, JSON.stringify(okDated.body)).toBe(200);

    const byPlace = await s.call("rootKeys.createRootKey", {
      permissions: ["workspace.*.create_root_key", "api.*.read_api"],
      ipWhitelist: FENCE,
    });
    const placed = byPlace.body.data.key as string;
    expect((await s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"] }, placed)).status).toBe(403);
    const okPlaced = await s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"], ipWhitelist: ["127.0.0.1"] }, placed);
    expect(okPlaced.status, JSON.stringify(okPlaced.body)).toBe(200);
  });

  it("refuses an update that would lift another key's fence or leave it wider; allows one within", async () => {
    const expires = Date.now() + DAY;
    const caller = await fencedCaller(expires);
    const target = await s.call("rootKeys.createRootKey", {
      permissions: ["api.*.read_api"],
      expires: expires - 1000,
      ipWhitelist: ["127.0.0.1"],
    });
    expect(target.status).toBe(200);
    const keyId = target.body.data.keyId as string;
    const update = (body: Record<string, unknown>, as = caller.key) => s.call("rootKeys.updateRootKey", { keyId, ...body }, as);

    expectRefused(await update({ expires: null }), "body.expires", expires);
    expectRefused(await update({ expires: expires + DAY }), "body.expires", expires);
    expectRefused(await update({ ipWhitelist: [] }), "body.ipWhitelist", expires);
    expectRefused(await update({ ipWhitelist: ["10.0.0.0/8"] }), "body.ipWhitelist[0] lies outside", expires);
    // Nothing changed: the record is as it was.
    const listed = (await s.call("rootKeys.listRootKeys", {})).body.data.find((k: { keyId: string }) => k.keyId === keyId);
    expect(listed).toMatchObject({ expires: expires - 1000, ipWhitelist: ["127.0.0.1"] });

    const narrower = await update({ expires: expires - 2000, ipWhitelist: ["127.0.0.1", "::1"], name: "narrow" });
    expect(narrower.status, JSON.stringify(narrower.body)).toBe(200);

    // A key the caller did not fence: changing anything of it must bring it inside the fence.
    const open = await s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"] });
    const renamed = await s.call("rootKeys.updateRootKey", { keyId: open.body.data.keyId, name: "renamed" }, caller.key);
    expectRefused(renamed, "body.expires", expires);
    expect(renamed.body.error.detail).toContain("body.ipWhitelist must hold");
    const fenced = await s.call("rootKeys.updateRootKey", { keyId: open.body.data.keyId, expires, ipWhitelist: ["127.0.0.1"] }, caller.key);
    expect(fenced.status, JSON.stringify(fenced.body)).toBe(200);
  });

  it("leaves the unfenced bootstrap key free to make and change root keys of any reach", async () => {
    const free = await s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"] });
    expect(free.status).toBe(200);
    const keyId = free.body.data.keyId as string;
    const fenced = await s.call("rootKeys.updateRootKey", { keyId, expires: Date.now() + DAY, ipWhitelist: ["10.0.0.0/8"] });
    expect(fenced.status).toBe(200);
    const lifted = await s.call("rootKeys.updateRootKey", { keyId, expires: null, ipWhitelist: [] });
    expect(lifted.status).toBe(200);
    expect((await s.call("apis.getApi", { apiId: s.apiId }, free.body.data.key)).status).toBe(200);
  });
});
