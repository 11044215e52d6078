// The validated form of an analytics query over `key_verifications_v1`: what parse.ts makes of
// the SQL text and what each store runs (SQLite and PostgreSQL as SQL with bound parameters,
// memory by evaluating it). Nothing in it is SQL text of the caller's.

/** The columns of `key_verifications_v1` and their value types. */
export const COLUMNS = Object.freeze({
  request_id: "string",
  time: "number",
  workspace_id: "string",
  key_space_id: "string",
  key_id: "string",
  identity_id: "string",
  external_id: "string",
  outcome: "string",
  region: "string",
  tags: "tags",
  spent_credits: "number",
} as const);

export type Column = keyof typeof COLUMNS;
export const COLUMN_NAMES: readonly Column[] = Object.freeze(Object.keys(COLUMNS) as Column[]);

/** Time buckets: `toStartOfMinute` / `toStartOfHour` / `toStartOfDay` (UTC), as epoch ms. */
export const BUCKET_MS = Object.freeze({ minute: 60_000, hour: 3_600_000, day: 86_400_000 });
export type BucketUnit = keyof typeof BUCKET_MS;

export type CompareOp = "=" | "!=" | "<" | "<=" | ">" | ">=";

/** A value for one row: a string, a number, or (for `tags`) an array of strings. */
export type Scalar =
  | { kind: "column"; column: Column }
  | { kind: "literal"; value: string | number }
  /** `time` floored to the start of its minute, hour or day (epoch ms). */
  | { kind: "bucket"; unit: BucketUnit };

/** A condition on one row. */
export type Condition =
  | { kind: "compare"; op: CompareOp; left: Scalar; right: Scalar }
  | { kind: "in"; value: Scalar; list: Array<string | number>; negated: boolean }
  /** `has(tags, 'x')`: the row's tags hold this tag. */
  | { kind: "hasTag"; tag: string }
  | { kind: "and" | "or"; args: Condition[] }
  | { kind: "not"; arg: Condition };

type Aggregate =
  | { kind: "count" }
  /** `sum(column)` of a number column; 0 over no rows. */
  | { kind: "sum"; column: Column }
  | { kind: "countIf"; condition: Condition };

/** One output column: a per-row value or (in an aggregating query) an aggregate. */
export type Output = { name: string; value: { kind: "scalar"; scalar: Scalar } | { kind: "aggregate"; aggregate: Aggregate } };

export interface OrderTerm {
  /** Index into `outputs` when ordering by an output column; else a per-row value (non-aggregating queries only). */
  output?: number;
  scalar?: Scalar;
  descending: boolean;
}

export interface AnalyticsPlan {
  outputs: Output[];
  /** The caller's condition; undefined: every row. */
  where: Condition | undefined;
  /** Group keys; an aggregating query without GROUP BY has `[]` and answers one row. */
  groupBy: Scalar[] | undefined;
  orderBy: OrderTerm[];
  limit: number;
}

/** What the service adds to every plan, whatever the query says. */
export interface AnalyticsScope {
  workspaceId: string;
  /** Only these APIs' rows (an API-scoped root key); undefined: every API of the workspace. */
  keySpaceIds?: readonly string[];
}

/** The value type of a scalar. */
export function scalarType(s: Scalar): "string" | "number" | "tags" {
  if (s.kind === "column") return COLUMNS[s.column];
  if (s.kind === "bucket") return "number";
  return typeof s.value === "number" ? "number" : "string";
}

/** Whether an output is a number (aggregates, time, spent_credits, buckets, number literals). */
export function outputType(o: Output): "string" | "number" | "tags" {
  return o.value.kind === "aggregate" ? "number" : scalarType(o.value.scalar);
}

export function sameScalar(a: Scalar, b: Scalar): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === "column") return a.column === (b as typeof a).column;
  if (a.kind === "bucket") return a.unit === (b as typeof a).unit;
  return a.value === (b as typeof a).value;
}

/** Sets a row's field by an output name of the caller's (`__proto__` included) as an own property. */
export function setField(row: Record<string, unknown>, name: string, value: unknown): void {
  Object.defineProperty(row, name, { value, enumerable: true, writable: true, configurable: true });
}
