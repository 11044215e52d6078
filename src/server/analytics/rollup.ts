// Which part of an analytics plan the rollup tables can answer. The stores keep, beside the raw
// events, their counts per hour and per day (ROLLUP_TABLES): by outcome, and by every column but
// `time`, `request_id` and `spent_credits` (summed). A plan that only counts, sums spent_credits and
// groups or filters by those columns and by time buckets of an hour or more is answered from the
// rollups for the whole buckets inside its time range and from the raw events for the edges: the
// same rows as the raw table alone, for a fraction of the rows read.
import { BUCKET_MS, type AnalyticsPlan, type BucketUnit, type Condition, type Output, type Scalar } from "./plan";

/** The rollup units, largest first. */
const ROLLUP_UNITS = Object.freeze(["day", "hour"] as const);
type RollupUnit = (typeof ROLLUP_UNITS)[number];

/** Every column a rollup row may be keyed by (besides its bucket). */
const ROLLUP_DIMENSIONS = Object.freeze([
  "workspace_id",
  "key_space_id",
  "key_id",
  "identity_id",
  "external_id",
  "outcome",
  "tags",
  "region",
] as const);
export type RollupDimension = (typeof ROLLUP_DIMENSIONS)[number];

/** One rollup table: the counts per `unit` by `dimensions`, keyed (workspace_id, bucket, the other dimensions). */
export interface RollupTable {
  table: string;
  unit: RollupUnit;
  dimensions: readonly RollupDimension[];
}

/**
 * The rollups, the fewest dimensions first: by outcome only (a few rows per bucket: the console's
 * charts and counts by outcome), and by every dimension (per key, identity, tag).
 */
const ROLLUP_FAMILIES: ReadonlyArray<{ dimensions: readonly RollupDimension[]; tables: Readonly<Record<RollupUnit, string>> }> =
  Object.freeze([
    {
      dimensions: ["workspace_id", "key_space_id", "outcome"],
      tables: { hour: "key_verifications_outcomes_per_hour", day: "key_verifications_outcomes_per_day" },
    },
    { dimensions: ROLLUP_DIMENSIONS, tables: { hour: "key_verifications_per_hour", day: "key_verifications_per_day" } },
  ]);

/** Every rollup table. */
export const ROLLUP_TABLES: readonly RollupTable[] = Object.freeze(
  ROLLUP_FAMILIES.flatMap((f) => ROLLUP_UNITS.map((unit) => ({ table: f.tables[unit], unit, dimensions: f.dimensions }))),
);

/** Time boundaries one plan may hold before it is answered from the raw events alone. */
const MAX_CUTS = 16;

/** Times `from` ≤ t < `to` (either side may be infinite). */
export interface TimeRange {
  from: number;
  to: number;
}

/** Where each part of a plan's rows is read: the raw events over `raw`, each rollup table over its ranges; the columns read. */
export interface RollupRoute {
  dimensions: readonly RollupDimension[];
  raw: TimeRange[];
  rollups: Array<{ table: string; unit: RollupUnit; ranges: TimeRange[] }>;
}

const PER_ROW = new Set<string>(ROLLUP_DIMENSIONS);

/** A boundary of a comparison of `time` with a literal: rows at or after it answer otherwise than rows before it. */
type TimeTest = { op: "<" | "<=" | ">" | ">="; value: number };

/** What a plan reads of each row, or undefined when a rollup row cannot stand for its events. */
interface Reads {
  /** The smallest time bucket the plan uses (ms); Infinity: none. */
  smallestBucket: number;
  tests: TimeTest[];
  /** The columns read per row (besides time). */
  columns: Set<string>;
}

function readsOf(plan: AnalyticsPlan): Reads | undefined {
  if (!plan.groupBy) return undefined;
  const reads: Reads = { smallestBucket: Infinity, tests: [], columns: new Set() };
  const scalar = (s: Scalar): boolean => {
    if (s.kind === "literal") return true;
    if (s.kind === "bucket") {
      reads.smallestBucket = Math.min(reads.smallestBucket, BUCKET_MS[s.unit]);
      return true;
    }
    reads.columns.add(s.column);
    return PER_ROW.has(s.column);
  };
  const timeTest = (c: Extract<Condition, { kind: "compare" }>): TimeTest | undefined => {
    const isTime = (s: Scalar) => s.kind === "column" && s.column === "time";
    const literal = (s: Scalar) => s.kind === "literal" && typeof s.value === "number";
    if (c.op === "=" || c.op === "!=") return undefined;
    if (isTime(c.left) && literal(c.right)) return { op: c.op, value: (c.right as { value: number }).value };
    if (isTime(c.right) && literal(c.left)) {
      const flipped = ({ "<": ">", "<=": ">=", ">": "<", ">=": "<=" } as const)[c.op];
      return { op: flipped, value: (c.left as { value: number }).value };
    }
    return undefined;
  };
  const condition = (c: Condition): boolean => {
    switch (c.kind) {
      case "compare": {
        const test = timeTest(c);
        if (test) return (void reads.tests.push(test), true);
        return scalar(c.left) && scalar(c.right);
      }
      case "in":
        return scalar(c.value);
      case "hasTag":
        reads.columns.add("tags");
        return true;
      case "and":
      case "or":
        return c.args.every(condition);
      case "not":
        return condition(c.arg);
    }
  };
  const output = (o: Output): boolean => {
    if (o.value.kind === "scalar") return scalar(o.value.scalar);
    const a = o.value.aggregate;
    if (a.kind === "count") return true;
    if (a.kind === "sum") return a.column === "spent_credits";
    return condition(a.condition);
  };
  const ok = plan.outputs.every(output) && plan.groupBy.every(scalar) && (!plan.where || condition(plan.where));
  return ok ? reads : undefined;
}

/** `time op value` as the first time at which it changes: t ≥ cut. */
const cutOf = (t: TimeTest): number => (t.op === "<" || t.op === ">=" ? t.value : t.value + 1);

/** The time range every row must be in: the top-level AND's comparisons of time with a literal. */
function rangeOf(where: Condition | undefined): TimeRange {
  const range: TimeRange = { from: -Infinity, to: Infinity };
  const conjuncts = (c: Condition | undefined): Condition[] => (!c ? [] : c.kind === "and" ? c.args.flatMap(conjuncts) : [c]);
  for (const c of conjuncts(where)) {
    if (c.kind !== "compare") continue;
    const reads = readsOf({ outputs: [], where: c, groupBy: [], orderBy: [], limit: 0 });
    const test = reads?.tests[0];
    if (!test) continue;
    if (test.op === ">" || test.op === ">=") range.from = Math.max(range.from, cutOf(test));
    else range.to = Math.min(range.to, cutOf(test));
  }
  return range;
}

const alignUp = (t: number, ms: number) => (Number.isFinite(t) ? Math.ceil(t / ms) * ms : t);
const alignDown = (t: number, ms: number) => (Number.isFinite(t) ? Math.floor(t / ms) * ms : t);

/**
 * Where to read `plan`'s rows from, or undefined when only the raw events can answer it (it reads
 * `time` or `request_id` per row, compares `time` for equality, asks for minute buckets, uses
 * spent_credits outside sum(), has no whole bucket in its range, or has more than MAX_CUTS boundaries).
 */
export function routeRollup(plan: AnalyticsPlan): RollupRoute | undefined {
  const reads = readsOf(plan);
  if (!reads) return undefined;
  const range = rangeOf(plan.where);
  if (!(range.from < range.to)) return undefined;
  // Between two boundaries every comparison of time has one answer: a whole bucket there stands for its events.
  const cuts = [...new Set(reads.tests.map(cutOf))].filter((c) => c > range.from && c < range.to).sort((a, b) => a - b);
  if (cuts.length > MAX_CUTS) return undefined;
  const levels = ROLLUP_UNITS.filter((u) => BUCKET_MS[u] <= reads.smallestBucket);
  if (levels.length === 0) return undefined;
  // The family with the fewest rows that has every column the plan (and its scope) reads.
  const family = ROLLUP_FAMILIES.find((f) =>
    [...reads.columns, "workspace_id", "key_space_id"].every((c) => (f.dimensions as readonly string[]).includes(c)),
  )!;
  const route: RollupRoute = {
    dimensions: family.dimensions,
    raw: [],
    rollups: levels.map((unit) => ({ table: family.tables[unit], unit, ranges: [] })),
  };
  const add = (ranges: TimeRange[], from: number, to: number) => {
    const last = ranges[ranges.length - 1];
    if (last && last.to === from) last.to = to;
    else ranges.push({ from, to });
  };
  const cover = (from: number, to: number, level: number): void => {
    if (!(from < to)) return;
    if (level === levels.length) return add(route.raw, from, to);
    const ms = BUCKET_MS[levels[level]! as BucketUnit];
    const start = alignUp(from, ms);
    const end = alignDown(to, ms);
    if (!(start < end)) return cover(from, to, level + 1);
    cover(from, start, level + 1);
    add(route.rollups[level]!.ranges, start, end);
    cover(end, to, level + 1);
  };
  const points = [range.from, ...cuts, range.to];
  for (let i = 0; i + 1 < points.length; i++) cover(points[i]!, points[i + 1]!, 0);
  route.rollups = route.rollups.filter((r) => r.ranges.length > 0);
  return route.rollups.length > 0 ? route : undefined;
}
