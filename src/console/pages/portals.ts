// Portals (#/portals): the hosted portals the provider's customers manage their keys in (keyguard's
// portal.listPortals, createPortal, updatePortal, deletePortal): which APIs, the branding, the docs,
// the return origins, the reroll grace period and what end users may do. "Preview" opens a preview
// session (portal.createSession with preview: true) in a new tab.
import type { PortalItem } from "../../protocol/types";
import { call, type Body } from "../api";
import { field, h, replace, thead, uid } from "../dom";
import { announce, attempt, confirmDialog, list } from "../ui";

const HOUR = 3_600_000;
const ALL_SCOPES = ["keys:read", "keys:create", "keys:reroll", "analytics:read"] as const;

function check(name: string, label: string, checked: boolean): { element: HTMLElement; input: HTMLInputElement } {
  const input = h("input", { type: "checkbox", id: uid(name), name, checked });
  return { element: h("div", { class: "check" }, input, h("label", { for: input.id }, label)), input };
}

/** The form for a new portal, or for changing `portal`; `done` after it saved. */
async function portalForm(slot: HTMLElement, portal: PortalItem | undefined, done: () => Promise<void>): Promise<HTMLElement> {
  const apis = (await call("apis.listApis", { limit: 100 })).data;
  const name = h("input", { name: "name", required: true, maxlength: 128, value: portal?.name ?? "" });
  const apiChecks = apis.map((api) => ({
    id: api.id,
    ...check("api", `${api.name} (${api.id})`, portal?.apiIds.includes(api.id) ?? false),
  }));
  const logo = h("input", { name: "logoUrl", type: "url", value: portal?.logoUrl ?? "" });
  const accent = h("input", { name: "accentColor", pattern: "#[0-9a-fA-F]{6}", placeholder: "#2448b0", value: portal?.accentColor ?? "" });
  const docs = h("textarea", { name: "docs", rows: 6 });
  docs.value = portal?.docs ?? "";
  const origins = h("textarea", { name: "returnOrigins", rows: 2, spellcheck: "false" });
  origins.value = (portal?.returnOrigins ?? []).join("\n");
  const grace = h("input", {
    name: "rerollGrace",
    type: "number",
    min: 0,
    max: 720,
    step: "any",
    value: (portal?.rerollGraceMs ?? 24 * HOUR) / HOUR,
  });
  const enabled = check("enabled", "Enabled (sessions can be opened)", portal?.enabled ?? true);
  const create = check("create", "End users may create keys", portal?.actions.create ?? true);
  const disable = check("disable", "End users may disable and enable their keys", portal?.actions.disable ?? false);
  const remove = check("delete", "End users may delete their keys", portal?.actions.delete ?? false);
  const form = h(
    "form",
    { class: "card", "aria-label": portal ? `Edit portal ${portal.name}` : "Create a portal" },
    h("h2", {}, portal ? `Edit ${portal.name}` : "New portal"),
    field("Portal name", name),
    h(
      "fieldset",
      {},
      h("legend", {}, "APIs it covers"),
      apiChecks.length ? apiChecks.map((c) => c.element) : h("p", {}, "Create an API first."),
    ),
    field("Logo URL", logo, "The address of an https: image, shown in the portal's header."),
    field("Accent colour", accent, "#rrggbb, the stripe and the current tab."),
    field("Docs (Markdown)", docs, "Shown on the Docs tab; HTML is shown as text."),
    field("Return origins", origins, "One origin a line (scheme, host and port, no path): where a session may send its user back to."),
    field("Reroll grace (hours)", grace, "How long a rerolled key keeps working."),
    h("fieldset", {}, h("legend", {}, "What end users may do"), enabled.element, create.element, disable.element, remove.element),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, portal ? "Save portal" : "Create portal")),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const fields = {
      name: name.value.trim(),
      apiIds: apiChecks.filter((c) => c.input.checked).map((c) => c.id),
      enabled: enabled.input.checked,
      returnOrigins: list(origins.value),
      rerollGraceMs: Math.round(Number(grace.value) * HOUR),
      actions: { create: create.input.checked, disable: disable.input.checked, delete: remove.input.checked },
    };
    const optional = { logoUrl: logo.value.trim(), accentColor: accent.value.trim(), docs: docs.value.trim() };
    await attempt(slot, portal ? "change this portal" : "create a portal", async () => {
      if (portal) {
        const body: Body<"portal.updatePortal"> = { portalId: portal.portalId, ...fields };
        for (const [k, v] of Object.entries(optional)) (body as Record<string, unknown>)[k] = v === "" ? null : v;
        await call("portal.updatePortal", body);
        announce(`Portal ${fields.name} saved.`);
      } else {
        const body: Body<"portal.createPortal"> = { ...fields };
        for (const [k, v] of Object.entries(optional)) if (v !== "") (body as Record<string, unknown>)[k] = v;
        const { data } = await call("portal.createPortal", body);
        announce(`Portal ${data.portalId} created.`);
      }
      await done();
    });
  });
  return form;
}

export async function portalsPage(main: HTMLElement): Promise<void> {
  const slot = h("div");
  const table = h("div");
  const editor = h("div");
  const previewAs = h("input", { name: "previewAs", value: "preview", maxlength: 256 });
  const load = async () => {
    replace(editor);
    await attempt(slot, "list the portals", async () => draw((await call("portal.listPortals", {})).data));
  };
  const edit = async (portal?: PortalItem) => {
    await attempt(slot, "open the portal form", async () => {
      replace(editor, await portalForm(slot, portal, load));
      editor.querySelector("input")?.focus();
    });
  };
  const preview = async (portal: PortalItem) => {
    await attempt(slot, "open a preview", async () => {
      const { data } = await call("portal.createSession", {
        portal: portal.portalId,
        externalId: previewAs.value.trim() || "preview",
        scopes: [...ALL_SCOPES],
        preview: true,
      });
      window.open(data.url, "_blank", "noopener,noreferrer");
      announce(`A preview of ${portal.name} opened in a new tab.`);
    });
  };
  const draw = (portals: PortalItem[]) =>
    replace(
      table,
      portals.length === 0
        ? h("p", {}, "No portals yet.")
        : h(
            "table",
            {},
            h("caption", {}, "Portals of this workspace"),
            thead("Name", "Portal id", "APIs", "Status", "Actions"),
            h(
              "tbody",
              {},
              portals.map((p) =>
                h(
                  "tr",
                  { "data-portal-id": p.portalId },
                  h("td", {}, p.name),
                  h("td", {}, h("code", {}, p.portalId)),
                  h("td", {}, h("code", {}, p.apiIds.join(", "))),
                  h("td", {}, p.enabled ? "enabled" : "disabled"),
                  h(
                    "td",
                    { class: "row-actions" },
                    h("button", { type: "button", "aria-label": `Edit ${p.name}`, onclick: () => void edit(p) }, "Edit"),
                    h("button", { type: "button", "aria-label": `Preview ${p.name}`, onclick: () => void preview(p) }, "Preview"),
                    h(
                      "button",
                      {
                        type: "button",
                        class: "danger",
                        "aria-label": `Delete ${p.name}`,
                        onclick: async () => {
                          const sure = await confirmDialog(
                            "Delete this portal?",
                            `${p.name}'s sessions end at once. Keys stay.`,
                            "Delete portal",
                          );
                          if (!sure) return;
                          await attempt(slot, "delete this portal", async () => {
                            await call("portal.deletePortal", { portalId: p.portalId });
                            announce(`Portal ${p.name} deleted.`);
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
    );
  replace(
    main,
    h("h1", {}, "Portals"),
    h("p", {}, "A portal is where your customers see, reroll and create their own keys (/portal on this service)."),
    h(
      "div",
      { class: "card toolbar" },
      h("button", { type: "button", class: "primary", onclick: () => void edit() }, "New portal"),
      field("Preview as (external id)", previewAs),
    ),
    slot,
    editor,
    table,
  );
  await load();
}
