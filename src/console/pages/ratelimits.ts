// Rate-limit namespaces (#/ratelimits, #/ratelimits/<namespace>): the workspace's namespaces
// (keyguard's ratelimit.listNamespaces), one namespace's overrides (ratelimit.listOverrides, paged),
// set one (ratelimit.setOverride: new, or changed by its identifier), delete one with confirmation,
// and check an identifier (ratelimit.limit at cost 0, which also creates a new namespace), and its
// usage (namespace-usage.ts). Windows are entered and shown in seconds, minutes, hours or days.
import type { RatelimitNamespace, RatelimitOverride } from "../../protocol/types";
import { ApiError, call } from "../api";
import { field, h, replace, thead, when } from "../dom";
import { durationInput, durationText, windowProblem } from "../inputs";
import { announce, attempt, confirmDialog, errorPanel } from "../ui";
import { namespaceUsage } from "./namespace-usage";

const PAGE = 50;

const INTRO =
  "A namespace is created the first time ratelimit.limit (or multiLimit) names it; an override gives one identifier (or a pattern with *, e.g. team_*) its own limit.";

/** Whether an error is the service's "this namespace does not exist". */
const missingNamespace = (err: unknown) => err instanceof ApiError && err.status === 404 && /namespace/i.test(`${err.type} ${err.detail}`);

export async function ratelimitsPage(main: HTMLElement, namespace?: string): Promise<void> {
  const nsInput = h("input", { name: "namespace", required: true, maxlength: 512, value: namespace ?? "" });
  const open = h(
    "form",
    { class: "toolbar", "aria-label": "Open a namespace" },
    field("Namespace", nsInput, "A namespace's name or id, as your code passes it to ratelimit.limit"),
    h("button", { type: "submit" }, "Open namespace"),
  );
  open.addEventListener("submit", (ev) => {
    ev.preventDefault();
    location.hash = `#/ratelimits/${encodeURIComponent(nsInput.value.trim())}`;
  });
  if (!namespace) return namespacesPage(main, open);
  return namespacePage(main, namespace, open);
}

/** #/ratelimits: the namespaces, a page at a time, each a link to its overrides. */
async function namespacesPage(main: HTMLElement, open: HTMLElement): Promise<void> {
  const slot = h("div");
  const table = h("div");
  const more = h("div");
  replace(
    main,
    h("h1", {}, "Rate limits"),
    h("p", {}, INTRO),
    h("section", { "aria-labelledby": "ns-title" }, h("h2", { id: "ns-title" }, "Namespaces"), slot, table, more),
    open,
  );
  const rows: RatelimitNamespace[] = [];
  const draw = () =>
    replace(
      table,
      rows.length === 0
        ? h(
            "div",
            { class: "notice", "data-testid": "no-namespaces" },
            h("p", {}, "No namespace yet."),
            h(
              "p",
              {},
              "A namespace is created the first time your code calls ratelimit.limit with its name (e.g. ",
              h("code", {}, '{"namespace": "api.requests", "identifier": "user_42", "limit": 100, "duration": 60000}'),
              "), or when you open a name below and check an identifier.",
            ),
          )
        : h(
            "table",
            { "data-testid": "namespaces", class: "namespaces" },
            h("caption", {}, `Namespaces (${rows.length} loaded)`),
            thead("Name", "Id", "Created"),
            h(
              "tbody",
              {},
              rows.map((ns) =>
                h(
                  "tr",
                  { "data-namespace-id": ns.namespaceId },
                  h("td", {}, h("a", { href: `#/ratelimits/${encodeURIComponent(ns.name)}` }, ns.name)),
                  h("td", {}, h("code", {}, ns.namespaceId)),
                  h("td", {}, when(ns.createdAt)),
                ),
              ),
            ),
          ),
    );
  const load = async (cursor?: string) => {
    await attempt(
      slot,
      "list the namespaces",
      async () => {
        const { data, pagination } = await call("ratelimit.listNamespaces", { limit: PAGE, ...(cursor ? { cursor } : {}) });
        rows.push(...data);
        draw();
        replace(
          more,
          pagination?.hasMore ? h("button", { type: "button", onclick: () => void load(pagination.cursor) }, "Load more namespaces") : null,
        );
      },
      (e) => (e.status === 404 ? "This key service does not list namespaces: open one by its name below." : undefined),
    );
  };
  await load();
}

/** #/ratelimits/<namespace>: its overrides and a check; a namespace not created yet says how it gets created. */
async function namespacePage(main: HTMLElement, namespace: string, open: HTMLElement): Promise<void> {
  // Shown once the namespace is known to exist and be readable (by the overrides' listing).
  const usage = namespaceUsage(namespace);
  usage.element.hidden = true;
  const slot = h("div");
  const table = h("div");
  const more = h("div");
  const identifier = h("input", { name: "identifier", required: true, maxlength: 512 });
  const limit = h("input", { name: "limit", type: "number", required: true, min: 0, step: 1 });
  const duration = durationInput("Window", "duration", 60_000);
  const setSlot = h("div");
  const setForm = h(
    "form",
    { class: "card inline", "aria-label": "Set an override" },
    field("Identifier or pattern", identifier, "e.g. user_42 or team_*"),
    field("Limit", limit, "Requests per window; 0 refuses all"),
    duration.element,
    h("button", { type: "submit", class: "primary" }, "Set override"),
  );
  setForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const window = duration.read();
    const problem = windowProblem(window);
    if (problem)
      return replace(setSlot, errorPanel(new ApiError(0, "Check the form", `Window: ${problem}`, "", undefined), "set this override"));
    await attempt(setSlot, "set this override", async () => {
      const id = identifier.value.trim();
      await call("ratelimit.setOverride", { namespace, identifier: id, limit: Number(limit.value), duration: window });
      announce(`Override for ${id} set.`);
      setForm.reset();
      duration.set(60_000);
      await load();
    });
  });

  const probe = h("input", { name: "probe", required: true, maxlength: 512 });
  const probeLimit = h("input", { name: "probeLimit", type: "number", required: true, min: 1, step: 1, value: 10 });
  const probeDuration = durationInput("Default window", "probeDuration", 60_000);
  const probeSlot = h("div");
  const probeForm = h(
    "form",
    { class: "card inline", "aria-label": "Check an identifier" },
    field("Identifier to check", probe),
    field("Default limit", probeLimit, "Used when no override matches"),
    probeDuration.element,
    h("button", { type: "submit" }, "Check (cost 0)"),
  );
  probeForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    await attempt(probeSlot, "check this identifier", async () => {
      const window = probeDuration.read();
      const problem = windowProblem(window);
      if (problem) throw new ApiError(0, "Check the form", `Default window: ${problem}`, "", undefined);
      const { data } = await call("ratelimit.limit", {
        namespace,
        identifier: probe.value.trim(),
        limit: Number(probeLimit.value),
        duration: window,
        cost: 0,
      });
      replace(
        probeSlot,
        h(
          "p",
          { role: "status", "data-testid": "probe-result" },
          `${probe.value.trim()}: ${data.remaining} of ${data.limit} left until ${when(data.reset)}`,
          data.overrideId ? ` (override ${data.overrideId})` : " (no override)",
          ".",
        ),
      );
      await load();
      await usage.load();
    });
  });

  const overrides = h(
    "section",
    { "aria-labelledby": "ov-title" },
    h("h2", { id: "ov-title" }, "Overrides"),
    setForm,
    setSlot,
    slot,
    table,
    more,
  );
  replace(
    main,
    h("p", {}, h("a", { href: "#/ratelimits" }, "All namespaces")),
    h("h1", {}, `Rate limits: ${namespace}`),
    h("p", {}, INTRO),
    open,
    overrides,
    h("section", { "aria-labelledby": "probe-title" }, h("h2", { id: "probe-title" }, "Check an identifier"), probeForm, probeSlot),
    usage.element,
  );

  const rows: RatelimitOverride[] = [];
  const draw = () =>
    replace(
      table,
      rows.length === 0
        ? h("p", {}, "No overrides in this namespace.")
        : h(
            "table",
            { "data-testid": "overrides" },
            h("caption", {}, `Overrides (${rows.length} loaded)`),
            thead("Identifier", "Limit", "Window", "Override id", "Actions"),
            h(
              "tbody",
              {},
              rows.map((o) =>
                h(
                  "tr",
                  { "data-override-id": o.overrideId },
                  h("td", {}, h("code", {}, o.identifier)),
                  h("td", {}, String(o.limit)),
                  h("td", {}, durationText(o.duration)),
                  h("td", {}, h("code", {}, o.overrideId)),
                  h(
                    "td",
                    {},
                    h(
                      "div",
                      { class: "row-actions" },
                      h(
                        "button",
                        {
                          type: "button",
                          "aria-label": `Change override ${o.identifier}`,
                          onclick: () => {
                            identifier.value = o.identifier;
                            limit.value = String(o.limit);
                            duration.set(o.duration);
                            limit.focus();
                          },
                        },
                        "Change",
                      ),
                      h(
                        "button",
                        {
                          type: "button",
                          class: "danger",
                          "aria-label": `Delete override ${o.identifier}`,
                          onclick: async () => {
                            if (
                              !(await confirmDialog(
                                "Delete this override?",
                                `${o.identifier} goes back to the limit its callers ask for.`,
                                "Delete override",
                              ))
                            )
                              return;
                            await attempt(slot, "delete this override", async () => {
                              await call("ratelimit.deleteOverride", { namespace, identifier: o.identifier });
                              announce(`Override for ${o.identifier} deleted.`);
                              await load();
                            });
                          },
                        },
                        "Delete",
                      ),
                    ),
                  ),
                ),
              ),
            ),
          ),
    );
  const load = async (cursor?: string) => {
    slot.replaceChildren();
    try {
      const { data, pagination } = await call("ratelimit.listOverrides", { namespace, limit: PAGE, ...(cursor ? { cursor } : {}) });
      setForm.hidden = false;
      usage.element.hidden = false;
      if (!cursor) rows.length = 0;
      rows.push(...data);
      draw();
      replace(
        more,
        pagination?.hasMore ? h("button", { type: "button", onclick: () => void load(pagination.cursor) }, "Load more overrides") : null,
      );
    } catch (err) {
      usage.element.hidden = true;
      if (!missingNamespace(err)) return void replace(slot, errorPanel(err, "list the overrides"));
      // Not an error of the reader's: the namespace is created by its first use.
      setForm.hidden = true;
      replace(more);
      replace(
        table,
        h(
          "div",
          { class: "notice", "data-testid": "no-namespace" },
          h("p", {}, `The namespace ${namespace} does not exist yet.`),
          h(
            "p",
            {},
            "It is created the first time ratelimit.limit names it: when your code first limits a request with it, or when you check an identifier below (cost 0). Then its overrides can be set here.",
          ),
        ),
      );
    }
  };
  await load();
  if (!usage.element.hidden) await usage.load();
}
