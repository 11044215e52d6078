// Cursor pagination shared by every list operation: items ordered by id, `cursor` = id of the
// next page's first item (inclusive), omitted on the last page.
import type { Pagination } from "../../protocol/types";

const DEFAULT_PAGE_SIZE = 100;

interface Page<T> {
  items: T[];
  pagination: Pagination;
}

/** How many records a filtered page reads from the store at a time. */
const CHUNK = 1000;

/**
 * A page of the items `fetch` reads in id order (from `from` inclusive, at most `limit` of them)
 * that `keep` accepts. Without `keep`, one read of `limit + 1` items; with it, reads in chunks until
 * the page (and the next page's first item) is found or the items run out.
 */
export async function pageOf<T extends { id: string }>(
  fetch: (from: string | undefined, limit: number) => Promise<T[]>,
  cursor: string | undefined,
  limit = DEFAULT_PAGE_SIZE,
  keep?: (item: T) => boolean,
): Promise<Page<T>> {
  const found: T[] = [];
  const chunk = keep ? Math.max(limit + 1, CHUNK) : limit + 1;
  let from = cursor;
  let last: string | undefined;
  for (;;) {
    const batch = await fetch(from, chunk);
    for (const item of batch) {
      // Reads after the first start at the previous read's last item (inclusive): skip it.
      if (item.id === last || (keep && !keep(item))) continue;
      found.push(item);
      if (found.length > limit) return paginate(found, undefined, limit);
    }
    if (batch.length < chunk) return paginate(found, undefined, limit);
    last = batch[batch.length - 1]!.id;
    from = last;
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
