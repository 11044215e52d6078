// An analytics plan as one SELECT for SQLite or PostgreSQL: every value of the caller's a bound
// parameter, every identifier one of ours (column names from plan.ts, output aliases c0, c1…).
// Routed (rollup.ts), it reads the rollups and the raw events' edges as one derived table, each
// row standing for `n` events.
import { BUCKET_MS, outputType, setField, type AnalyticsPlan, type AnalyticsScope, type Condition, type Scalar } from "./plan";
import type { RollupRoute, TimeRange } from "./rollup";

interface SqlDialect {
  /** The placeholder of the n-th parameter (1-based). */
  param(n: number): string;
  integer: string;
  /** A text value compared as the store compares its columns (by code point). */
  text(param: string): string;
  /** A condition: the row's `tags` hold the value of `param`. */
  hasTag(param: string): string;
  /** `tags` as the driver returns it → an array of strings. */
  readTags(value: unknown): string[];
}

export const SQLITE_DIALECT: SqlDialect = {
  param: () => "?",
  integer: "INTEGER",
  text: (p) => `CAST(${p} AS TEXT)`,
  hasTag: (p) => `EXISTS (SELECT 1 FROM json_each("tags") WHERE value = ${p})`,
  readTags: (v) => JSON.parse(String(v)) as string[],
};

export const POSTGRES_DIALECT: SqlDialect = {
  param: (n) => `$${n}`,
  integer: "bigint",
  text: (p) => `(CAST(${p} AS text) COLLATE "C")`,
  hasTag: (p) => `(CAST(${p} AS text) = ANY("tags"))`,
  readTags: (v) => (Array.isArray(v) ? (v as string[]) : []),
};

export interface CompiledQuery {
  text: string;
  params: Array<string | number>;
  /** Turns a driver row (c0, c1, …) into the answer's row. */
  read(row: Record<string, unknown>): Record<string, unknown>;
}

/** The raw events' table. */
const EVENTS = "key_verifications";

/**
 * `t(name)`: a table's name as the store spells it (PostgreSQL: schema-qualified). With `route`,
 * the rows come from the rollups and the raw edges it names.
 */
export function compilePlan(
  plan: AnalyticsPlan,
  scope: AnalyticsScope,
  t: (name: string) => string,
  d: SqlDialect,
  route?: RollupRoute,
): CompiledQuery {
  const params: Array<string | number> = [];
  const bind = (v: string | number): string => {
    params.push(v);
    const p = d.param(params.length);
    return typeof v === "number" ? `CAST(${p} AS ${d.integer})` : d.text(p);
  };
  const scalar = (s: Scalar): string => {
    switch (s.kind) {
      case "column":
        return `"${s.column}"`;
      case "literal":
        return bind(s.value);
      case "bucket":
        // Constants of ours, not the caller's: integer division floors (times are never negative).
        return `(("time" / ${BUCKET_MS[s.unit]}) * ${BUCKET_MS[s.unit]})`;
    }
  };
  const cond = (c: Condition): string => {
    switch (c.kind) {
      case "compare":
        return `(${scalar(c.left)} ${c.op === "!=" ? "<>" : c.op} ${scalar(c.right)})`;
      case "in":
        return `(${scalar(c.value)} ${c.negated ? "NOT IN" : "IN"} (${c.list.map(bind).join(", ")}))`;
      case "hasTag": {
        params.push(c.tag);
        return d.hasTag(d.param(params.length));
      }
      case "and":
      case "or":
        return `(${c.args.map(cond).join(c.kind === "and" ? " AND " : " OR ")})`;
      case "not":
        return `(NOT ${cond(c.arg)})`;
    }
  };
  const outputs = plan.outputs.map((o, i) => {
    let sql: string;
    if (o.value.kind === "scalar") sql = scalar(o.value.scalar);
    else {
      const a = o.value.aggregate;
      sql =
        a.kind === "count"
          ? route
            ? `coalesce(sum("n"), 0)`
            : "count(*)"
          : a.kind === "countIf"
            ? route
              ? `coalesce(sum(CASE WHEN ${cond(a.condition)} THEN "n" END), 0)`
              : `count(CASE WHEN ${cond(a.condition)} THEN 1 END)`
            : `coalesce(sum("${a.column}"), 0)`;
    }
    return `${sql} AS c${i}`;
  });
  const ranges = (column: string, list: TimeRange[]): string => {
    const one = (r: TimeRange): string => {
      const parts: string[] = [];
      if (Number.isFinite(r.from)) parts.push(`"${column}" >= ${bind(r.from)}`);
      if (Number.isFinite(r.to)) parts.push(`"${column}" < ${bind(r.to)}`);
      return parts.length === 0 ? "(1 = 1)" : `(${parts.join(" AND ")})`;
    };
    return `(${list.map(one).join(" OR ")})`;
  };
  let from = t(EVENTS);
  if (route) {
    // Each branch is bounded by the workspace and its time ranges, so it reads its index's range only.
    const branches: string[] = [];
    const dimensions = route.dimensions.map((c) => `"${c}"`).join(", ");
    if (route.raw.length > 0) {
      branches.push(
        `SELECT "time", ${dimensions}, 1 AS "n", "spent_credits" FROM ${t(EVENTS)} ` +
          `WHERE "workspace_id" = ${bind(scope.workspaceId)} AND ${ranges("time", route.raw)}`,
      );
    }
    for (const r of route.rollups) {
      branches.push(
        `SELECT "bucket" AS "time", ${dimensions}, "n", "spent_credits" FROM ${t(r.table)} ` +
          // A row whose events the retention deleted (n = 0) waits for its bucket's own deletion: not a group.
          `WHERE "workspace_id" = ${bind(scope.workspaceId)} AND ${ranges("bucket", r.ranges)} AND "n" > 0`,
      );
    }
    from = `(${branches.join(" UNION ALL ")}) AS v`;
  }
  // The scope first: whatever the caller's condition says, it is ANDed to these.
  const where = [`"workspace_id" = ${bind(scope.workspaceId)}`];
  if (scope.keySpaceIds) {
    where.push(scope.keySpaceIds.length === 0 ? "(1 = 0)" : `"key_space_id" IN (${scope.keySpaceIds.map(bind).join(", ")})`);
  }
  if (plan.where) where.push(cond(plan.where));
  let text = `SELECT ${outputs.join(", ")} FROM ${from} WHERE ${where.join(" AND ")}`;
  if (plan.groupBy && plan.groupBy.length > 0) text += ` GROUP BY ${plan.groupBy.map(scalar).join(", ")}`;
  if (plan.orderBy.length > 0) {
    text += ` ORDER BY ${plan.orderBy.map((t) => `${t.output !== undefined ? `c${t.output}` : scalar(t.scalar!)} ${t.descending ? "DESC" : "ASC"}`).join(", ")}`;
  }
  text += ` LIMIT ${bind(plan.limit)}`;
  const types = plan.outputs.map(outputType);
  const read = (row: Record<string, unknown>): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    plan.outputs.forEach((o, i) => {
      const v = row[`c${i}`];
      setField(out, o.name, types[i] === "tags" ? d.readTags(v) : types[i] === "number" ? Number(v) : v);
    });
    return out;
  };
  return { text, params, read };
}
