// Operation analytics.getVerifications: a SQL query over key_verifications_v1, checked into a plan
// (../analytics/parse.ts) and run by the store within the root key's workspace (and APIs).
import { MAX_ROWS, parseAnalyticsQuery } from "../analytics/query-check";
import type { AnalyticsScope } from "../analytics/plan";
import { AnalyticsTimeoutError } from "../analytics/time-limit";
import { requirePermission, type RootContext } from "./auth";
import { fromRoot } from "./authorization";
import { ServiceError } from "../errors";
import { defineOperation } from "./operation";

const READ_ANALYTICS = /^api\.([^.]+)\.read_analytics$/;

/** What the root key may read: its workspace, and only some APIs when it holds no `api.*.read_analytics` (403 with neither). */
function scopeOf(root: RootContext): AnalyticsScope {
  if (root.permissions.has("api.*.read_analytics")) return { workspaceId: root.workspaceId };
  const apiIds = [...root.permissions].flatMap((p) => READ_ANALYTICS.exec(p)?.[1] ?? []);
  if (apiIds.length === 0) requirePermission(root, ["api.*.read_analytics"]);
  return { workspaceId: root.workspaceId, keySpaceIds: apiIds };
}

export const getVerificationsOperation = defineOperation("analytics.getVerifications", {
  access: "direct",
  authorize: fromRoot("api.*.read_analytics or api.<apiId>.read_analytics", scopeOf),
  // The length limit is checked by the parser (production's invalid_analytics_query), not here.
  async run(ctx, body) {
    const plan = await parseAnalyticsQuery(body.query, { now: ctx.now, retentionMs: ctx.analytics.retentionMs });
    const rows = await ctx.analytics.query(plan, ctx.resource).catch((err: unknown) => {
      if (!(err instanceof AnalyticsTimeoutError)) throw err;
      // Production's answer to a query past its time limit.
      throw new ServiceError(
        "unprocessable_entity.query_execution_timeout",
        `Query execution time limit exceeded (${err.limitMs} ms). Try simplifying your query or reducing the time range.`,
      );
    });
    if (rows.length > MAX_ROWS) {
      throw new ServiceError(
        "unprocessable_entity.query_rows_limit_exceeded",
        `The query returns more than ${MAX_ROWS} rows. Add a LIMIT, aggregate with GROUP BY, or narrow the time range.`,
      );
    }
    return { data: rows };
  },
});
