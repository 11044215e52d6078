// keyguard's own `sort` on apis.listKeys: the order of each column both ways (missing values after
// every value in `asc`, ties by id), pages that stay complete while keys come and go, the sort with
// `search` and `externalId`, and the 400s of a bad sort or a cursor of another sort.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { start, type Started } from "../helpers";

let s: Started;
let apiId: string;
beforeAll(async () => {
  s = await start();
  apiId = (await s.call("apis.createApi", { name: "sorted" })).body.data.apiId;
});
afterAll(() => s.close());

interface Listed {
  keyId: string;
  name?: string;
  start: string;
  createdAt: number;
  expires?: number;
  credits?: { remaining: number | null };
}
type Column = "name" | "start" | "createdAt" | "expires" | "credits";

const create = async (body: Record<string, unknown>) => {
  const res = await s.call("keys.createKey", { apiId, ...body });
  expect(res.status).toBe(200);
  return res.body.data.keyId as string;
};

/** Every page of a listing, `limit` at a time. */
async function listAll(body: Record<string, unknown>, limit: number): Promise<Listed[]> {
  const seen: Listed[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 200; page++) {
    const res = await s.call("apis.listKeys", { apiId, limit, ...body, ...(cursor ? { cursor } : {}) });
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBeLessThanOrEqual(limit);
    seen.push(...res.body.data);
    if (!res.body.pagination.hasMore) return seen;
    cursor = res.body.pagination.cursor;
  }
  throw new Error("more than 200 pages");
}

const valueOf = (k: Listed, by: Column): string | number | null =>
  by === "credits" ? (k.credits?.remaining ?? null) : ((k[by] as string | number | undefined) ?? null);

/** The order the docs promise, written out independently: missing values last in asc, ties by id. */
function expected(keys: readonly Listed[], by: Column, order: "asc" | "desc"): string[] {
  const sorted = [...keys].sort((a, b) => {
    const x = valueOf(a, by);
    const y = valueOf(b, by);
    if (x !== y) {
      if (x === null) return 1;
      if (y === null) return -1;
      if (x < y) return -1;
      if (x > y) return 1;
    }
    return a.keyId < b.keyId ? -1 : 1;
  });
  const ids = sorted.map((k) => k.keyId);
  return order === "asc" ? ids : ids.reverse();
}

const COLUMNS: Column[] = ["name", "start", "createdAt", "expires", "credits"];
const soon = Date.now() + 86_400_000;

describe("apis.listKeys { sort }", () => {
  let all: Listed[];

  beforeAll(async () => {
    // Ties and missing values in every column but start: equal names, no name, equal expiry, none,
    // equal credits, unlimited ones.
    const specs: Array<Record<string, unknown>> = [
      { name: "beta", expires: soon + 5000, credits: { remaining: 10 } },
      { name: "alpha" },
      { name: "Gamma", expires: soon + 1000, credits: { remaining: 0 } },
      { expires: soon + 1000 },
      { name: "beta", credits: { remaining: 10 } },
      { name: "alpha", expires: soon + 9000, credits: { remaining: 3 } },
      {},
      { name: "beta", expires: soon + 5000 },
      { name: "zeta", credits: { remaining: 500 } },
    ];
    for (const spec of specs) await create(spec);
    all = await listAll({}, 100);
    expect(all).toHaveLength(specs.length);
  });

  for (const by of COLUMNS) {
    for (const order of ["asc", "desc"] as const) {
      it(`orders by ${by} ${order}, in one page and two at a time`, async () => {
        const want = expected(all, by, order);
        const one = await listAll({ sort: { by, order } }, 100);
        expect(one.map((k) => k.keyId)).toEqual(want);
        const paged = await listAll({ sort: { by, order } }, 2);
        expect(paged.map((k) => k.keyId)).toEqual(want);
      });
    }
  }

  it("takes asc when no order is given, and keeps production's id order without sort", async () => {
    expect((await listAll({ sort: { by: "name" } }, 3)).map((k) => k.keyId)).toEqual(expected(all, "name", "asc"));
    expect(all.map((k) => k.keyId)).toEqual([...all.map((k) => k.keyId)].sort());
    const first = await s.call("apis.listKeys", { apiId, limit: 2 });
    // The unsorted cursor is still the next key's id.
    expect(first.body.pagination.cursor).toBe(all[2]!.keyId);
  });

  it("pages stay complete when keys are added and removed between them: no unchanged key skipped or repeated", async () => {
    const { apiId: other } = (await s.call("apis.createApi", { name: "moving" })).body.data;
    const make = async (name?: string) => {
      const res = await s.call("keys.createKey", { apiId: other, ...(name ? { name } : {}) });
      return res.body.data.keyId as string;
    };
    const names = ["d", "d", "f", "h", "h", "j", undefined, "l", undefined];
    const made: string[] = [];
    for (const name of names) made.push(await make(name));
    const first = await s.call("apis.listKeys", { apiId: other, limit: 3, sort: { by: "name", order: "asc" } });
    const seen: Listed[] = [...first.body.data];
    const seenIds = new Set(seen.map((k) => k.keyId));
    // A key before the cursor, one after, and one unnamed; one seen and one not yet seen deleted.
    const before = await make("a");
    const after = await make("i");
    const unnamed = await make();
    const gone = made.find((id) => !seenIds.has(id) && id !== made[7])!;
    for (const keyId of [seen[0]!.keyId, gone]) expect((await s.call("keys.deleteKey", { keyId })).status).toBe(200);
    let cursor: string | undefined = first.body.pagination.cursor;
    while (cursor) {
      const res = await s.call("apis.listKeys", { apiId: other, limit: 3, cursor, sort: { by: "name", order: "asc" } });
      expect(res.status).toBe(200);
      seen.push(...res.body.data);
      cursor = res.body.pagination.hasMore ? res.body.pagination.cursor : undefined;
    }
    const ids = seen.map((k) => k.keyId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of made) if (id !== gone) expect(ids).toContain(id);
    expect(ids).not.toContain(gone);
    expect(ids).not.toContain(before);
    expect(ids).toContain(after);
    expect(ids).toContain(unnamed);
    // What came after the first page is in order.
    const rest = seen.slice(3);
    expect(rest.map((k) => k.keyId)).toEqual(expected(rest, "name", "asc"));
  });

  it("sorts what a search or an owner filter keeps", async () => {
    const { apiId: other } = (await s.call("apis.createApi", { name: "searched" })).body.data;
    const made: Listed[] = [];
    for (const [i, name] of ["billing c", "report a", "Billing a", "billing b", "report b", "BILLING d"].entries()) {
      const res = await s.call("keys.createKey", { apiId: other, name, ...(i % 2 === 0 ? { externalId: "acme-sort" } : {}) });
      made.push({ keyId: res.body.data.keyId, name, start: "", createdAt: 0 });
    }
    // By code point: capitals before lower case.
    const billing = made.filter((k) => k.name!.toLowerCase().startsWith("billing"));
    const searched = await s.call("apis.listKeys", { apiId: other, search: "billing", sort: { by: "name", order: "desc" } });
    expect(searched.body.data.map((k: Listed) => k.name)).toEqual(["billing c", "billing b", "Billing a", "BILLING d"]);
    expect(searched.body.data.map((k: Listed) => k.keyId)).toEqual(expected(billing, "name", "desc"));
    const pagedOf = async (body: Record<string, unknown>) => {
      const out: string[] = [];
      let cursor: string | undefined;
      do {
        const res = await s.call("apis.listKeys", { apiId: other, limit: 1, ...body, ...(cursor ? { cursor } : {}) });
        expect(res.status).toBe(200);
        out.push(...res.body.data.map((k: Listed) => k.name));
        cursor = res.body.pagination.hasMore ? res.body.pagination.cursor : undefined;
      } while (cursor);
      return out;
    };
    expect(await pagedOf({ search: "billing", sort: { by: "name", order: "desc" } })).toEqual([
      "billing c",
      "billing b",
      "Billing a",
      "BILLING d",
    ]);
    expect(await pagedOf({ externalId: "acme-sort", sort: { by: "name" } })).toEqual(["Billing a", "billing c", "report b"]);
    expect(await pagedOf({ externalId: "acme-sort", search: "billing", sort: { by: "name", order: "desc" } })).toEqual([
      "billing c",
      "Billing a",
    ]);
  });

  it("refuses a bad sort and a cursor of another sort with 400, repeating none of the caller's values", async () => {
    for (const sort of [{ by: "lastUsed" }, { by: "name", order: "up" }, { order: "asc" }, { by: "name", extra: 1 }, "name"]) {
      const res = await s.call("apis.listKeys", { apiId, sort });
      expect(res.status).toBe(400);
      expect(res.body.error.errors.length).toBeGreaterThan(0);
      expect(JSON.stringify(res.body)).not.toContain("lastUsed");
    }
    const page = await s.call("apis.listKeys", { apiId, limit: 2, sort: { by: "name" } });
    const cursor = page.body.pagination.cursor as string;
    expect((await s.call("apis.listKeys", { apiId, limit: 2, sort: { by: "name" }, cursor })).status).toBe(200);
    const secret = "not-a-cursor-8f2c1d";
    for (const body of [
      { sort: { by: "name", order: "desc" }, cursor },
      { sort: { by: "expires" }, cursor },
      { sort: { by: "name" }, cursor: secret },
      { sort: { by: "name" }, cursor: all[0]!.keyId },
    ]) {
      const res = await s.call("apis.listKeys", { apiId, ...body });
      expect(res.status).toBe(400);
      expect(res.body.error.errors).toEqual([expect.objectContaining({ location: "body.cursor" })]);
      expect(JSON.stringify(res.body)).not.toContain(body.cursor);
    }
  });
});
