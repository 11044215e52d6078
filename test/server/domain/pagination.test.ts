// pageOf: pages read from a store in id order, filtered pages read in chunks. Walking every page
// gives every matching item once, in order.
import { describe, expect, it } from "vitest";
import { pageOf } from "../../../src/server/domain/pagination";

const items = Array.from({ length: 2500 }, (_, i) => ({ id: `x_${String(i).padStart(5, "0")}` }));
const reads: number[] = [];
const fetch = async (from: string | undefined, limit: number) => {
  reads.push(limit);
  const start = from === undefined ? 0 : items.findIndex((x) => x.id >= from);
  return start < 0 ? [] : items.slice(start, start + limit);
};

async function walk(limit: number, keep?: (x: { id: string }) => boolean): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await pageOf(fetch, cursor, limit, keep);
    seen.push(...page.items.map((x) => x.id));
    expect(page.items.length).toBeLessThanOrEqual(limit);
    if (!page.pagination.hasMore) return seen;
    expect(page.items).toHaveLength(limit);
    cursor = page.pagination.cursor;
  }
}

describe("pageOf", () => {
  it("without a filter: one read of limit + 1 per page, every item once", async () => {
    reads.length = 0;
    expect(await walk(100)).toEqual(items.map((x) => x.id));
    expect(new Set(reads)).toEqual(new Set([101]));
  });

  it("with a filter: pages of matching items across chunk boundaries, every match once", async () => {
    const keep = (x: { id: string }) => x.id.endsWith("7") || x.id === "x_00999" || x.id === "x_01000";
    expect(await walk(7, keep)).toEqual(items.filter(keep).map((x) => x.id));
    // Rare matches: a page reads several chunks.
    const rare = (x: { id: string }) => x.id === "x_00003" || x.id === "x_02499";
    expect(await walk(1, rare)).toEqual(["x_00003", "x_02499"]);
    expect(await walk(5, () => false)).toEqual([]);
  });
});
