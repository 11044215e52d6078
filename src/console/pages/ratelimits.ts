// Rate-limit namespaces (#/ratelimits/<namespace>): a namespace by name or id, its overrides
// (ratelimit.listOverrides, paged), set one (ratelimit.setOverride: new, or changed by its
// identifier), delete one with confirmation, and check an identifier (ratelimit.limit at cost 0,
// which also creates a new namespace). The API lists no namespaces: the page opens one by name.
import type { RatelimitOverride } from "../../protocol/types";
import { call } from "../api";
import { field, h, replace, thead, when } from "../dom";
import { announce, attempt, confirmDialog } from "../ui";

const PAGE = 50;

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
  const intro = h(
    "p",
    {},
    "A namespace is created the first time ratelimit.limit names it; an override gives one identifier (or a pattern with *, e.g. team_*) its own limit.",
  );
  replace(main, h("h1", {}, "Rate limits"), intro, open);
  if (!namespace) return;

  const slot = h("div");
  const table = h("div");
  const more = h("div");
  const identifier = h("input", { name: "identifier", required: true, maxlength: 512 });
  const limit = h("input", { name: "limit", type: "number", required: true, min: 0, step: 1 });
  const duration = h("input", { name: "duration", type: "number", required: true, min: 1000, step: 1000 });
  const setSlot = h("div");
  const setForm = h(
    "form",
    { class: "card inline", "aria-label": "Set an override" },
    field("Identifier or pattern", identifier, "e.g. user_42 or team_*"),
    field("Limit", limit, "Requests per window; 0 refuses all"),
    field("Window (ms)", duration),
    h("button", { type: "submit", class: "primary" }, "Set override"),
  );
  setForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    await attempt(setSlot, "set this override", async () => {
      const id = identifier.value.trim();
      await call("ratelimit.setOverride", { namespace, identifier: id, limit: Number(limit.value), duration: Number(duration.value) });
      announce(`Override for ${id} set.`);
      setForm.reset();
      await load();
    });
  });

  const probe = h("input", { name: "probe", required: true, maxlength: 512 });
  const probeLimit = h("input", { name: "probeLimit", type: "number", required: true, min: 1, step: 1, value: 10 });
  const probeDuration = h("input", { name: "probeDuration", type: "number", required: true, min: 1000, step: 1000, value: 60000 });
  const probeSlot = h("div");
  const probeForm = h(
    "form",
    { class: "card inline", "aria-label": "Check an identifier" },
    field("Identifier to check", probe),
    field("Default limit", probeLimit, "Used when no override matches"),
    field("Default window (ms)", probeDuration),
    h("button", { type: "submit" }, "Check (cost 0)"),
  );
  probeForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    await attempt(probeSlot, "check this identifier", async () => {
      const { data } = await call("ratelimit.limit", {
        namespace,
        identifier: probe.value.trim(),
        limit: Number(probeLimit.value),
        duration: Number(probeDuration.value),
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
    });
  });

  replace(
    main,
    h("h1", {}, `Rate limits: ${namespace}`),
    intro,
    open,
    h("section", { "aria-labelledby": "ov-title" }, h("h2", { id: "ov-title" }, "Overrides"), setForm, setSlot, slot, table, more),
    h("section", { "aria-labelledby": "probe-title" }, h("h2", { id: "probe-title" }, "Check an identifier"), probeForm, probeSlot),
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
            thead("Identifier", "Limit", "Window (ms)", "Override id", "Actions"),
            h(
              "tbody",
              {},
              rows.map((o) =>
                h(
                  "tr",
                  { "data-override-id": o.overrideId },
                  h("td", {}, h("code", {}, o.identifier)),
                  h("td", {}, String(o.limit)),
                  h("td", {}, String(o.duration)),
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
                            duration.value = String(o.duration);
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
    await attempt(
      slot,
      "list the overrides",
      async () => {
        const { data, pagination } = await call("ratelimit.listOverrides", {
          namespace,
          limit: PAGE,
          ...(cursor ? { cursor } : {}),
        });
        if (!cursor) rows.length = 0;
        rows.push(...data);
        draw();
        replace(
          more,
          pagination?.hasMore ? h("button", { type: "button", onclick: () => void load(pagination.cursor) }, "Load more overrides") : null,
        );
      },
      (e) =>
        e.status === 404 && /namespace/i.test(e.detail)
          ? "A namespace exists once ratelimit.limit has named it: check an identifier below to create it."
          : undefined,
    );
  };
  await load();
}
