// Cursor pagination shared by every list operation: items ordered by id, `cursor` = id of the
// next page's first item (inclusive), omitted on the last page; or, for a sorted listing, in the
// order and with the cursor its `Placing` gives.
import type { Pagination } from "../../protocol/types";

const DEFAULT_PAGE_SIZE = 100;

interface Page<T> {
  items: T[];
  pagination: Pagination;
}

/** How many records a filtered page reads from the store at a time. */
const CHUNK = 1000;

/** Where a listing in another order than by id places an item: in `fetch`'s terms, and on the wire. */
export interface Placing<T, F> {
  of(item: T): F;
  cursor(item: T): string;
}

const byId: Placing<{ id: string }, string> = { of: (item) => item.id, cursor: (item) => item.id };

/**
 * A page of the items `fetch` reads in order (from `from` inclusive, at most `limit` of them)
 * that `keep` accepts. Without `keep`, one read of `limit + 1` items; with it, reads in chunks until
 * the page (and the next page's first item) is found or the items run out. The order is by id
 * unless `placing` says where an item is (a sorted listing: its sort value and id).
 */
export async function pageOf<T extends { id: string }, F = string>(
  fetch: (from: F | undefined, limit: number) => Promise<T[]>,
  cursor: F | undefined,
  limit = DEFAULT_PAGE_SIZE,
  keep?: (item: T) => boolean,
  placing: Placing<T, F> = byId as unknown as Placing<T, F>,
): Promise<Page<T>> {
  const found: T[] = [];
  const chunk = keep ? Math.max(limit + 1, CHUNK) : limit + 1;
  const done = (): Page<T> => {
    const next = found[limit];
    return { items: found.slice(0, limit), pagination: next ? { cursor: placing.cursor(next), hasMore: true } : { hasMore: false } };
  };
  let from = cursor;
  let last: string | undefined;
  for (;;) {
    const batch = await fetch(from, chunk);
    for (const item of batch) {
      // Reads after the first start at the previous read's last item (inclusive): skip it.
      if (item.id === last || (keep && !keep(item))) continue;
      found.push(item);
      if (found.length > limit) return done();
    }
    if (batch.length < chunk) return done();
    const tail = batch[batch.length - 1]!;
    last = tail.id;
    from = placing.of(tail);
  }
}

/** A page of items already in id order. */
export function paginate<T extends { id: string }>(sorted: readonly T[], cursor: string | undefined, limit = DEFAULT_PAGE_SIZE): Page<T> {
  const from = cursor === undefined ? sorted : sorted.filter((item) => item.id >= cursor);
  const items = from.slice(0, limit);
  const next = from[limit];
  return { items, pagination: next ? { cursor: next.id, hasMore: true } : { hasMore: false } };
}

/** Case-insensitive substring match over the given fields. */
export function matchesSearch(search: string | undefined, ...fields: Array<string | undefined>): boolean {
  if (!search) return true;
  const needle = search.toLowerCase();
  return fields.some((f) => f !== undefined && f.toLowerCase().includes(needle));
}
