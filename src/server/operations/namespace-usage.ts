// keyguard's own ratelimit.getNamespaceUsage: how many ratelimit.limit calls passed and how many
// were refused in one namespace, per hour or per day (UTC), every point of the range present
// (zero when nothing was counted). The counts are written with the verification events, about a
// second after the calls.
import type { RatelimitGetNamespaceUsageRequest, RatelimitUsagePoint, ValidationErrorDetail } from "../../protocol/types";
import { onNamespace } from "./authorization";
import { defineExtension } from "./operation";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Points one answer may hold: 31 days by hour, 366 by day. */
const MAX_POINTS = { hour: 31 * 24, day: 366 } as const;

/** The range's points: start taken back to its bucket, end forward to the end of its bucket. */
function rangeOf(body: RatelimitGetNamespaceUsageRequest): { step: number; from: number; until: number } {
  const step = body.granularity === "day" ? DAY_MS : HOUR_MS;
  return { step, from: Math.floor(body.start / step) * step, until: Math.ceil(body.end / step) * step };
}

export const getNamespaceUsageOperation = defineExtension("ratelimit.getNamespaceUsage", {
  // Outside a transaction, as analytics: the counts are read from the store itself.
  access: "direct",
  authorize: onNamespace("read_override"),
  refine(body) {
    const out: ValidationErrorDetail[] = [];
    if (body.end <= body.start) {
      out.push({ location: "body.end", message: "must be after start", fix: "Send an end (Unix ms, exclusive) later than start." });
      return out;
    }
    const granularity = body.granularity ?? "hour";
    const { step, from, until } = rangeOf(body);
    if ((until - from) / step > MAX_POINTS[granularity]) {
      out.push({
        location: "body.end",
        message: `is more than ${MAX_POINTS[granularity]} ${granularity}s after start`,
        fix: granularity === "hour" ? 'Ask for a shorter range, or for granularity "day".' : "Ask for a shorter range.",
      });
    }
    return out;
  },
  async run(ctx, body) {
    const ns = ctx.resource;
    const { step, from, until } = rangeOf(body);
    const rows = await ctx.analytics.ratelimitCounts({ workspaceId: ns.workspaceId, namespaceIds: [ns.id], from, until });
    const points = new Map<number, RatelimitUsagePoint>();
    for (let time = from; time < until; time += step) points.set(time, { time, passed: 0, limited: 0, total: 0 });
    for (const row of rows) {
      const point = points.get(Math.floor(row.hour / step) * step);
      if (point === undefined) continue;
      point.passed += row.passed;
      point.limited += row.limited;
      point.total += row.passed + row.limited;
    }
    return { data: [...points.values()] };
  },
});
