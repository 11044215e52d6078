// A rate-limit namespace's usage (keyguard's ratelimit.getNamespaceUsage): the ratelimit.limit calls
// that passed and those refused, per hour or per day, as the console's stacked bar chart with its
// table of totals. The service writes its counts about a second after the calls; Refresh reads again.
import type { RatelimitUsagePoint } from "../../protocol/types";
import type { OutcomeBucket } from "../analytics";
import { call, type ApiError } from "../api";
import { outcomeChart } from "../chart";
import { field, h, hourMinute, replace, when } from "../dom";
import { attempt, newestLoad } from "../ui";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const dayMonth = (ms: number) => new Date(ms).toLocaleDateString([], { month: "short", day: "numeric" });
const RANGES = {
  "24h": { label: "last 24 hours (by hour)", span: DAY, step: HOUR, granularity: "hour", tick: hourMinute },
  "7d": { label: "last 7 days (by hour)", span: 7 * DAY, step: HOUR, granularity: "hour", tick: dayMonth },
  "30d": { label: "last 30 days (by day)", span: 30 * DAY, step: DAY, granularity: "day", tick: dayMonth },
} as const;
type Range = keyof typeof RANGES;

/** The service's points as the chart's buckets: PASSED and LIMITED where they are not zero. */
function buckets(points: readonly RatelimitUsagePoint[]): OutcomeBucket[] {
  return points.flatMap((p) => [
    ...(p.passed > 0 ? [{ time: p.time, outcome: "PASSED", total: p.passed }] : []),
    ...(p.limited > 0 ? [{ time: p.time, outcome: "LIMITED", total: p.limited }] : []),
  ]);
}

/** The usage section of one namespace's page, read by load() (again by its Refresh button and period). */
export function namespaceUsage(namespace: string): { element: HTMLElement; load(): Promise<void> } {
  const range = h(
    "select",
    { name: "usageRange" },
    Object.entries(RANGES).map(([value, r]) => h("option", { value }, r.label)),
  );
  const slot = h("div");
  const summary = h("p", { "data-testid": "usage-summary" });
  const chartBox = h("div");
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const element = h(
    "section",
    { "aria-labelledby": "usage-title", "data-testid": "namespace-usage" },
    h("h2", { id: "usage-title" }, "Usage"),
    h(
      "p",
      { class: "muted" },
      `ratelimit.limit calls in this namespace that passed and that were refused (all identifiers), counted about a second after the calls. Times in ${zone}.`,
    ),
    h("div", { class: "toolbar" }, field("Period", range), h("button", { type: "button", onclick: () => void load() }, "Refresh")),
    slot,
    summary,
    chartBox,
  );
  const begin = newestLoad();
  const load = async () => {
    const newest = begin();
    const r = RANGES[range.value as Range];
    const end = Math.ceil((Date.now() + 1) / r.step) * r.step;
    const start = end - r.span;
    await attempt(
      slot,
      "read this namespace's usage",
      async () => {
        const { data } = await call("ratelimit.getNamespaceUsage", { namespace, start, end, granularity: r.granularity });
        if (!newest()) return;
        const passed = data.reduce((a, p) => a + p.passed, 0);
        const limited = data.reduce((a, p) => a + p.limited, 0);
        const total = passed + limited;
        summary.textContent =
          total === 0
            ? `No rate-limit checks in this period (since ${when(start)}).`
            : `${total.toLocaleString()} checks since ${when(start)}: ${passed.toLocaleString()} passed, ${limited.toLocaleString()} refused (${Math.round((100 * limited) / total)} %).`;
        replace(chartBox, outcomeChart(buckets(data), start, end, r.step, r.tick, "Rate-limit checks"));
      },
      (e: ApiError) =>
        e.type.endsWith("routing/not_found")
          ? "This key service does not count rate-limit usage (keyguard's ratelimit.getNamespaceUsage)."
          : undefined,
    );
  };
  range.addEventListener("change", () => void load());
  return { element, load };
}
