// The portal's Analytics tab: portal.getVerifications over the last 24 hours or 30 days, for all the
// end user's keys or one of them, as the console's stacked bar chart with its table of totals.
import type { PortalSessionInfo, PortalVerificationsPoint } from "../../protocol/types";
import type { OutcomeBucket } from "../analytics";
import { outcomeChart } from "../chart";
import { field, h, replace } from "../dom";
import { attempt, newestLoad } from "../ui";
import { portalCall } from "./api";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const OUTCOMES: Array<[keyof PortalVerificationsPoint, string]> = [
  ["valid", "VALID"],
  ["rateLimited", "RATE_LIMITED"],
  ["insufficientPermissions", "INSUFFICIENT_PERMISSIONS"],
  ["forbidden", "FORBIDDEN"],
  ["disabled", "DISABLED"],
  ["expired", "EXPIRED"],
  ["usageExceeded", "USAGE_EXCEEDED"],
];

/** The service's points as the chart's buckets: one per outcome that happened. */
function buckets(points: readonly PortalVerificationsPoint[]): OutcomeBucket[] {
  return points.flatMap((p) => OUTCOMES.filter(([f]) => p[f] > 0).map(([f, outcome]) => ({ time: p.time, outcome, total: p[f] })));
}

export async function analyticsTab(main: HTMLElement, session: PortalSessionInfo): Promise<void> {
  const slot = h("div");
  const chart = h("div");
  const period = h(
    "select",
    { name: "period" },
    h("option", { value: "day" }, "Last 24 hours"),
    h("option", { value: "month" }, "Last 30 days"),
  );
  const key = h("select", { name: "key" }, h("option", { value: "" }, "All your keys"));
  if (session.scopes.includes("keys:read")) {
    const keys = await portalCall("portal.listKeys", { limit: 100 }).catch(() => []);
    for (const k of keys) key.append(h("option", { value: k.keyId }, `${k.name ?? "unnamed"} (${k.start}…)`));
  }
  const begin = newestLoad();
  const draw = () => {
    const newest = begin();
    return attempt(slot, "read your usage", async () => {
      const month = period.value === "month";
      const step = month ? DAY : HOUR;
      const to = Math.ceil(Date.now() / step) * step;
      const from = to - (month ? 30 * DAY : DAY);
      const points = await portalCall("portal.getVerifications", {
        startTime: from,
        endTime: to,
        ...(key.value ? { keyId: key.value } : {}),
      });
      if (!newest()) return;
      const label = (ms: number) =>
        new Date(ms).toLocaleString(undefined, month ? { month: "short", day: "numeric" } : { hour: "2-digit", minute: "2-digit" });
      replace(chart, outcomeChart(buckets(points), from, to, step, label));
    });
  };
  period.addEventListener("change", () => void draw());
  key.addEventListener("change", () => void draw());
  replace(main, h("h1", {}, "Usage"), h("div", { class: "card toolbar" }, field("Period", period), field("Key", key)), slot, chart);
  await draw();
}
