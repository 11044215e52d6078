// Outcomes over time as a stacked bar chart in plain SVG: one bar per time bucket, one colour per
// outcome, with a legend and a text table (the same numbers, for screen readers). What is counted
// (verifications, rate-limit checks) names the chart, the table's column and its empty row.
import { h, svg, thead } from "./dom";
import type { OutcomeBucket } from "./analytics";

const COLORS: Record<string, string> = {
  VALID: "#1d7a3a",
  RATE_LIMITED: "#b45309",
  USAGE_EXCEEDED: "#7c3aed",
  DISABLED: "#6b7280",
  EXPIRED: "#92400e",
  NOT_FOUND: "#b91c1c",
  FORBIDDEN: "#be185d",
  INSUFFICIENT_PERMISSIONS: "#1e40af",
  // ratelimit.limit outcomes (a namespace's usage).
  PASSED: "#1d7a3a",
  LIMITED: "#b45309",
  // keys.migrateKeys: keys imported, and refused as already here.
  IMPORTED: "#1e40af",
  HELD: "#6b7280",
};
const OTHER = "#0e7490";

export function outcomeChart(
  buckets: readonly OutcomeBucket[],
  from: number,
  to: number,
  step: number,
  label: (ms: number) => string,
  /** What the buckets count, capitalised: "Verifications", "Rate-limit checks", "Imports". */
  counted = "Verifications",
): HTMLElement {
  const W = 720;
  const H = 220;
  const pad = { l: 40, r: 8, t: 10, b: 28 };
  const slots = Math.max(1, Math.ceil((to - from) / step));
  const byTime = new Map<number, Map<string, number>>();
  const outcomes = new Set<string>();
  for (const b of buckets) {
    const slot = Math.floor((b.time - from) / step);
    if (slot < 0 || slot >= slots) continue;
    const m = byTime.get(slot) ?? new Map<string, number>();
    m.set(b.outcome, (m.get(b.outcome) ?? 0) + b.total);
    byTime.set(slot, m);
    outcomes.add(b.outcome);
  }
  const max = Math.max(1, ...[...byTime.values()].map((m) => [...m.values()].reduce((a, c) => a + c, 0)));
  const order = [...outcomes].sort();
  const bw = (W - pad.l - pad.r) / slots;
  const y = (v: number) => pad.t + (H - pad.t - pad.b) * (1 - v / max);
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-labelledby": "chart-title", class: "chart" });
  chart.append(svg("title", { id: "chart-title" }, `${counted} by outcome, ${label(from)} to ${label(to)}`));
  for (const v of [0, Math.round(max / 2), max]) {
    chart.append(svg("line", { x1: pad.l, x2: W - pad.r, y1: y(v), y2: y(v), class: "grid-line" }));
    chart.append(svg("text", { x: pad.l - 4, y: y(v) + 4, "text-anchor": "end", class: "axis" }, String(v)));
  }
  for (const [slot, m] of byTime) {
    let base = 0;
    for (const outcome of order) {
      const n = m.get(outcome) ?? 0;
      if (n === 0) continue;
      const rect = svg("rect", {
        x: pad.l + slot * bw + 1,
        width: Math.max(1, bw - 2),
        y: y(base + n),
        height: y(base) - y(base + n),
        fill: COLORS[outcome] ?? OTHER,
        "data-outcome": outcome,
      });
      rect.append(svg("title", {}, `${label(from + slot * step)}: ${n} ${outcome}`));
      chart.append(rect);
      base += n;
    }
  }
  for (const [i, anchor] of [
    [0, "start"],
    [Math.floor(slots / 2), "middle"],
    [slots - 1, "end"],
  ] as const) {
    const x = anchor === "start" ? pad.l : anchor === "end" ? W - pad.r : pad.l + i * bw + bw / 2;
    chart.append(svg("text", { x, y: H - 8, "text-anchor": anchor, class: "axis" }, label(from + i * step)));
  }
  const legend = h(
    "ul",
    { class: "legend" },
    order.map((o) => h("li", {}, h("span", { class: `swatch o-${o.toLowerCase()}`, "aria-hidden": "true" }), o)),
  );
  const totals = order.map((o) => [o, buckets.filter((b) => b.outcome === o && b.time >= from).reduce((a, b) => a + b.total, 0)] as const);
  const table = h(
    "table",
    { class: "totals", "data-testid": "outcome-totals" },
    h("caption", {}, "Totals in this period"),
    thead("Outcome", counted),
    h(
      "tbody",
      {},
      totals.length === 0
        ? h("tr", {}, h("td", { colspan: 2 }, `No ${counted.toLowerCase()} in this period.`))
        : totals.map(([o, n]) => h("tr", { "data-outcome": o }, h("td", {}, o), h("td", {}, String(n)))),
    ),
  );
  return h("figure", { class: "chart-box" }, chart, legend, table);
}
