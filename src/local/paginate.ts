// Cursor pagination shared by every list operation: items ordered by id, `cursor` = id of the
// next page's first item (inclusive), omitted on the last page.
import type { Pagination } from "../protocol/types";

export const DEFAULT_PAGE_SIZE = 100;

export interface Page<T> {
  items: T[];
  pagination: Pagination;
}

/** A page of items that `fetch` reads by id order, from `from` on, at most `limit` of them. */
export async function pageOf<T extends { id: string }>(
  fetch: (from: string | undefined, limit: number) => Promise<T[]>,
  cursor: string | undefined,
  limit = DEFAULT_PAGE_SIZE,
): Promise<Page<T>> {
  const found = await fetch(cursor, limit + 1);
  const next = found[limit];
  return { items: found.slice(0, limit), pagination: next ? { cursor: next.id, hasMore: true } : { hasMore: false } };
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
