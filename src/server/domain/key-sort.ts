// keyguard's own sorted `apis.listKeys`: a key's sort value, the order (a column, then id; a missing
// value greater than every value), a key's place in it, and the cursor that carries that place.
import type { KeySort } from "../../protocol/types";
import type { KeyRecord } from "../records";

export type { KeySort };
export type KeySortColumn = KeySort["by"];
/** A sort value: a string, a number, or `null` for a key without one. */
export type KeySortValue = string | number | null;

/** A key's place in a sorted listing: its sort value and its id. */
export interface KeyPosition {
  value: KeySortValue;
  id: string;
}

/** The value `key` is sorted by under `by`. */
function sortValue(key: KeyRecord, by: KeySortColumn): KeySortValue {
  switch (by) {
    case "name":
      return key.name ?? null;
    case "start":
      return key.start;
    case "createdAt":
      return key.createdAt;
    case "expires":
      return key.expires ?? null;
    case "credits":
      return key.credits?.remaining ?? null;
  }
}

/** Strings by code point (the order of UTF-8 bytes, which SQLite's BINARY and PostgreSQL's "C" use). */
function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return inCodePointOrder(x) - inCodePointOrder(y);
  }
  return a.length - b.length;
}

/** A UTF-16 unit moved so that units compare as code points do: surrogates after U+E000..U+FFFF. */
const inCodePointOrder = (unit: number) => (unit >= 0xe000 ? unit - 0x800 : unit >= 0xd800 ? unit + 0x2000 : unit);

/** Two places in ascending order: null values after every value, ties by id. */
function compareAscending(a: KeyPosition, b: KeyPosition): number {
  if (a.value !== b.value) {
    if (a.value === null) return 1;
    if (b.value === null) return -1;
    const d = typeof a.value === "number" ? a.value - (b.value as number) : compareCodePoints(a.value, b.value as string);
    if (d !== 0) return d;
  }
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Two places in the order of `sort`: negative when `a` comes first. */
function comparePositions(sort: KeySort, a: KeyPosition, b: KeyPosition): number {
  const d = compareAscending(a, b);
  return sort.order === "desc" ? -d : d;
}

export const positionOf = (key: KeyRecord, by: KeySortColumn): KeyPosition => ({ value: sortValue(key, by), id: key.id });

/** `keys` in the order of `sort`, from `from` (inclusive) on: what a store without SQL answers. */
export function sortKeys(keys: readonly KeyRecord[], sort: KeySort, from?: KeyPosition): KeyRecord[] {
  const placed = keys.map((key) => ({ key, at: positionOf(key, sort.by) }));
  placed.sort((a, b) => comparePositions(sort, a.at, b.at));
  return placed.filter((p) => from === undefined || comparePositions(sort, p.at, from) >= 0).map((p) => p.key);
}

/**
 * The wire cursor of a sorted listing: the next page's first place, with the sort it belongs to,
 * as base64url JSON. Opaque to callers; a key added or removed between pages moves no other key.
 */
export function encodeSortCursor(sort: KeySort, at: KeyPosition): string {
  return Buffer.from(JSON.stringify([sort.by, sort.order ?? "asc", at.id, at.value]), "utf8").toString("base64url");
}

/** The place a cursor of this sort carries; `undefined` when it is not one (another sort's, or not a cursor). */
export function decodeSortCursor(sort: KeySort, cursor: string): KeyPosition | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 4) return undefined;
  const [by, order, id, value] = parsed as unknown[];
  if (by !== sort.by || order !== (sort.order ?? "asc") || typeof id !== "string" || id === "") return undefined;
  const numeric = by === "createdAt" || by === "expires" || by === "credits";
  const fits = value === null ? by !== "start" && by !== "createdAt" : numeric ? Number.isSafeInteger(value) : typeof value === "string";
  return fits ? { value: value as KeySortValue, id } : undefined;
}
