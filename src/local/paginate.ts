// Cursor pagination shared by every list operation: items ordered by id, `cursor` = id of the
// next page's first item (inclusive), omitted on the last page.
import type { Pagination } from "../protocol/types";

export const DEFAULT_PAGE_SIZE = 100;

export function paginate<T extends { id: string }>(
  sorted: readonly T[],
  cursor: string | undefined,
  limit = DEFAULT_PAGE_SIZE,
): { items: T[]; pagination: Pagination } {
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
