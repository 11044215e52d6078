// Cursor-following iteration over every page of a list operation, bounded by a page count and
// guarded against a server whose cursors never end or repeat.

import { optionChecks } from "../option-checks";
import type { Pagination } from "../protocol/types";
import { KeyServiceConfigError, KeyServiceResponseError } from "./errors";
import type { CallOptions } from "./options";

/** A page of a list operation: the items, with non-enumerable `requestId` and `pagination`. */
export type Page<T> = T[] & { readonly requestId: string; readonly pagination: Pagination };

export interface ListAllOptions extends CallOptions {
  /** Most pages fetched before giving up with KeyServiceResponseError. Default 1000. */
  maxPages?: number;
}

const DEFAULT_MAX_PAGES = 1000;

/**
 * Yields every item of every page, fetching the next page only when the previous one is consumed.
 * `fetchPage(cursor)` fetches one page (`cursor` undefined for the first).
 */
export async function* paginate<T>(
  operation: string,
  fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
  maxPages?: number,
): AsyncGenerator<T, void, undefined> {
  const pages = optionChecks(operation, KeyServiceConfigError).integer("maxPages", maxPages, { min: 1, default: DEFAULT_MAX_PAGES });
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let page = 1; page <= pages; page++) {
    const items = await fetchPage(cursor);
    yield* items;
    const { hasMore, cursor: next } = items.pagination;
    if (!hasMore) return;
    const fail = (why: string) =>
      new KeyServiceResponseError(`${operation}: invalid paging from the key service: ${why}`, {
        operation,
        attempts: 1,
        status: 200,
        requestId: items.requestId,
      });
    if (next === undefined) throw fail("hasMore is true but there is no cursor");
    // The cursor is not quoted: it is the server's text and could echo anything.
    if (seen.has(next)) throw fail(`page ${page} gave a cursor that came back twice`);
    seen.add(next);
    cursor = next;
  }
  throw new KeyServiceResponseError(`${operation}: more than ${pages} pages; pass a larger maxPages if this is expected`, {
    operation,
    attempts: 1,
    status: 200,
  });
}
