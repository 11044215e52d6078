// Verifications: outcomes over time (chart) and the latest events, of the workspace or of one key,
// refreshed every few seconds while the page is open.
import { outcomesOverTime, latestEvents, type Bucket } from "../analytics";
import { outcomeChart } from "../chart";
import { field, h, hourMinute, replace, thead, when } from "../dom";
import { attempt, newestLoad } from "../ui";

const REFRESH_MS = 5000;
const RANGES: Record<string, { span: number; bucket: Bucket; step: number; label: (ms: number) => string }> = {
  "1h": { span: 3_600_000, bucket: "minute", step: 60_000, label: hourMinute },
  "24h": { span: 86_400_000, bucket: "hour", step: 3_600_000, label: hourMinute },
  "30d": { span: 30 * 86_400_000, bucket: "day", step: 86_400_000, label: (ms) => new Date(ms).toLocaleDateString() },
};

/** The chart and latest events (of one key when `keyId` is given), refreshed until the returned stop() is called. */
export async function usagePanel(keyId?: string): Promise<{ element: HTMLElement; stop(): void }> {
  const range = h(
    "select",
    { name: "range" },
    h("option", { value: "1h" }, "last hour (by minute)"),
    h("option", { value: "24h" }, "last 24 hours (by hour)"),
    h("option", { value: "30d" }, "last 30 days (by day)"),
  );
  const slot = h("div");
  const chartBox = h("div", { "aria-live": "off" });
  const events = h("div");
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const updated = h("p", { class: "muted", "data-testid": "updated" });
  const element = h(
    "div",
    {},
    h("div", { class: "toolbar" }, field("Period", range)),
    slot,
    h(
      "section",
      { "aria-labelledby": "chart-h" },
      h("h2", { id: "chart-h" }, "Outcomes over time"),
      h("p", { class: "muted" }, `Times in ${zone}.`),
      chartBox,
    ),
    h("section", { "aria-labelledby": "events-h" }, h("h2", { id: "events-h" }, keyId ? "Recent events" : "Latest events"), events),
    updated,
  );
  let stopped = false;
  const begin = newestLoad();
  const refresh = async () => {
    const newest = begin();
    const r = RANGES[range.value]!;
    const to = Date.now();
    const from = Math.floor((to - r.span) / r.step) * r.step + r.step;
    await attempt(slot, "read the verifications", async () => {
      const [buckets, latest] = await Promise.all([outcomesOverTime(from, r.bucket, keyId), latestEvents(20, keyId)]);
      if (stopped || !newest()) return;
      replace(chartBox, outcomeChart(buckets, from, to + r.step - (to % r.step), r.step, r.label));
      replace(
        events,
        latest.length === 0
          ? h("p", {}, "No verifications yet.")
          : h(
              "table",
              { "data-testid": "latest-events" },
              thead("Time", "Key", "Outcome", "Tags"),
              h(
                "tbody",
                {},
                latest.map((e) =>
                  h(
                    "tr",
                    {},
                    h("td", {}, when(e.time)),
                    h("td", {}, h("a", { href: `#/key/${encodeURIComponent(e.keyId)}` }, h("code", {}, e.keyId))),
                    h("td", {}, h("span", { class: `badge o-${e.outcome.toLowerCase()}` }, e.outcome)),
                    h("td", {}, e.tags.join(", ")),
                  ),
                ),
              ),
            ),
      );
      updated.textContent = `Updated ${when(Date.now())}; refreshed every ${REFRESH_MS / 1000} s while this page is open.`;
    });
  };
  range.addEventListener("change", () => void refresh());
  await refresh();
  const timer = setInterval(() => void refresh(), REFRESH_MS);
  return {
    element,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}

export async function verificationsPage(main: HTMLElement): Promise<() => void> {
  const usage = await usagePanel();
  replace(main, h("h1", {}, "Verifications"), usage.element);
  return usage.stop;
}
