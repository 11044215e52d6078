// Runs an analytics plan over events held in memory: the memory store's query engine, with the
// same answers as the SQL the other stores run (see sql.ts).
import type { VerificationEvent } from "../records";
import { BUCKET_MS, outputType, setField, type AnalyticsPlan, type AnalyticsScope, type Column, type Condition, type Scalar } from "./plan";

type Value = string | number | readonly string[];

const FIELD: Readonly<Record<Column, keyof VerificationEvent>> = Object.freeze({
  request_id: "requestId",
  time: "time",
  workspace_id: "workspaceId",
  key_space_id: "keySpaceId",
  key_id: "keyId",
  identity_id: "identityId",
  external_id: "externalId",
  outcome: "outcome",
  region: "region",
  tags: "tags",
  spent_credits: "spentCredits",
});

function scalar(s: Scalar, e: VerificationEvent): Value {
  switch (s.kind) {
    case "column":
      return e[FIELD[s.column]];
    case "literal":
      return s.value;
    case "bucket":
      return Math.floor(e.time / BUCKET_MS[s.unit]) * BUCKET_MS[s.unit];
  }
}

function compare(a: Value, b: Value): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function test(c: Condition, e: VerificationEvent): boolean {
  switch (c.kind) {
    case "compare": {
      const d = compare(scalar(c.left, e), scalar(c.right, e));
      switch (c.op) {
        case "=":
          return d === 0;
        case "!=":
          return d !== 0;
        case "<":
          return d < 0;
        case "<=":
          return d <= 0;
        case ">":
          return d > 0;
        case ">=":
          return d >= 0;
      }
      break;
    }
    case "in": {
      const v = scalar(c.value, e);
      return c.list.includes(v as string | number) !== c.negated;
    }
    case "hasTag":
      return e.tags.includes(c.tag);
    case "and":
      return c.args.every((a) => test(a, e));
    case "or":
      return c.args.some((a) => test(a, e));
    case "not":
      return !test(c.arg, e);
  }
  return false;
}

/** The rows of `plan` over `events`, restricted to `scope`. */
export function evaluatePlan(
  plan: AnalyticsPlan,
  scope: AnalyticsScope,
  events: Iterable<VerificationEvent>,
): Array<Record<string, unknown>> {
  const apis = scope.keySpaceIds && new Set(scope.keySpaceIds);
  const rows: VerificationEvent[] = [];
  for (const e of events) {
    if (e.workspaceId !== scope.workspaceId || (apis && !apis.has(e.keySpaceId))) continue;
    if (plan.where && !test(plan.where, e)) continue;
    rows.push(e);
  }
  let out: Array<{ values: Value[]; first: VerificationEvent }>;
  if (plan.groupBy) {
    const groups = new Map<string, VerificationEvent[]>();
    for (const e of rows) {
      const k = JSON.stringify(plan.groupBy.map((g) => scalar(g, e)));
      let list = groups.get(k);
      if (!list) groups.set(k, (list = []));
      list.push(e);
    }
    // An aggregating query without GROUP BY answers one row, also over no rows.
    if (plan.groupBy.length === 0 && groups.size === 0) groups.set("[]", []);
    out = [...groups.values()].map((members) => ({
      first: members[0]!,
      values: plan.outputs.map((o) => {
        if (o.value.kind === "scalar") return scalar(o.value.scalar, members[0]!);
        const a = o.value.aggregate;
        if (a.kind === "count") return members.length;
        if (a.kind === "countIf") return members.filter((m) => test(a.condition, m)).length;
        return members.reduce((sum, m) => sum + (m[FIELD[a.column]] as number), 0);
      }),
    }));
  } else {
    out = rows.map((e) => ({ first: e, values: plan.outputs.map((o) => scalar((o.value as { scalar: Scalar }).scalar, e)) }));
  }
  if (plan.orderBy.length > 0) {
    out.sort((x, y) => {
      for (const term of plan.orderBy) {
        const a = term.output !== undefined ? x.values[term.output]! : scalar(term.scalar!, x.first);
        const b = term.output !== undefined ? y.values[term.output]! : scalar(term.scalar!, y.first);
        const d = compare(a, b);
        if (d !== 0) return term.descending ? -d : d;
      }
      return 0;
    });
  }
  return out.slice(0, plan.limit).map(({ values }) => {
    const row: Record<string, unknown> = {};
    plan.outputs.forEach((o, i) => {
      const v = values[i]!;
      setField(row, o.name, outputType(o) === "tags" ? [...(v as string[])] : v);
    });
    return row;
  });
}
