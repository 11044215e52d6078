// analytics.getVerifications' SQL: parsed by node-sql-parser (its PostgreSQL grammar, loaded on
// first use: an optional peer dependency) and checked into an AnalyticsPlan. Everything outside
// the documented subset is refused with production's error kinds; nothing of the text is kept
// but values, which the stores bind as parameters. An error message never repeats the caller's
// text (a table, column or function name, an alias, a number, the parser's own message quoting the
// query): it names what was wrong by its place and length, and names only words from the closed
// lists below (the table, its columns, the supported functions, known SQL words).
import type { ErrorKind } from "../../protocol/errors";
import { described } from "../domain/caller-value";
import { ServiceError } from "../errors";
import { LocalServiceConfigError } from "../errors";
import { loadPeer } from "../peer-module";
import {
  COLUMNS,
  COLUMN_NAMES,
  sameScalar,
  scalarType,
  type AnalyticsPlan,
  type BucketUnit,
  type Column,
  type CompareOp,
  type Condition,
  type OrderTerm,
  type Output,
  type Scalar,
} from "./plan";

/** The one table a query may read. */
const TABLE = "key_verifications_v1";
/** Longest query text accepted (characters), checked before parsing. */
const MAX_QUERY_LENGTH = 10_000;
/**
 * Deepest nesting of parentheses in the query text, checked before parsing (the parser recurses once
 * per level, and a few thousand levels overflow its stack).
 */
const MAX_PARENTHESES = 32;
/**
 * Deepest nesting of conditions (NOT, and AND inside OR inside AND…; a chain of one operator counts
 * once). The stores' SQL has limits of its own (SQLite: an expression tree at most 1,000 deep), and no
 * real question needs more.
 */
const MAX_CONDITION_DEPTH = 32;
/** Most conditions in one query (each comparison, IN, has, NOT, AND, OR counts one): SQLite's expression limit is 1,000 deep. */
const MAX_CONDITIONS = 500;
/** Most rows one answer holds: a query that would return more is refused (422). */
export const MAX_ROWS = 10_000;

const INTERVAL_MS: Readonly<Record<string, number>> = Object.freeze({
  second: 1000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 7 * 86_400_000,
});
const BUCKETS: Readonly<Record<string, BucketUnit>> = Object.freeze({
  tostartofminute: "minute",
  tostartofhour: "hour",
  tostartofday: "day",
});
const COMPARE: Readonly<Record<string, CompareOp>> = Object.freeze({
  "=": "=",
  "!=": "!=",
  "<>": "!=",
  "<": "<",
  "<=": "<=",
  ">": ">",
  ">=": ">=",
});
/** Statements other than SELECT an error may name (a closed list: any other first word is described by its length). */
const STATEMENTS: ReadonlySet<string> = new Set(
  "ALTER ANALYZE ATTACH BEGIN CALL COMMIT COPY CREATE DELETE DETACH DO DROP EXPLAIN GRANT INSERT LOCK MERGE OPTIMIZE PRAGMA RENAME REPLACE REVOKE ROLLBACK SET SHOW SYSTEM TRUNCATE UPDATE USE VACUUM".split(
    " ",
  ),
);
/** Functions an error may name: the supported ones by their documented spelling, and common ones refused. */
const FUNCTION_NAMES: Readonly<Record<string, string>> = Object.freeze(
  Object.fromEntries(
    [
      "count countIf sum toStartOfMinute toStartOfHour toStartOfDay fromUnixTimestamp64Milli now has",
      "avg min max any uniq uniqExact median quantile group_concat string_agg array_agg stddev variance lower upper length concat substring file url",
    ]
      .join(" ")
      .split(" ")
      .map((name) => [name.toLowerCase(), name]),
  ),
);
/** INTERVAL units an error may name. */
const INTERVAL_UNITS: ReadonlySet<string> = new Set([
  "year",
  "quarter",
  "month",
  "millisecond",
  "microsecond",
  ...Object.keys(INTERVAL_MS),
]);
/** Operators an error may name (what the parser reads as one; any other is described). */
const OPERATORS: ReadonlySet<string> = new Set([
  "LIKE",
  "NOT LIKE",
  "ILIKE",
  "NOT ILIKE",
  "IS",
  "IS NOT",
  "||",
  "~",
  "~*",
  "!~",
  "!~*",
  "SIMILAR TO",
  "NOT SIMILAR TO",
  "+",
  "-",
  "*",
  "/",
  "%",
  "@>",
  "<@",
  "&&",
  "->",
  "->>",
  "#>",
  "#>>",
  "?",
]);

/** A function as an error names it: its documented spelling when the list holds it, else its length. */
function fnLabel(name: string): string {
  return FUNCTION_NAMES[name.toLowerCase()] ?? described("a function name", name);
}

const FLIPPED: Readonly<Record<CompareOp, CompareOp>> = Object.freeze({ "=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=" });

// The parser's AST, as far as this module reads it.
interface Node {
  type?: string;
  [field: string]: unknown;
}

type Parse = (sql: string) => unknown;
let parser: Promise<Parse> | undefined;

/** The parser, loaded once. Missing package: 412 `analytics_not_configured`, saying what to install. */
function loadParser(): Promise<Parse> {
  parser ??= loadPeer<{ Parser: new () => { astify(sql: string): unknown } }>(
    "node-sql-parser",
    "analytics.getVerifications",
    () => import("node-sql-parser/build/postgresql.js"),
  ).then(
    (mod) => {
      const p = new mod.Parser();
      return (sql: string) => p.astify(sql);
    },
    (err: unknown) => {
      parser = undefined;
      // Only a missing package is a configuration answer; anything else is unexpected (500, logged).
      if (err instanceof LocalServiceConfigError) throw new ServiceError("data.analytics_not_configured", err.message);
      throw err;
    },
  );
  return parser;
}

function refuse(kind: ErrorKind, detail: string): never {
  throw new ServiceError(kind, detail);
}
function invalid(detail: string): never {
  throw new ServiceError("bad_request.invalid_analytics_query", detail);
}

/** The first word of a statement, after comments, blanks and opening parentheses. */
const FIRST_WORD = /^(?:\s|\(|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*([A-Za-z]+)/;

interface ParseContext {
  /** The service clock: what `now()` is. */
  now: number;
  /** Retention of the events, ms: a query asking for older rows is refused. */
  retentionMs: number;
}

/** Parses and checks `sql` into a plan, or throws a ServiceError of production's kinds. */
export async function parseAnalyticsQuery(sql: string, ctx: ParseContext): Promise<AnalyticsPlan> {
  if (sql.trim() === "") invalid("The query is empty. Send a SELECT over key_verifications_v1.");
  if (sql.length > MAX_QUERY_LENGTH) invalid(`The query exceeds the maximum length of ${MAX_QUERY_LENGTH} characters.`);
  if (parenthesesDepth(sql) > MAX_PARENTHESES) tooDeep(`parentheses more than ${MAX_PARENTHESES} levels deep`);
  const parse = await loadParser();
  let ast: unknown;
  try {
    ast = parse(sql);
  } catch (err) {
    // The parser recursing past the stack (a long chain of NOT, say) is the query's depth, not its syntax.
    if (err instanceof RangeError) tooDeep("more levels than the parser can follow");
    // A statement the grammar does not know (ATTACH, PRAGMA, VACUUM, COPY…) is still not a SELECT.
    const first = FIRST_WORD.exec(sql)?.[1]?.toUpperCase();
    if (first !== undefined && first !== "SELECT" && first !== "WITH") {
      const what = STATEMENTS.has(first) ? first : `a statement beginning with ${described("a word", first)}`;
      refuse("bad_request.invalid_analytics_query_type", `Only SELECT queries are allowed, not ${what}.`);
    }
    // The parser's message quotes the text it stopped at: only its position is passed on.
    const at = (err as { location?: { start?: { line?: unknown; column?: unknown } } } | null)?.location?.start;
    const where = typeof at?.line === "number" && typeof at.column === "number" ? ` at line ${at.line}, column ${at.column}` : "";
    invalid(`The query could not be parsed${where}.`);
  }
  const statements = (Array.isArray(ast) ? ast : [ast]) as Node[];
  if (statements.some((s) => s?.type !== "select")) {
    const other = statements.find((s) => s?.type !== "select")?.type ?? "unknown";
    refuse("bad_request.invalid_analytics_query_type", `Only SELECT queries are allowed, not ${String(other).toUpperCase()}.`);
  }
  if (statements.length !== 1) refuse("bad_request.invalid_analytics_query_type", "Send one SELECT statement per query.");
  return new Checker(ctx).select(statements[0]!);
}

function tooDeep(what: string): never {
  invalid(`The query nests ${what}. Flatten it: NOT NOT x is x, and a chain of AND (or of OR) needs no parentheses.`);
}

/** The deepest nesting of parentheses outside string literals and quoted identifiers. */
function parenthesesDepth(sql: string): number {
  let depth = 0;
  let deepest = 0;
  let quote: string | undefined;
  for (const ch of sql) {
    if (quote !== undefined) {
      // A doubled quote inside a literal closes and reopens it: the depth is the same either way.
      if (ch === quote) quote = undefined;
    } else if (ch === "'" || ch === '"' || ch === "`") quote = ch;
    else if (ch === "(") deepest = Math.max(deepest, ++depth);
    else if (ch === ")") depth--;
  }
  return deepest;
}

class Checker {
  private alias: string | undefined;
  private outputs: Output[] = [];
  private conditions = 0;
  constructor(private readonly ctx: ParseContext) {}

  select(s: Node): AnalyticsPlan {
    if (s._next || s.set_op) invalid("UNION, EXCEPT and INTERSECT are not supported here.");
    if (s.with) invalid("WITH (common table expressions) is not supported here.");
    if (s.having) invalid("HAVING is not supported here.");
    if (s.window) invalid("Window functions are not supported here.");
    if ((s.distinct as Node | null)?.type) invalid("SELECT DISTINCT is not supported here; use GROUP BY.");
    if ((s.into as Node | null)?.position) invalid("SELECT … INTO is not allowed.");
    this.from(s.from);
    const where = s.where ? this.condition(s.where as Node) : undefined;
    this.checkRetention(where);
    const groupNodes =
      ((s.groupby as Node | null)?.columns as Node[] | undefined) ?? (Array.isArray(s.groupby) ? (s.groupby as Node[]) : []);
    this.outputs = this.columns(s.columns as Node[] | undefined);
    const names = new Map<string, number>();
    for (const [i, o] of this.outputs.entries()) {
      const first = names.get(o.name);
      if (first !== undefined)
        invalid(`The selected columns ${first + 1} and ${i + 1} have the same name; give each its own alias (AS name).`);
      names.set(o.name, i);
    }
    const aggregating = groupNodes.length > 0 || this.outputs.some((o) => o.value.kind === "aggregate");
    let groupBy: Scalar[] | undefined;
    if (aggregating) {
      groupBy = groupNodes.map((g) => this.groupKey(g));
      for (const [i, o] of this.outputs.entries()) {
        if (o.value.kind !== "scalar" || o.value.scalar.kind === "literal") continue;
        const scalar = o.value.scalar;
        if (!groupBy.some((g) => sameScalar(g, scalar))) {
          invalid(`The selected column ${this.outputLabel(i)} must be in GROUP BY or inside an aggregate function.`);
        }
      }
    }
    const orderBy = ((s.orderby as Node[] | null) ?? []).map((o) => this.orderTerm(o, aggregating));
    return { outputs: this.outputs, where, groupBy, orderBy, limit: this.limit(s.limit as Node | null) };
  }

  /** A selected column as an error names it: its position, and its name when that is one of the table's columns. */
  private outputLabel(index: number): string {
    const name = this.outputs[index]?.name;
    return name !== undefined && COLUMN_NAMES.includes(name as Column) ? `${index + 1} (${name})` : String(index + 1);
  }

  private from(from: unknown): void {
    if (!Array.isArray(from) || from.length === 0) refuse("bad_request.invalid_analytics_table", `Read FROM ${TABLE}.`);
    if (from.length > 1) invalid("Joins are not supported here: read one table.");
    const t = from[0] as Node;
    if (t.expr) invalid("Subqueries are not supported here.");
    if (t.join) invalid("Joins are not supported here: read one table.");
    const name = [t.db, t.table].filter((part) => part !== null && part !== undefined).join(".");
    if (t.db || t.table !== TABLE)
      refuse("bad_request.invalid_analytics_table", `${described("The table after FROM", name)} is not available. The table is ${TABLE}.`);
    this.alias = typeof t.as === "string" ? t.as : undefined;
  }

  private columns(columns: Node[] | undefined): Output[] {
    if (!Array.isArray(columns) || columns.length === 0) return invalid("Select at least one column.");
    const out: Output[] = [];
    for (const c of columns) {
      const expr = c.expr as Node;
      if (expr?.type === "column_ref" && this.columnName(expr) === "*") {
        if (c.as) invalid("SELECT * cannot take an alias.");
        for (const column of COLUMN_NAMES) out.push({ name: column, value: { kind: "scalar", scalar: { kind: "column", column } } });
        continue;
      }
      const alias = typeof c.as === "string" ? c.as : undefined;
      const aggregate = this.aggregate(expr);
      if (aggregate) {
        out.push({ name: alias ?? aggregate.name, value: { kind: "aggregate", aggregate: aggregate.value } });
        continue;
      }
      const scalar = this.scalar(expr);
      out.push({ name: alias ?? this.defaultName(expr, scalar), value: { kind: "scalar", scalar } });
    }
    return out;
  }

  private defaultName(expr: Node, scalar: Scalar): string {
    if (scalar.kind === "column") return scalar.column;
    if (scalar.kind === "bucket") return this.functionName(expr) ?? "bucket";
    return String(scalar.value);
  }

  private groupKey(g: Node): Scalar {
    // An output's alias first (as ClickHouse resolves them), then a column or an expression.
    const name = g.type === "column_ref" ? this.columnName(g) : undefined;
    const output = name === undefined ? undefined : this.outputs.find((o) => o.name === name && !COLUMN_NAMES.includes(name as Column));
    let key: Scalar;
    if (output) {
      if (output.value.kind === "aggregate")
        return invalid(`GROUP BY cannot use an aggregate (the selected column ${this.outputLabel(this.outputs.indexOf(output))}).`);
      key = output.value.scalar;
    } else {
      if (g.type === "number") invalid("GROUP BY by position is not supported here; name the column.");
      key = this.scalar(g);
    }
    if (key.kind === "literal") invalid("GROUP BY needs a column or a time bucket, not a constant.");
    if (scalarType(key) === "tags") invalid("GROUP BY tags is not supported here.");
    return key;
  }

  private orderTerm(o: Node, aggregating: boolean): OrderTerm {
    const descending = String(o.type ?? "ASC").toUpperCase() === "DESC";
    const expr = o.expr as Node;
    const name = expr?.type === "column_ref" ? this.columnName(expr) : undefined;
    let index = name === undefined ? -1 : this.outputs.findIndex((out) => out.name === name);
    if (index === -1) {
      const aggregate = this.aggregate(expr);
      if (aggregate) {
        index = this.outputs.findIndex(
          (out) => out.value.kind === "aggregate" && JSON.stringify(out.value.aggregate) === JSON.stringify(aggregate.value),
        );
        if (index === -1) invalid("ORDER BY an aggregate needs that aggregate among the selected columns.");
      }
    }
    if (index !== -1) {
      if (
        this.outputs[index]!.value.kind === "scalar" &&
        scalarType((this.outputs[index]!.value as { scalar: Scalar }).scalar) === "tags"
      ) {
        invalid("ORDER BY tags is not supported here.");
      }
      return { output: index, descending };
    }
    const scalar = this.scalar(expr);
    if (scalarType(scalar) === "tags") invalid("ORDER BY tags is not supported here.");
    if (aggregating) {
      const same = this.outputs.findIndex((out) => out.value.kind === "scalar" && sameScalar(out.value.scalar, scalar));
      if (same === -1) invalid("In a query with GROUP BY or aggregates, ORDER BY must name a selected column.");
      return { output: same, descending };
    }
    return { scalar, descending };
  }

  private limit(limit: Node | null): number {
    const values = (limit?.value as Node[] | undefined) ?? [];
    if (values.length === 0) return MAX_ROWS + 1;
    if (values.length > 1 || (limit?.seperator && limit.seperator !== "")) invalid("OFFSET is not supported here; use LIMIT n alone.");
    const n = this.integer(values[0]!);
    if (n < 0) invalid("LIMIT must be 0 or more.");
    if (n > MAX_ROWS) invalid(`LIMIT must be at most ${MAX_ROWS}.`);
    return n;
  }

  /** An aggregate call, or undefined when `expr` is none. */
  private aggregate(
    expr: Node,
  ):
    | { name: string; value: Output["value"] extends infer V ? (V extends { kind: "aggregate"; aggregate: infer A } ? A : never) : never }
    | undefined {
    if (expr?.type === "aggr_func") {
      const fn = String(expr.name).toLowerCase();
      const args = expr.args as Node | undefined;
      if (args?.distinct) invalid(`${fnLabel(fn)}(DISTINCT …) is not supported here.`);
      if (expr.over) invalid("Window functions are not supported here.");
      const arg = args?.expr as Node | undefined;
      if (fn === "count") {
        if (arg && !(arg.type === "star" || (arg.type === "column_ref" && this.column(arg))))
          invalid("count takes *, a column or nothing.");
        return { name: "count", value: { kind: "count" } };
      }
      if (fn === "sum") {
        const column = arg?.type === "column_ref" ? this.column(arg) : undefined;
        if (!column || COLUMNS[column] !== "number") return invalid("sum takes a number column: spent_credits or time.");
        return { name: "sum", value: { kind: "sum", column } };
      }
      unsupported(fn);
    }
    if (expr?.type === "function") {
      const fn = this.functionName(expr)?.toLowerCase();
      const args = this.args(expr);
      if (fn === "count") {
        if (args.length > 1 || (args[0] && !(args[0].type === "star" || (args[0].type === "column_ref" && this.column(args[0])))))
          invalid("count takes *, a column or nothing.");
        return { name: "count", value: { kind: "count" } };
      }
      if (fn === "countif") {
        if (args.length !== 1) invalid("countIf takes one condition, e.g. countIf(outcome = 'VALID').");
        return { name: "countIf", value: { kind: "countIf", condition: this.condition(args[0]!) } };
      }
    }
    return undefined;
  }

  private functionName(expr: Node): string | undefined {
    const name = expr.name as { name?: Array<{ value?: unknown }>; schema?: unknown } | undefined;
    if (!name || !Array.isArray(name.name) || name.name.length !== 1 || name.schema) {
      refuse("bad_request.invalid_analytics_function", `This function is not supported here. Supported: ${SUPPORTED_FUNCTIONS}.`);
    }
    return String(name.name[0]!.value);
  }

  private args(expr: Node): Node[] {
    const args = expr.args as Node | undefined;
    if (!args) return [];
    if (args.type !== "expr_list" || !Array.isArray(args.value)) invalid("Unexpected function arguments.");
    return args.value as Node[];
  }

  private columnName(ref: Node): string {
    const c = ref.column as unknown;
    if (typeof c === "string") return c;
    const value = (c as { expr?: { value?: unknown } } | undefined)?.expr?.value;
    if (typeof value !== "string") return invalid("Unexpected column reference.");
    return value;
  }

  /** A column of the table (a qualifier, when given, must be the table or its alias). */
  private column(ref: Node): Column {
    const table = ref.table;
    if (table !== null && table !== undefined && table !== TABLE && table !== this.alias) {
      refuse("bad_request.invalid_analytics_table", `Unknown table: ${described("a column's qualifier", table)}. The table is ${TABLE}.`);
    }
    const name = this.columnName(ref);
    if (!Object.hasOwn(COLUMNS, name)) invalid(`Unknown column: ${described("a column name", name)}. Columns: ${COLUMN_NAMES.join(", ")}.`);
    return name as Column;
  }

  private integer(n: Node): number {
    if (n.type === "unary_expr" && n.operator === "-") return -this.integer(n.expr as Node);
    if (n.type !== "number" && n.type !== "bigint") invalid("Expected a whole number.");
    const value = Number(n.value);
    if (!Number.isSafeInteger(value))
      invalid(`A number of ${String(n.value).length} characters is not supported here: use whole numbers up to 2^53.`);
    return value;
  }

  private string(n: Node): string {
    const raw = String(n.value);
    if (raw.includes("\\")) invalid("Backslash escapes in strings are not supported here; write a quote as ''.");
    return raw.replaceAll("''", "'");
  }

  /** A per-row value: a column, a literal, a time bucket, or now() ± INTERVAL (a literal). */
  scalar(n: Node): Scalar {
    return this.scalarOf(n) ?? invalid(`This expression is not supported here${n?.type ? ` (${String(n.type)})` : ""}.`);
  }

  private scalarOf(n: Node): Scalar | undefined {
    switch (n?.type) {
      case "column_ref":
        if (this.columnName(n) === "*") invalid("* is allowed only as SELECT * or count(*).");
        return { kind: "column", column: this.column(n) };
      case "number":
      case "bigint":
        return { kind: "literal", value: this.integer(n) };
      case "single_quote_string":
      case "string":
        return { kind: "literal", value: this.string(n) };
      case "unary_expr":
        if (n.operator === "-") return { kind: "literal", value: this.integer(n) };
        break;
      case "binary_expr":
        if (n.operator === "-" || n.operator === "+") {
          const base = this.scalar(n.left as Node);
          const interval = n.right as Node;
          if (base.kind !== "literal" || typeof base.value !== "number" || interval?.type !== "interval") {
            return invalid("Arithmetic is supported only as now() - INTERVAL n unit.");
          }
          const unit = String(interval.unit).toLowerCase().replace(/s$/, "");
          const ms = INTERVAL_MS[unit];
          if (ms === undefined) {
            const what = INTERVAL_UNITS.has(unit) ? unit.toUpperCase() : described("an INTERVAL unit", String(interval.unit));
            return invalid(`The INTERVAL unit ${what} is not supported here: use SECOND, MINUTE, HOUR, DAY or WEEK.`);
          }
          const amount = this.integer(interval.expr as Node);
          return { kind: "literal", value: base.value + (n.operator === "-" ? -1 : 1) * amount * ms };
        }
        break;
      case "function": {
        const fn = this.functionName(n)!;
        const lower = fn.toLowerCase();
        const args = this.args(n);
        if (lower === "now") {
          if (args.length !== 0) invalid("now() takes no argument.");
          return { kind: "literal", value: this.ctx.now };
        }
        if (lower === "fromunixtimestamp64milli") {
          if (args.length !== 1 || args[0]!.type !== "column_ref" || this.column(args[0]!) !== "time")
            invalid("fromUnixTimestamp64Milli takes the column time.");
          return { kind: "column", column: "time" };
        }
        const unit = BUCKETS[lower];
        if (unit) {
          const arg = args.length === 1 ? this.scalar(args[0]!) : undefined;
          if (!arg || arg.kind !== "column" || arg.column !== "time")
            invalid(`${fnLabel(fn)} takes fromUnixTimestamp64Milli(time) (or time).`);
          return { kind: "bucket", unit };
        }
        if (lower === "count" || lower === "countif") invalid(`The aggregate ${fnLabel(fn)} is allowed only as a selected column.`);
        unsupported(fn);
        break;
      }
      case "aggr_func":
        invalid(`The aggregate ${fnLabel(String(n.name))} is allowed only as a selected column.`);
        break;
      case "bool":
      case "null":
        invalid(`${String(n.type).toUpperCase()} values are not supported here.`);
        break;
      default:
        if (n && (n.ast || n.type === "select")) invalid("Subqueries are not supported here.");
    }
    return undefined;
  }

  /** A condition on one row, `depth` levels inside the WHERE clause (or countIf). */
  condition(n: Node, depth = 1): Condition {
    if (depth > MAX_CONDITION_DEPTH) tooDeep(`conditions more than ${MAX_CONDITION_DEPTH} levels deep`);
    if (++this.conditions > MAX_CONDITIONS)
      invalid(`The query has more than ${MAX_CONDITIONS} conditions. Use IN ('a', 'b', …) for a list of values.`);
    if (n?.type === "unary_expr" && String(n.operator).toUpperCase() === "NOT")
      return { kind: "not", arg: this.condition(n.expr as Node, depth + 1) };
    if (n?.type === "function") {
      const fn = this.functionName(n)!.toLowerCase();
      const args = this.args(n);
      if (fn === "not" && args.length === 1) return { kind: "not", arg: this.condition(args[0]!, depth + 1) };
      if (fn === "has") {
        if (args.length !== 2 || args[0]!.type !== "column_ref" || this.column(args[0]!) !== "tags")
          invalid("has takes tags and a string: has(tags, 'name').");
        const tag = this.scalar(args[1]!);
        if (tag.kind !== "literal" || typeof tag.value !== "string") invalid("has takes tags and a string: has(tags, 'name').");
        return { kind: "hasTag", tag: tag.value };
      }
    }
    if (n?.type !== "binary_expr") invalid("Expected a condition (a comparison, IN, has(tags, …), AND, OR, NOT).");
    const op = String(n.operator).toUpperCase();
    if (op === "AND" || op === "OR") {
      // A chain of one operator is one level with many terms (the parser nests it one level per term).
      const terms: Node[] = [];
      const pending: Node[] = [n];
      while (pending.length > 0) {
        const t = pending.pop()!;
        if (t?.type === "binary_expr" && String(t.operator).toUpperCase() === op) pending.push(t.right as Node, t.left as Node);
        else terms.push(t);
      }
      return { kind: op === "AND" ? "and" : "or", args: terms.map((t) => this.condition(t, depth + 1)) };
    }
    if (op === "IN" || op === "NOT IN") {
      const value = this.scalar(n.left as Node);
      const list = n.right as Node;
      if (list?.type !== "expr_list" || !Array.isArray(list.value)) return invalid("IN takes a list of values: IN ('a', 'b').");
      const values = (list.value as Node[]).map((v) => this.scalar(v));
      const type = this.comparable(value);
      if (values.some((v) => v.kind !== "literal" || scalarType(v) !== type))
        invalid(`IN takes a list of ${type === "number" ? "numbers" : "strings"} here.`);
      return { kind: "in", value, list: values.map((v) => (v as { value: string | number }).value), negated: op === "NOT IN" };
    }
    if (op === "BETWEEN" || op === "NOT BETWEEN") {
      const value = this.scalar(n.left as Node);
      const range = (n.right as Node)?.value as Node[] | undefined;
      if (!Array.isArray(range) || range.length !== 2) return invalid("BETWEEN takes two values.");
      const inside: Condition = {
        kind: "and",
        args: [this.compare(">=", value, this.scalar(range[0]!)), this.compare("<=", value, this.scalar(range[1]!))],
      };
      return op === "BETWEEN" ? inside : { kind: "not", arg: inside };
    }
    const cmp = COMPARE[op];
    if (!cmp)
      return invalid(
        `The operator ${OPERATORS.has(op) ? op : "used"} is not supported here: use =, !=, <, <=, >, >=, IN, NOT IN, BETWEEN, AND, OR, NOT.`,
      );
    return this.compare(cmp, this.scalar(n.left as Node), this.scalar(n.right as Node));
  }

  private comparable(s: Scalar): "string" | "number" {
    const type = scalarType(s);
    if (type === "tags") return invalid("tags can only be tested with has(tags, 'name').");
    return type;
  }

  private compare(op: CompareOp, left: Scalar, right: Scalar): Condition {
    if (this.comparable(left) !== this.comparable(right)) invalid("A comparison needs two values of the same type (string or number).");
    return { kind: "compare", op, left, right };
  }

  /** Refuses a lower bound on time (a top-level `time >= t`) older than the retention. */
  private checkRetention(where: Condition | undefined): void {
    const oldest = this.ctx.now - this.ctx.retentionMs;
    const conjuncts = (c: Condition | undefined): Condition[] => (!c ? [] : c.kind === "and" ? c.args.flatMap(conjuncts) : [c]);
    const isTime = (s: Scalar) => (s.kind === "column" && s.column === "time") || s.kind === "bucket";
    for (const c of conjuncts(where)) {
      if (c.kind !== "compare") continue;
      let { op, left, right } = c;
      if (isTime(right) && !isTime(left)) [left, right, op] = [right, left, FLIPPED[op]];
      if (!isTime(left) || right.kind !== "literal" || typeof right.value !== "number") continue;
      if ((op === ">=" || op === ">" || op === "=") && right.value < oldest) {
        const days = Math.round(this.ctx.retentionMs / 86_400_000);
        refuse(
          "bad_request.query_range_exceeds_retention",
          `The query asks for verifications older than the retention of ${days} days (${this.ctx.retentionMs} ms); events older than that are deleted. Narrow the time range.`,
        );
      }
    }
  }
}

function unsupported(fn: string): never {
  refuse("bad_request.invalid_analytics_function", `The function ${fnLabel(fn)} is not supported here. Supported: ${SUPPORTED_FUNCTIONS}.`);
}

const SUPPORTED_FUNCTIONS = "count, countIf, sum, toStartOfMinute, toStartOfHour, toStartOfDay, fromUnixTimestamp64Milli, now, has";
