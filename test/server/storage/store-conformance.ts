// The store conformance suite: what every storage backend of the local key service must do, as
// `src/local/storage.ts` documents it. Each backend's test file calls `describeStoreConformance`.
// One store is opened per suite; every test works in workspaces and counters of its own.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Storage } from "../../../src/server/storage/seam";
import type {
  ApiRecord,
  IdentityRecord,
  KeyRecord,
  PermissionRecord,
  PortalRecord,
  PortalSessionRecord,
  RatelimitNamespaceRecord,
  RatelimitOverrideRecord,
  RoleRecord,
  RootKeyRecord,
  VerificationEvent,
} from "../../../src/server/records";
import { parseAnalyticsQuery } from "../../../src/server/analytics/query-check";
import { describeAuditLog } from "./audit-conformance";
import { describeWebhookOutbox } from "./outbox-conformance";
import { describeExpiryNotices } from "./expiry-conformance";
import { keyRecord } from "../../support/records";

const uid = (): string => randomBytes(6).toString("hex");

export function describeStoreConformance(name: string, open: () => Promise<Storage>, options: { skip?: string } = {}): void {
  describe.skipIf(options.skip !== undefined)(`store conformance: ${name}`, () => {
    let store: Storage;
    beforeAll(async () => {
      store = await open();
    });
    afterAll(async () => {
      await store?.close();
    });

    const ws = (): string => `ws_${uid()}`;
    const key = (workspaceId: string, over: Partial<KeyRecord> = {}): KeyRecord =>
      keyRecord({ id: `key_${uid()}`, workspaceId, apiId: "api_x", createdAt: 1_700_000_000_000, ...over });
    const put = (k: KeyRecord) => store.transaction((tx) => tx.put("keys", k));

    describe("records", () => {
      it("keeps every table's records and returns them by id", async () => {
        const w = ws();
        const api: ApiRecord = {
          id: `api_${uid()}`,
          workspaceId: w,
          name: "payments",
          createdAt: 1,
          ipWhitelist: ["127.0.0.1"],
          storeKeys: true,
        };
        const perm: PermissionRecord = {
          id: `perm_${uid()}`,
          workspaceId: w,
          name: "Read",
          slug: "docs.read",
          description: "d",
          createdAt: 2,
        };
        const role: RoleRecord = { id: `role_${uid()}`, workspaceId: w, name: "admin", permissionIds: [perm.id], createdAt: 3 };
        const ident: IdentityRecord = {
          id: `id_${uid()}`,
          workspaceId: w,
          externalId: "user_1",
          meta: { plan: "pro", nested: { a: [1, 2] } },
          ratelimits: [{ id: `rl_${uid()}`, name: "req", limit: 10, duration: 60_000, autoApply: true }],
          createdAt: 4,
        };
        const root: RootKeyRecord = {
          id: `rk_${uid()}`,
          workspaceId: w,
          hash: randomBytes(32).toString("base64"),
          permissions: ["api.*.verify_key"],
          createdAt: 5,
        };
        const k = key(w, {
          apiId: api.id,
          prefix: "sk",
          encrypted: "v1.aXZpdml2aXZpdml2.dGFndGFndGFndGFndGFn.Ym9keQ",
          name: "n",
          meta: { tier: 1, flags: [true, null] },
          updatedAt: 7,
          expires: 9_000_000_000_000,
          identityId: ident.id,
          permissionIds: [perm.id],
          roleIds: [role.id],
          credits: { remaining: 5, refill: { interval: "monthly", amount: 10, refillDay: 31 }, lastRefillAt: 6 },
          ratelimits: [{ id: `rl_${uid()}`, name: "burst", limit: 3, duration: 1000, autoApply: false }],
        });
        await store.transaction(async (tx) => {
          await tx.put("workspaces", { id: w, name: "w", createdAt: 0 });
          await tx.put("apis", api);
          await tx.put("permissions", perm);
          await tx.put("roles", role);
          await tx.put("identities", ident);
          await tx.put("rootKeys", root);
          await tx.put("keys", k);
        });
        const tx = store.direct;
        expect(await tx.get("workspaces", w)).toEqual({ id: w, name: "w", createdAt: 0 });
        expect(await tx.get("apis", api.id)).toEqual(api);
        expect(await tx.get("permissions", perm.id)).toEqual(perm);
        expect(await tx.get("roles", role.id)).toEqual(role);
        expect(await tx.get("identities", ident.id)).toEqual(ident);
        expect(await tx.get("rootKeys", root.id)).toEqual(root);
        expect(await tx.get("keys", k.id)).toEqual(k);
        expect(await tx.keyByHash(k.hash)).toEqual(k);
        expect(await tx.rootKeyByHash(root.hash)).toEqual(root);
      });

      it("keeps absent optional fields absent and empty lists empty", async () => {
        const k = key(ws());
        await put(k);
        const got = (await store.direct.get("keys", k.id))!;
        for (const field of ["prefix", "name", "meta", "updatedAt", "expires", "identityId", "credits"]) {
          expect(Object.hasOwn(got, field), field).toBe(false);
        }
        expect(got.permissionIds).toEqual([]);
        expect(got.roleIds).toEqual([]);
        expect(got.ratelimits).toEqual([]);
      });

      it("answers undefined for unknown ids and hashes, whatever the string", async () => {
        for (const id of ["nope", "__proto__", "constructor", "toString", "", "' OR 1=1 --"]) {
          expect(await store.direct.get("keys", id)).toBeUndefined();
          expect(await store.direct.get("apis", id)).toBeUndefined();
          expect(await store.direct.keyByHash(id)).toBeUndefined();
          expect(await store.direct.rootKeyByHash(id)).toBeUndefined();
        }
      });

      it("returns copies: changing a returned record changes nothing until put", async () => {
        const k = key(ws(), { name: "before", meta: { a: 1 }, credits: { remaining: 3, lastRefillAt: 0 } });
        await put(k);
        const got = (await store.direct.get("keys", k.id))!;
        got.name = "after";
        got.permissionIds.push("perm_x");
        (got.meta as Record<string, unknown>).a = 2;
        got.credits!.remaining = 99;
        k.name = "changed-after-put";
        expect(await store.direct.get("keys", k.id)).toEqual({ ...k, name: "before" });
      });

      it("keeps a meta field named __proto__ as an own field, copied like any other", async () => {
        const k = key(ws(), { meta: JSON.parse('{"__proto__":{"plan":"pro"},"a":[1,{"b":2}]}') as Record<string, unknown> });
        await put(k);
        // The fields as stored (key order is the store's own: PostgreSQL's jsonb sorts them).
        const fields = async () => {
          const meta = (await store.direct.get("keys", k.id))!.meta!;
          expect(Object.getPrototypeOf(meta)).toBe(Object.prototype);
          return { proto: Object.getOwnPropertyDescriptor(meta, "__proto__")?.value as Record<string, unknown>, a: meta.a as unknown[] };
        };
        const got = await fields();
        expect(got).toEqual({ proto: { plan: "pro" }, a: [1, { b: 2 }] });
        got.proto.plan = "free";
        (got.a[1] as Record<string, unknown>).b = 3;
        expect(await fields()).toEqual({ proto: { plan: "pro" }, a: [1, { b: 2 }] });
      });

      it("put replaces the whole record, removing fields that are gone", async () => {
        const k = key(ws(), { name: "n", expires: 5, credits: { remaining: 3, lastRefillAt: 0 } });
        await put(k);
        const { name: _n, expires: _e, credits: _c, ...rest } = k;
        const next: KeyRecord = { ...rest, enabled: false, updatedAt: 10 };
        await put(next);
        const got = (await store.direct.get("keys", k.id))!;
        expect(got).toEqual(next);
        expect(Object.hasOwn(got, "name")).toBe(false);
        expect(Object.hasOwn(got, "credits")).toBe(false);
      });

      it("a changed hash moves the hash lookup", async () => {
        const k = key(ws());
        await put(k);
        const old = k.hash;
        const moved = { ...k, hash: randomBytes(32).toString("base64") };
        await put(moved);
        expect(await store.direct.keyByHash(old)).toBeUndefined();
        expect((await store.direct.keyByHash(moved.hash))?.id).toBe(k.id);
      });

      it("keeps the service's meta values", async () => {
        const name = `bootstrap_${uid()}`;
        expect(await store.direct.getMeta(name)).toBeUndefined();
        await store.transaction((tx) => tx.setMeta(name, '{"a":1}'));
        expect(await store.direct.getMeta(name)).toBe('{"a":1}');
        await store.transaction((tx) => tx.setMeta(name, "2"));
        expect(await store.direct.getMeta(name)).toBe("2");
      });
    });

    describe("find and list", () => {
      it("finds by indexed fields within one workspace, ordered by id", async () => {
        const w = ws();
        const other = ws();
        const ident = `id_${uid()}`;
        const a = key(w, { id: "key_a" + uid(), apiId: "api_1", identityId: ident });
        const b = key(w, { id: "key_B" + uid(), apiId: "api_1" });
        const c = key(w, { id: "key_c" + uid(), apiId: "api_2", identityId: ident });
        const foreign = key(other, { id: "key_0" + uid(), apiId: "api_1", identityId: ident });
        for (const k of [a, b, c, foreign]) await put(k);
        const ids = (rs: Array<{ id: string }>) => rs.map((r) => r.id);
        // Ordered by code unit: "key_B…" < "key_a…" < "key_c…".
        expect(ids(await store.direct.find("keys", w, "apiId", "api_1"))).toEqual([b.id, a.id]);
        expect(ids(await store.direct.find("keys", w, "identityId", ident))).toEqual([a.id, c.id]);
        expect(ids(await store.direct.find("keys", other, "apiId", "api_1"))).toEqual([foreign.id]);
        expect(await store.direct.find("keys", w, "apiId", "api_none")).toEqual([]);

        await store.transaction(async (tx) => {
          await tx.put("permissions", { id: `perm_${uid()}`, workspaceId: w, name: "R", slug: "docs.read", createdAt: 1 });
          await tx.put("permissions", { id: `perm_${uid()}`, workspaceId: other, name: "R", slug: "docs.read", createdAt: 1 });
          await tx.put("roles", { id: `role_${uid()}`, workspaceId: w, name: "admin", permissionIds: [], createdAt: 1 });
          await tx.put("identities", { id: `id_${uid()}`, workspaceId: w, externalId: "u@x", ratelimits: [], createdAt: 1 });
        });
        expect((await store.direct.find("permissions", w, "slug", "docs.read")).map((p) => p.workspaceId)).toEqual([w]);
        expect((await store.direct.find("roles", w, "name", "admin")).length).toBe(1);
        expect((await store.direct.find("roles", other, "name", "admin")).length).toBe(0);
        expect((await store.direct.find("identities", w, "externalId", "u@x")).length).toBe(1);
      });

      it("lists a workspace's records by id, from a cursor, with a limit and a filter", async () => {
        const w = ws();
        const keys = Array.from({ length: 7 }, (_, i) =>
          key(w, { id: `key_${String.fromCharCode(65 + i * 7)}${uid()}`, apiId: i % 2 ? "api_odd" : "api_even" }),
        );
        for (const k of [...keys].reverse()) await put(k);
        await put(key(ws()));
        const sorted = keys.map((k) => k.id).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
        const ids = (rs: Array<{ id: string }>) => rs.map((r) => r.id);
        expect(ids(await store.direct.list("keys", w))).toEqual(sorted);
        expect(ids(await store.direct.list("keys", w, { limit: 3 }))).toEqual(sorted.slice(0, 3));
        expect(ids(await store.direct.list("keys", w, { from: sorted[3], limit: 2 }))).toEqual(sorted.slice(3, 5));
        expect(ids(await store.direct.list("keys", w, { from: sorted[6] + "~" }))).toEqual([]);
        const odd = keys
          .filter((k) => k.apiId === "api_odd")
          .map((k) => k.id)
          .sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
        expect(ids(await store.direct.list("keys", w, { where: { field: "apiId", value: "api_odd" } }))).toEqual(odd);
        expect(ids(await store.direct.list("keys", w, { from: odd[1], limit: 1, where: { field: "apiId", value: "api_odd" } }))).toEqual([
          odd[1],
        ]);
        expect(await store.direct.list("apis", w)).toEqual([]);
      });
    });

    describe("sortedKeys", () => {
      // Names whose code point order differs from JavaScript's UTF-16 order (U+FFEE before U+1F600),
      // ties broken by id, missing values after every value in asc.
      const rows: Array<[id: string, name: string | undefined, expires: number | undefined, credits: number | undefined]> = [
        ["key_A", "b", 30, 5],
        ["key_B", "a", undefined, undefined],
        ["key_C", undefined, 10, 0],
        ["key_D", "\u00e9", 30, 5],
        ["key_E", "\u{1F600}", undefined, 7],
        ["key_F", "\uffee", 20, undefined],
        ["key_G", "a", 10, 5],
        ["key_H", "B", undefined, 0],
      ];
      const ascending: Record<"name" | "expires" | "credits", string[]> = {
        name: ["H", "B", "G", "A", "D", "F", "E", "C"],
        expires: ["C", "G", "F", "A", "D", "B", "E", "H"],
        credits: ["C", "H", "A", "D", "G", "E", "B", "F"],
      };

      it("orders an API's keys by a column both ways, from any place, within the API and the workspace", async () => {
        const w = ws();
        const suffix = uid();
        const made = rows.map(([id, name, expires, remaining]) =>
          key(w, {
            id: id + suffix,
            apiId: "api_sorted",
            ...(name === undefined ? {} : { name }),
            ...(expires === undefined ? {} : { expires }),
            ...(remaining === undefined ? {} : { credits: { remaining, lastRefillAt: 0 } }),
          }),
        );
        for (const k of made) await put(k);
        await put(key(w, { apiId: "api_other", name: "a" }));
        await put(key(ws(), { apiId: "api_sorted", name: "a" }));
        const byLetter = new Map(made.map((k) => [k.id.slice(4, 5), k]));
        for (const by of ["name", "expires", "credits"] as const) {
          for (const order of ["asc", "desc"] as const) {
            const want = (order === "asc" ? ascending[by] : [...ascending[by]].reverse()).map((l) => byLetter.get(l)!);
            const sort = { by, order };
            const got = await store.direct.sortedKeys(w, "api_sorted", sort, { limit: 100 });
            expect(
              got.map((k) => k.id),
              `${by} ${order}`,
            ).toEqual(want.map((k) => k.id));
            expect(got[0]).toEqual(want[0]);
            for (let i = 0; i < want.length; i++) {
              const at = want[i]!;
              const value = by === "credits" ? (at.credits?.remaining ?? null) : (at[by] ?? null);
              const from = await store.transaction((tx) => tx.sortedKeys(w, "api_sorted", sort, { from: { value, id: at.id }, limit: 3 }));
              expect(
                from.map((k) => k.id),
                `${by} ${order} from ${i}`,
              ).toEqual(want.slice(i, i + 3).map((k) => k.id));
            }
          }
        }
        // A place no key holds (a key deleted since): the next keys after it.
        const between = await store.direct.sortedKeys(
          w,
          "api_sorted",
          { by: "name", order: "asc" },
          { from: { value: "aa", id: "key_0" }, limit: 2 },
        );
        expect(between.map((k) => k.id)).toEqual([byLetter.get("A")!.id, byLetter.get("D")!.id]);
        const nulls = await store.direct.sortedKeys(
          w,
          "api_sorted",
          { by: "name", order: "desc" },
          { from: { value: null, id: "key_0" }, limit: 2 },
        );
        expect(nulls.map((k) => k.id)).toEqual([byLetter.get("E")!.id, byLetter.get("F")!.id]);
        const created = await store.direct.sortedKeys(w, "api_sorted", { by: "createdAt" }, { limit: 100 });
        expect(created.map((k) => k.id)).toEqual(made.map((k) => k.id).sort());
        expect(await store.direct.sortedKeys(w, "api_none", { by: "start" }, { limit: 10 })).toEqual([]);
      });
    });

    describe("rate-limit namespaces and overrides", () => {
      const ns = (workspaceId: string, name: string, id = `rlns_${uid()}`): RatelimitNamespaceRecord => ({
        id,
        workspaceId,
        name,
        createdAt: 11,
      });
      const ovr = (n: RatelimitNamespaceRecord, identifier: string, id = `rlor_${uid()}`): RatelimitOverrideRecord => ({
        id,
        workspaceId: n.workspaceId,
        namespaceId: n.id,
        identifier,
        limit: 0,
        duration: 2_592_000_001,
        createdAt: 12,
      });

      it("keeps them, finds namespaces by name and overrides by namespace, within one workspace", async () => {
        const w = ws();
        const other = ws();
        const a = ns(w, "email.outbound");
        const b = ns(other, "email.outbound");
        const o1 = ovr(a, "user_*", `rlor_B${uid()}`);
        const o2 = ovr(a, "user_1", `rlor_a${uid()}`);
        const foreign = ovr(b, "user_1");
        await store.transaction(async (tx) => {
          for (const n of [a, b]) await tx.put("ratelimitNamespaces", n);
          for (const o of [o2, o1, foreign]) await tx.put("ratelimitOverrides", o);
        });
        expect(await store.direct.get("ratelimitNamespaces", a.id)).toEqual(a);
        expect(await store.direct.get("ratelimitOverrides", o1.id)).toEqual(o1);
        expect(await store.direct.find("ratelimitNamespaces", w, "name", "email.outbound")).toEqual([a]);
        expect(await store.direct.find("ratelimitNamespaces", other, "name", "email.outbound")).toEqual([b]);
        expect(await store.direct.find("ratelimitNamespaces", w, "name", "email")).toEqual([]);
        // Ordered by code unit: "rlor_B…" < "rlor_a…".
        expect(await store.direct.find("ratelimitOverrides", w, "namespaceId", a.id)).toEqual([o1, o2]);
        expect(await store.direct.find("ratelimitOverrides", w, "namespaceId", b.id)).toEqual([]);
        expect(await store.direct.find("ratelimitOverrides", other, "namespaceId", b.id)).toEqual([foreign]);
      });

      it("lists a namespace's overrides by id, from a cursor, with a limit", async () => {
        const w = ws();
        const n = ns(w, "api");
        const overrides = Array.from({ length: 5 }, (_, i) => ovr(n, `user_${i}`, `rlor_${String.fromCharCode(70 - i)}${uid()}`));
        await store.transaction(async (tx) => {
          await tx.put("ratelimitNamespaces", n);
          for (const o of overrides) await tx.put("ratelimitOverrides", o);
          await tx.put("ratelimitOverrides", ovr(ns(w, "elsewhere"), "user_0"));
        });
        const sorted = overrides.map((o) => o.id).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
        const where = { field: "namespaceId" as const, value: n.id };
        const ids = (rs: Array<{ id: string }>) => rs.map((r) => r.id);
        expect(ids(await store.direct.list("ratelimitOverrides", w, { where }))).toEqual(sorted);
        expect(ids(await store.direct.list("ratelimitOverrides", w, { where, limit: 2 }))).toEqual(sorted.slice(0, 2));
        expect(ids(await store.direct.list("ratelimitOverrides", w, { where, from: sorted[2], limit: 2 }))).toEqual(sorted.slice(2, 4));
        expect((await store.direct.list("ratelimitOverrides", w)).length).toBe(6);
      });

      it("deleting a namespace deletes its overrides, and only its own", async () => {
        const w = ws();
        const a = ns(w, "a");
        const b = ns(w, "b");
        const oa = ovr(a, "*");
        const ob = ovr(b, "*");
        await store.transaction(async (tx) => {
          for (const n of [a, b]) await tx.put("ratelimitNamespaces", n);
          for (const o of [oa, ob]) await tx.put("ratelimitOverrides", o);
        });
        await store.transaction((tx) => tx.delete("ratelimitNamespaces", a.id));
        expect(await store.direct.get("ratelimitNamespaces", a.id)).toBeUndefined();
        expect(await store.direct.get("ratelimitOverrides", oa.id)).toBeUndefined();
        expect(await store.direct.find("ratelimitOverrides", w, "namespaceId", a.id)).toEqual([]);
        expect(await store.direct.get("ratelimitOverrides", ob.id)).toEqual(ob);
        await store.transaction((tx) => tx.delete("ratelimitOverrides", ob.id));
        expect(await store.direct.find("ratelimitOverrides", w, "namespaceId", b.id)).toEqual([]);
        expect(await store.direct.get("ratelimitNamespaces", b.id)).toEqual(b);
      });

      it("a key's pending migration id is kept, and a changed hash finds the key", async () => {
        const k = key(ws(), { hash: randomBytes(32).toString("hex"), start: "", pendingMigrationId: "mig_1" });
        await put(k);
        expect(await store.direct.keyByHash(k.hash)).toEqual(k);
        const { pendingMigrationId: _, ...migrated } = { ...k, hash: randomBytes(32).toString("base64"), start: "pfx_abcd" };
        await store.direct.put("keys", migrated);
        expect(await store.direct.keyByHash(k.hash)).toBeUndefined();
        expect(await store.direct.keyByHash(migrated.hash)).toEqual(migrated);
      });
    });

    describe("portals and their sessions", () => {
      const portal = (workspaceId: string): PortalRecord => ({
        id: `portal_${uid()}`,
        workspaceId,
        name: "Acme developer portal",
        apiIds: ["api_a", "api_b"],
        enabled: true,
        accentColor: "#0a7cff",
        docs: "# Hello\n\nCall `GET /v1/things`.",
        returnOrigins: ["https://app.example.com"],
        keyTemplate: { prefix: "acme", permissions: ["things.read"], credits: { remaining: 100 }, expiresIn: 86_400_000 },
        rerollGraceMs: 3_600_000,
        actions: { create: true, disable: false, delete: true },
        createdAt: 1_700_000_000_000,
      });
      const session = (p: PortalRecord, over: Partial<PortalSessionRecord> = {}): PortalSessionRecord => ({
        id: `ps_${uid()}`,
        workspaceId: p.workspaceId,
        portalId: p.id,
        externalId: "user_123",
        scopes: ["keys:read", "analytics:read"],
        apiIds: p.apiIds,
        preview: false,
        codeHash: randomBytes(32).toString("base64"),
        codeExpiresAt: 1_700_000_900_000,
        createdBy: "rk_1",
        createdAt: 1_700_000_000_000,
        ...over,
      });

      it("keeps portals and sessions whole, lists them within their workspace, and deletes them", async () => {
        const w = ws();
        const p = portal(w);
        const s1 = session(p, { returnUrl: "https://app.example.com/settings" });
        const foreign = session(portal(ws()));
        await store.transaction(async (tx) => {
          await tx.put("portals", p);
          for (const s of [s1, foreign]) await tx.put("portalSessions", s);
        });
        expect(await store.direct.get("portals", p.id)).toEqual(p);
        expect(await store.direct.get("portalSessions", s1.id)).toEqual(s1);
        expect(await store.direct.list("portals", w)).toEqual([p]);
        expect(await store.direct.list("portalSessions", w)).toEqual([s1]);
        // An exchange: the code is spent, the token's hash and expiry are set, in one put.
        const exchanged = { ...s1, exchangedAt: 1_700_000_001_000, tokenHash: randomBytes(32).toString("base64"), tokenExpiresAt: 1 };
        await store.transaction((tx) => tx.put("portalSessions", exchanged));
        expect(await store.direct.get("portalSessions", s1.id)).toEqual(exchanged);
        await store.transaction(async (tx) => {
          await tx.delete("portalSessions", s1.id);
          await tx.delete("portals", p.id);
        });
        expect(await store.direct.get("portals", p.id)).toBeUndefined();
        expect(await store.direct.get("portalSessions", s1.id)).toBeUndefined();
        expect(await store.direct.get("portalSessions", foreign.id)).toEqual(foreign);
      });
    });

    describe("rate-limit counts", () => {
      it("adds counts to those of the same namespace and hour, and reads a range of hours of the namespaces asked for", async () => {
        const w = ws();
        const other = ws();
        const H = 3_600_000;
        const h0 = 1_700_000_000_000 - (1_700_000_000_000 % H);
        const row = (workspaceId: string, namespaceId: string, hour: number, passed: number, limited: number) => ({
          workspaceId,
          namespaceId,
          hour,
          passed,
          limited,
        });
        await store.addRatelimitCounts([row(w, "rlns_a", h0, 2, 1), row(w, "rlns_a", h0 + H, 1, 0), row(w, "rlns_b", h0, 5, 5)]);
        // A second writer (another instance) adds to the same rows: a sum, not a replacement.
        await store.addRatelimitCounts([row(w, "rlns_a", h0, 3, 4), row(other, "rlns_a", h0, 9, 9)]);
        await store.addRatelimitCounts([]);
        const sorted = (rows: Awaited<ReturnType<Storage["ratelimitCounts"]>>) =>
          [...rows].sort((a, b) => a.namespaceId.localeCompare(b.namespaceId) || a.hour - b.hour);
        expect(sorted(await store.ratelimitCounts({ workspaceId: w, namespaceIds: ["rlns_a"], from: h0, until: h0 + 2 * H }))).toEqual([
          row(w, "rlns_a", h0, 5, 5),
          row(w, "rlns_a", h0 + H, 1, 0),
        ]);
        // `until` is exclusive, `from` inclusive; several namespaces at once; nothing of another workspace.
        expect(
          sorted(await store.ratelimitCounts({ workspaceId: w, namespaceIds: ["rlns_a", "rlns_b"], from: h0, until: h0 + H })),
        ).toEqual([row(w, "rlns_a", h0, 5, 5), row(w, "rlns_b", h0, 5, 5)]);
        expect(await store.ratelimitCounts({ workspaceId: w, namespaceIds: ["rlns_a"], from: h0 + H, until: h0 + H })).toEqual([]);
        expect(await store.ratelimitCounts({ workspaceId: w, namespaceIds: [], from: h0, until: h0 + H })).toEqual([]);
        expect(await store.ratelimitCounts({ workspaceId: other, namespaceIds: ["rlns_a"], from: h0, until: h0 + H })).toEqual([
          row(other, "rlns_a", h0, 9, 9),
        ]);
      });
    });

    describe("delete and its cascades", () => {
      it("deleting an API deletes its keys", async () => {
        const w = ws();
        const apiId = `api_${uid()}`;
        const mine = key(w, { apiId });
        const kept = key(w, { apiId: "api_other" });
        await store.transaction(async (tx) => {
          await tx.put("apis", { id: apiId, workspaceId: w, name: "a", createdAt: 0 });
          await tx.put("keys", mine);
          await tx.put("keys", kept);
        });
        await store.transaction((tx) => tx.delete("apis", apiId));
        expect(await store.direct.get("apis", apiId)).toBeUndefined();
        expect(await store.direct.get("keys", mine.id)).toBeUndefined();
        expect(await store.direct.keyByHash(mine.hash)).toBeUndefined();
        expect(await store.direct.get("keys", kept.id)).toEqual(kept);
      });

      it("deleting a permission removes it from keys and roles; deleting a role removes it from keys", async () => {
        const w = ws();
        const p1 = `perm_${uid()}`;
        const p2 = `perm_${uid()}`;
        const r1 = `role_${uid()}`;
        const k = key(w, { permissionIds: [p1, p2], roleIds: [r1] });
        await store.transaction(async (tx) => {
          await tx.put("permissions", { id: p1, workspaceId: w, name: "a", slug: "a", createdAt: 0 });
          await tx.put("permissions", { id: p2, workspaceId: w, name: "b", slug: "b", createdAt: 0 });
          await tx.put("roles", { id: r1, workspaceId: w, name: "r", permissionIds: [p1, p2], createdAt: 0 });
          await tx.put("keys", k);
        });
        await store.transaction((tx) => tx.delete("permissions", p1));
        expect((await store.direct.get("keys", k.id))!.permissionIds).toEqual([p2]);
        expect((await store.direct.get("roles", r1))!.permissionIds).toEqual([p2]);
        await store.transaction((tx) => tx.delete("roles", r1));
        expect(await store.direct.get("roles", r1)).toBeUndefined();
        expect((await store.direct.get("keys", k.id))!.roleIds).toEqual([]);
      });

      it("deleting an identity unlinks its keys and drops its counters; deleting a key drops its counters", async () => {
        const w = ws();
        const identityId = `id_${uid()}`;
        const k = key(w, { identityId });
        await store.transaction(async (tx) => {
          await tx.put("identities", { id: identityId, workspaceId: w, externalId: "e", ratelimits: [], createdAt: 0 });
          await tx.put("keys", k);
        });
        const now = 1_000_000;
        const idCounter = `rl_${uid()}/60000`;
        const keyCounter = `rl_${uid()}/60000`;
        const check = (counter: string, owner: string) => ({ counter, limit: 1, duration: 60_000, cost: 1, owner });
        expect((await store.direct.limit([check(idCounter, identityId), check(keyCounter, k.id)], now)).passed).toBe(true);
        expect((await store.direct.limit([check(idCounter, identityId)], now)).passed).toBe(false);
        await store.transaction((tx) => tx.delete("identities", identityId));
        const got = (await store.direct.get("keys", k.id))!;
        expect(Object.hasOwn(got, "identityId")).toBe(false);
        expect((await store.direct.limit([check(idCounter, identityId)], now)).passed).toBe(true);
        await store.transaction((tx) => tx.delete("keys", k.id));
        expect(await store.direct.get("keys", k.id)).toBeUndefined();
        expect((await store.direct.limit([check(keyCounter, k.id)], now)).passed).toBe(true);
      });

      it("a delete racing transactions that read the record and write records pointing at it leaves nothing pointing at it", async () => {
        // Each writer reads the record (an API, a permission, a role, an identity) and, when found,
        // writes a key pointing at it (a new key; an existing key read first, for the permission and
        // the role); the delete is started while the first writers run, the last ones after it.
        for (let round = 0; round < 3; round++) {
          const w = ws();
          const apiId = `api_${uid()}`;
          const permissionId = `perm_${uid()}`;
          const roleId = `role_${uid()}`;
          const identityId = `id_${uid()}`;
          const existing = Array.from({ length: 6 }, () => key(w, { apiId: "api_kept" }));
          await store.transaction(async (tx) => {
            await tx.put("apis", { id: apiId, workspaceId: w, name: "a", createdAt: 0 });
            await tx.put("permissions", { id: permissionId, workspaceId: w, name: "p", slug: "p", createdAt: 0 });
            await tx.put("roles", { id: roleId, workspaceId: w, name: "r", permissionIds: [], createdAt: 0 });
            await tx.put("identities", { id: identityId, workspaceId: w, externalId: "e", ratelimits: [], createdAt: 0 });
            for (const k of existing) await tx.put("keys", k);
          });
          const writers: Array<() => Promise<unknown>> = [
            () =>
              store.transaction(async (tx) => {
                if (await tx.get("apis", apiId)) await tx.put("keys", key(w, { apiId }));
              }),
            () =>
              store.transaction(async (tx) => {
                const found = (await tx.find("identities", w, "externalId", "e"))[0];
                if (found) await tx.put("keys", key(w, { apiId: "api_kept", identityId: found.id }));
              }),
            ...existing.map(
              (k) => () =>
                store.transaction(async (tx) => {
                  const current = await tx.get("keys", k.id);
                  const [permission, role] = [await tx.get("permissions", permissionId), await tx.get("roles", roleId)];
                  if (!current) return;
                  if (permission) current.permissionIds = [...current.permissionIds, permission.id];
                  if (role) current.roleIds = [...current.roleIds, role.id];
                  await tx.put("keys", current);
                }),
            ),
          ];
          const running = Array.from({ length: 12 }, (_, i) => writers[i % writers.length]!());
          const deletions = (["apis", "permissions", "roles", "identities"] as const).map((table, i) =>
            store.transaction((tx) => tx.delete(table, [apiId, permissionId, roleId, identityId][i]!)),
          );
          running.push(...Array.from({ length: 6 }, (_, i) => writers[i % writers.length]!()));
          await Promise.all([...running, ...deletions]);
          const keys = await store.transaction((tx) => tx.list("keys", w));
          expect(keys.filter((k) => k.apiId === apiId)).toEqual([]);
          expect(keys.filter((k) => k.identityId === identityId)).toEqual([]);
          expect(keys.filter((k) => k.permissionIds.includes(permissionId) || k.roleIds.includes(roleId))).toEqual([]);
        }
      });

      it("deleting an unknown id does nothing", async () => {
        await store.transaction(async (tx) => {
          await tx.delete("keys", "key_missing");
          await tx.delete("apis", "__proto__");
        });
      });
    });

    describeAuditLog(() => store);
    describeWebhookOutbox(() => store);
    describeExpiryNotices(() => store);

    describe("transactions", () => {
      // The optimistic hint (`TransactionOptions.optimistic`) may change how a backend runs the
      // function, never what it does: the same guarantees, whatever the function calls.
      it.each([
        ["", undefined],
        [" (with the optimistic hint)", { optimistic: true }],
      ] as const)("reads inside a transaction see its own writes, and a throw keeps none of them%s", async (_, options) => {
        const w = ws();
        const keep = key(w, { name: "kept" });
        await put(keep);
        const fresh = key(w);
        const boom = new Error("boom");
        await expect(
          store.transaction(async (tx) => {
            await tx.put("keys", fresh);
            expect((await tx.get("keys", fresh.id))?.id).toBe(fresh.id);
            expect((await tx.keyByHash(fresh.hash))?.id).toBe(fresh.id);
            await tx.put("keys", { ...keep, name: "changed" });
            expect((await tx.get("keys", keep.id))?.name).toBe("changed");
            await tx.delete("keys", keep.id);
            expect(await tx.get("keys", keep.id)).toBeUndefined();
            await tx.setMeta(`m_${w}`, "x");
            await tx.appendAudit({
              id: `aud_${uid()}`,
              time: 1,
              workspaceId: w,
              actorId: "root_x",
              operation: "keys.createKey",
              targets: [fresh.id],
              outcome: "success",
              requestId: "req_x",
              ip: "127.0.0.1",
              change: {},
            });
            throw boom;
          }, options),
        ).rejects.toBe(boom);
        expect(await store.direct.get("keys", fresh.id)).toBeUndefined();
        expect(await store.direct.keyByHash(fresh.hash)).toBeUndefined();
        expect(await store.direct.get("keys", keep.id)).toEqual(keep);
        expect(await store.direct.getMeta(`m_${w}`)).toBeUndefined();
        expect((await store.direct.list("keys", w)).map((k) => k.id)).toEqual([keep.id]);
        expect(await store.direct.listAudit({ workspaceId: w, limit: 10 })).toEqual([]);
      });

      it("returns what the function returns", async () => {
        expect(await store.transaction(async () => 42)).toBe(42);
      });

      it("concurrent read-modify-write transactions lose no update", async () => {
        const k = key(ws(), { meta: { n: 0 } });
        await put(k);
        await Promise.all(
          Array.from({ length: 20 }, () =>
            store.transaction(async (tx) => {
              const cur = (await tx.get("keys", k.id))!;
              await new Promise((r) => setTimeout(r, 1));
              await tx.put("keys", { ...cur, meta: { n: (cur.meta!.n as number) + 1 } });
            }),
          ),
        );
        expect((await store.direct.get("keys", k.id))!.meta).toEqual({ n: 20 });
      });

      it("with the optimistic hint: concurrent read-modify-write transactions lose no update", async () => {
        const w = ws();
        // An identity: a record without links, which a transaction reads FOR UPDATE (PostgreSQL).
        const identity: IdentityRecord = {
          id: `id_${uid()}`,
          workspaceId: w,
          externalId: "counter",
          ratelimits: [],
          meta: { n: 0 },
          createdAt: 1,
        };
        await store.transaction((tx) => tx.put("identities", identity));
        await Promise.all(
          Array.from({ length: 20 }, () =>
            store.transaction(
              async (tx) => {
                const cur = (await tx.get("identities", identity.id))!;
                await new Promise((r) => setTimeout(r, 1));
                await tx.put("identities", { ...cur, meta: { n: (cur.meta!.n as number) + 1 } });
              },
              { optimistic: true },
            ),
          ),
        );
        expect((await store.direct.get("identities", identity.id))!.meta).toEqual({ n: 20 });
      });
    });

    describe("credits", () => {
      it("charges while the balance covers the cost, never below zero", async () => {
        const k = key(ws(), { credits: { remaining: 5, lastRefillAt: 0 } });
        await put(k);
        expect(await store.direct.spendCredits(k.id, 2, 10)).toEqual({ ok: true, remaining: 3 });
        expect(await store.direct.spendCredits(k.id, 4, 10)).toEqual({ ok: false, remaining: 3 });
        expect(await store.direct.spendCredits(k.id, 0, 10)).toEqual({ ok: true, remaining: 3 });
        expect(await store.direct.spendCredits(k.id, 3, 10)).toEqual({ ok: true, remaining: 0 });
        expect(await store.direct.spendCredits(k.id, 1, 10)).toEqual({ ok: false, remaining: 0 });
        expect((await store.direct.get("keys", k.id))!.credits).toEqual({ remaining: 0, lastRefillAt: 0 });
      });

      it("applies a refill that fell due before charging, once", async () => {
        const refill = { interval: "daily" as const, amount: 10 };
        const k = key(ws(), { credits: { remaining: 1, refill, lastRefillAt: 100 } });
        await put(k);
        // Not due: lastRefillAt is at or after the boundary.
        expect(await store.direct.spendCredits(k.id, 1, 150, { boundary: 100, amount: 10 })).toEqual({ ok: true, remaining: 0 });
        // Due: remaining becomes the amount, then the cost is charged.
        expect(await store.direct.spendCredits(k.id, 3, 250, { boundary: 200, amount: 10 })).toEqual({ ok: true, remaining: 7 });
        expect((await store.direct.get("keys", k.id))!.credits).toEqual({ remaining: 7, refill, lastRefillAt: 250 });
        // The same boundary again: not due any more.
        expect(await store.direct.spendCredits(k.id, 1, 260, { boundary: 200, amount: 10 })).toEqual({ ok: true, remaining: 6 });
        // A refill that fell due is applied even when the charge fails.
        expect(await store.direct.spendCredits(k.id, 50, 400, { boundary: 300, amount: 10 })).toEqual({ ok: false, remaining: 10 });
        expect((await store.direct.get("keys", k.id))!.credits).toEqual({ remaining: 10, refill, lastRefillAt: 400 });
      });

      it("with crossings, leaves to a transaction a charge that crosses the low threshold or reaches 0", async () => {
        const k = key(ws(), { credits: { remaining: 10, lastRefillAt: 0 } });
        await put(k);
        const low = { lowThreshold: 5 };
        expect(await store.direct.spendCredits(k.id, 3, 10, undefined, low)).toEqual({ ok: true, remaining: 7 });
        // 7 → 5 crosses 5 (to at or below it, from above): not charged.
        expect(await store.direct.spendCredits(k.id, 2, 10, undefined, low)).toEqual({ ok: false, remaining: 7, crossing: true });
        expect((await store.direct.get("keys", k.id))!.credits!.remaining).toBe(7);
        // Not covered: refused, no crossing to make.
        expect(await store.direct.spendCredits(k.id, 8, 10, undefined, low)).toEqual({ ok: false, remaining: 7 });
        // A cost of 0 crosses nothing.
        expect(await store.direct.spendCredits(k.id, 0, 10, undefined, low)).toEqual({ ok: true, remaining: 7 });
        // Without crossings, the same charge is made.
        expect(await store.direct.spendCredits(k.id, 3, 10)).toEqual({ ok: true, remaining: 4 });
        // Below the threshold already: only reaching 0 crosses.
        expect(await store.direct.spendCredits(k.id, 1, 10, undefined, low)).toEqual({ ok: true, remaining: 3 });
        expect(await store.direct.spendCredits(k.id, 3, 10, undefined, low)).toEqual({ ok: false, remaining: 3, crossing: true });
        expect(await store.direct.spendCredits(k.id, 3, 10, undefined, { lowThreshold: undefined })).toEqual({
          ok: false,
          remaining: 3,
          crossing: true,
        });
        expect(await store.transaction((tx) => tx.spendCredits(k.id, 3, 10))).toEqual({ ok: true, remaining: 0 });
        expect((await store.direct.get("keys", k.id))!.credits!.remaining).toBe(0);
      });

      it("with crossings, still applies a refill that fell due, then judges the charge on the refilled balance", async () => {
        const refill = { interval: "daily" as const, amount: 6 };
        const k = key(ws(), { credits: { remaining: 1, refill, lastRefillAt: 100 } });
        await put(k);
        const low = { lowThreshold: 5 };
        // 1 → refilled to 6 → 6 - 1 = 5 crosses 5.
        expect(await store.direct.spendCredits(k.id, 1, 250, { boundary: 200, amount: 6 }, low)).toEqual({
          ok: false,
          remaining: 6,
          crossing: true,
        });
        expect((await store.direct.get("keys", k.id))!.credits).toEqual({ remaining: 6, refill, lastRefillAt: 250 });
        // Refilled to 6 again at the next boundary; a charge of 0 crosses nothing.
        expect(await store.direct.spendCredits(k.id, 0, 350, { boundary: 300, amount: 6 }, low)).toEqual({ ok: true, remaining: 6 });
      });

      it("answers undefined for a missing key or a key without credits", async () => {
        const k = key(ws());
        await put(k);
        expect(await store.direct.spendCredits(k.id, 1, 0)).toBeUndefined();
        expect(await store.direct.spendCredits("key_missing", 1, 0)).toBeUndefined();
      });

      it("concurrent spends charge exactly the balance, even with writers of the same key", async () => {
        const k = key(ws(), { credits: { remaining: 20, lastRefillAt: 0 } });
        await put(k);
        const spends = Array.from({ length: 50 }, () => store.direct.spendCredits(k.id, 1, 10));
        // Writers that read the key and write it back (a rename) must not bring credits back.
        const writers = Array.from({ length: 5 }, (_, i) =>
          store.transaction(async (tx) => {
            const cur = (await tx.get("keys", k.id))!;
            await tx.put("keys", { ...cur, name: `n${i}` });
          }),
        );
        const [results] = await Promise.all([Promise.all(spends), Promise.all(writers)]);
        expect(results.filter((r) => r?.ok).length).toBe(20);
        expect((await store.direct.get("keys", k.id))!.credits!.remaining).toBe(0);
      });

      it("a transaction's spendCredits is undone with it", async () => {
        const k = key(ws(), { credits: { remaining: 4, lastRefillAt: 0 } });
        await put(k);
        await expect(
          store.transaction(async (tx) => {
            expect(await tx.spendCredits(k.id, 3, 10)).toEqual({ ok: true, remaining: 1 });
            throw new Error("undo");
          }),
        ).rejects.toThrow("undo");
        expect((await store.direct.get("keys", k.id))!.credits!.remaining).toBe(4);
      });
    });

    describe("rate limits", () => {
      const D = 60_000;
      const counter = (): string => `rl_${uid()}/${D}`;

      it("charges a window and reports remaining and reset", async () => {
        const c = counter();
        const t = 2 * D + 1000;
        expect(await store.direct.limit([{ counter: c, limit: 10, duration: D, cost: 4 }], t)).toEqual({
          passed: true,
          states: [{ passed: true, remaining: 6, reset: 3 * D }],
        });
        expect(await store.direct.limit([{ counter: c, limit: 10, duration: D, cost: 7 }], t)).toEqual({
          passed: false,
          states: [{ passed: false, remaining: 6, reset: 3 * D }],
        });
        expect(await store.direct.limit([{ counter: c, limit: 10, duration: D, cost: 6 }], t)).toEqual({
          passed: true,
          states: [{ passed: true, remaining: 0, reset: 3 * D }],
        });
      });

      it("weights the previous window by the part of it still in the sliding window", async () => {
        const c = counter();
        await store.direct.limit([{ counter: c, limit: 10, duration: D, cost: 8 }], 2 * D);
        // Half-way through the next window, 8 × 0.5 = 4 still count: 4 + 1 → 5 left.
        expect((await store.direct.limit([{ counter: c, limit: 10, duration: D, cost: 1 }], 3 * D + D / 2)).states[0]).toEqual({
          passed: true,
          remaining: 5,
          reset: 4 * D,
        });
        // Two windows later nothing of it is left.
        expect((await store.direct.limit([{ counter: c, limit: 10, duration: D, cost: 1 }], 5 * D)).states[0]).toEqual({
          passed: true,
          remaining: 9,
          reset: 6 * D,
        });
      });

      it("is all-or-nothing across several limits", async () => {
        const a = counter();
        const b = counter();
        const t = 7 * D;
        await store.direct.limit([{ counter: b, limit: 2, duration: D, cost: 2 }], t);
        const out = await store.direct.limit(
          [
            { counter: a, limit: 5, duration: D, cost: 1 },
            { counter: b, limit: 2, duration: D, cost: 1 },
          ],
          t,
        );
        expect(out.passed).toBe(false);
        expect(out.states.map((s) => s.passed)).toEqual([true, false]);
        // Nothing was charged on `a`.
        expect((await store.direct.limit([{ counter: a, limit: 5, duration: D, cost: 0 }], t)).states[0]!.remaining).toBe(5);
      });

      it("lets exactly the limit through under concurrency", async () => {
        const c = counter();
        const t = 11 * D;
        const results = await Promise.all(
          Array.from({ length: 30 }, () => store.direct.limit([{ counter: c, limit: 10, duration: D, cost: 1 }], t)),
        );
        expect(results.filter((r) => r.passed).length).toBe(10);
      });

      it("keeps counters of different window lengths apart and drops them by limit id or owner", async () => {
        const id = `rl_${uid()}`;
        const t = 13 * D;
        const c1 = { counter: `${id}/${D}`, limit: 1, duration: D, cost: 1, owner: "key_o" + id };
        const c2 = { counter: `${id}/${2 * D}`, limit: 1, duration: 2 * D, cost: 1, owner: "key_o" + id };
        expect((await store.direct.limit([c1], t)).passed).toBe(true);
        expect((await store.direct.limit([c2], t)).passed).toBe(true);
        expect((await store.direct.limit([c1], t)).passed).toBe(false);
        await store.transaction((tx) => tx.dropCounters({ limitIds: [id] }));
        expect((await store.direct.limit([c1], t)).passed).toBe(true);
        expect((await store.direct.limit([c2], t)).passed).toBe(true);
        await store.direct.dropCounters({ owner: "key_o" + id });
        expect((await store.direct.limit([c1], t)).passed).toBe(true);
        expect((await store.direct.limit([c2], t)).passed).toBe(true);
      });
    });

    describe("verification events", () => {
      const T0 = Date.UTC(2026, 0, 5, 10, 0, 0);
      const HOUR = 3_600_000;
      const event = (workspaceId: string, over: Partial<VerificationEvent> = {}): VerificationEvent => ({
        time: T0,
        workspaceId,
        keySpaceId: "api_a",
        keyId: `key_${uid()}`,
        identityId: "",
        externalId: "",
        outcome: "VALID",
        tags: [],
        spentCredits: 0,
        requestId: `req_${uid()}`,
        region: "local",
        ...over,
      });
      const query = async (sql: string, workspaceId: string, keySpaceIds?: string[]) =>
        store.queryVerifications(await parseAnalyticsQuery(sql, { now: T0 + 10 * HOUR, retentionMs: 30 * 86_400_000 }), {
          workspaceId,
          ...(keySpaceIds && { keySpaceIds }),
        });

      it("keeps every field of an event (tags as an array, numbers as numbers) and answers only the scope's workspace", async () => {
        const w = ws();
        const other = ws();
        const e = event(w, {
          identityId: "id_1",
          externalId: 'user "1" \\ ü',
          outcome: "RATE_LIMITED",
          tags: ["path=/a", "it's", 'say "hi"', "back\\slash", "ü ✓ 🔑", "{a,b}"],
          spentCredits: 3,
        });
        await store.appendVerifications([e, event(other)]);
        const rows = await query("SELECT * FROM key_verifications_v1", w);
        expect(rows).toEqual([
          {
            request_id: e.requestId,
            time: T0,
            workspace_id: w,
            key_space_id: "api_a",
            key_id: e.keyId,
            identity_id: "id_1",
            external_id: 'user "1" \\ ü',
            outcome: "RATE_LIMITED",
            region: "local",
            tags: ["path=/a", "it's", 'say "hi"', "back\\slash", "ü ✓ 🔑", "{a,b}"],
            spent_credits: 3,
          },
        ]);
        expect(await query("SELECT count(*) AS n FROM key_verifications_v1 WHERE workspace_id != ''", other)).toEqual([{ n: 1 }]);
      });

      it("counts by outcome and by hour, filters, orders and limits", async () => {
        const w = ws();
        const k1 = `key_${uid()}`;
        await store.appendVerifications([
          event(w, { keyId: k1, time: T0 + 5 * 60_000 }),
          event(w, { keyId: k1, time: T0 + 50 * 60_000, outcome: "RATE_LIMITED", tags: ["a"] }),
          event(w, { time: T0 + HOUR + 1, outcome: "RATE_LIMITED", spentCredits: 2 }),
          event(w, { time: T0 + 2 * HOUR, outcome: "USAGE_EXCEEDED", keySpaceId: "api_b", spentCredits: 5 }),
        ]);
        expect(
          await query(
            `SELECT toStartOfHour(fromUnixTimestamp64Milli(time)) AS hour, outcome, count(*) AS total FROM key_verifications_v1
             WHERE time >= ${T0} GROUP BY hour, outcome ORDER BY hour, outcome`,
            w,
          ),
        ).toEqual([
          { hour: T0, outcome: "RATE_LIMITED", total: 1 },
          { hour: T0, outcome: "VALID", total: 1 },
          { hour: T0 + HOUR, outcome: "RATE_LIMITED", total: 1 },
          { hour: T0 + 2 * HOUR, outcome: "USAGE_EXCEEDED", total: 1 },
        ]);
        expect(
          await query(
            "SELECT key_id, countIf(outcome = 'RATE_LIMITED') AS limited, count() AS n FROM key_verifications_v1 WHERE key_id = '" +
              k1 +
              "' GROUP BY key_id",
            w,
          ),
        ).toEqual([{ key_id: k1, limited: 1, n: 2 }]);
        expect(
          await query(
            "SELECT sum(spent_credits) AS spent FROM key_verifications_v1 WHERE outcome IN ('RATE_LIMITED', 'USAGE_EXCEEDED')",
            w,
          ),
        ).toEqual([{ spent: 7 }]);
        expect(
          await query("SELECT count(*) AS n FROM key_verifications_v1 WHERE has(tags, 'a') OR NOT (time < " + (T0 + 2 * HOUR) + ")", w),
        ).toEqual([{ n: 2 }]);
        expect(await query("SELECT outcome FROM key_verifications_v1 ORDER BY time DESC LIMIT 2", w)).toEqual([
          { outcome: "USAGE_EXCEEDED" },
          { outcome: "RATE_LIMITED" },
        ]);
        expect(await query("SELECT sum(spent_credits) AS s, count(*) AS n FROM key_verifications_v1 WHERE outcome = 'none'", w)).toEqual([
          { s: 0, n: 0 },
        ]);
        // An output named __proto__ is a field like any other.
        const [odd] = await query("SELECT count(*) AS __proto__ FROM key_verifications_v1", w);
        expect(Object.getPrototypeOf(odd)).toBe(Object.prototype);
        expect(JSON.parse(JSON.stringify(odd))).toEqual(JSON.parse('{"__proto__": 4}'));
        // An API-scoped view: only those APIs' rows.
        expect(await query("SELECT count(*) AS n FROM key_verifications_v1", w, ["api_b"])).toEqual([{ n: 1 }]);
        expect(await query("SELECT count(*) AS n FROM key_verifications_v1", w, [])).toEqual([{ n: 0 }]);
      });

      it("moves a key's last use forward only, and deletes events older than a time", async () => {
        const w = ws();
        const k = `key_${uid()}`;
        expect(await store.direct.lastUsed([k])).toEqual(new Map());
        await store.appendVerifications([event(w, { keyId: k, time: T0 - 40 * 86_400_000 }), event(w, { keyId: k, time: T0 })]);
        await store.appendVerifications([event(w, { keyId: k, time: T0 - 5 })]);
        expect(await store.direct.lastUsed([k, "key_never"])).toEqual(new Map([[k, T0]]));
        expect(await store.transaction((tx) => tx.lastUsed([k]))).toEqual(new Map([[k, T0]]));
        // Aborted already (the service closing): nothing deleted.
        expect(await store.deleteVerificationsBefore(T0 - 30 * 86_400_000, AbortSignal.abort())).toBe(0);
        expect(await query("SELECT count(*) AS n FROM key_verifications_v1", w)).toEqual([{ n: 3 }]);
        expect(await store.deleteVerificationsBefore(T0 - 30 * 86_400_000)).toBeGreaterThanOrEqual(1);
        expect(await query("SELECT count(*) AS n FROM key_verifications_v1", w)).toEqual([{ n: 2 }]);
        // The last use outlives the events.
        expect(await store.direct.lastUsed([k])).toEqual(new Map([[k, T0]]));
      });

      it("appends batches concurrently without losing one", async () => {
        const w = ws();
        await Promise.all(
          Array.from({ length: 10 }, (_, i) => store.appendVerifications(Array.from({ length: 50 }, () => event(w, { time: T0 + i })))),
        );
        expect(await query("SELECT count(*) AS n FROM key_verifications_v1", w)).toEqual([{ n: 500 }]);
      });
    });
  });
}
