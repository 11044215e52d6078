// Identities (#/identities): the workspace's identities, searched and paged by the service
// (identities.listIdentities), created with meta and shared rate limits, deleted with confirmation.
// Each links to its own page (#/identities/<id>).
import type { Identity } from "../../protocol/types";
import { call } from "../api";
import { field, h, replace, thead } from "../dom";
import { limitText, metaInput, problem, ratelimitsInput } from "../inputs";
import { announce, attempt, confirmDialog } from "../ui";
import { identityPage } from "./identity";

const PAGE = 50;

export async function identitiesPage(main: HTMLElement, id?: string): Promise<void> {
  if (id) return identityPage(main, id);
  const slot = h("div");
  const table = h("div");
  const more = h("div");
  const externalId = h("input", { name: "externalId", required: true, maxlength: 255 });
  const meta = metaInput();
  const limits = ratelimitsInput();
  const createSlot = h("div");
  const form = h(
    "form",
    { "aria-label": "Create an identity" },
    h(
      "div",
      { class: "grid" },
      field("External id", externalId, "Your id of the user or organisation: letters, digits, _ . -"),
      h("fieldset", { class: "wide" }, h("legend", {}, "Shared rate limits"), limits.element),
      meta.element,
    ),
    h("button", { type: "submit", class: "primary" }, "Create identity"),
    createSlot,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const m = meta.read();
    const r = limits.read();
    if (typeof m === "string" || typeof r === "string") return problem(createSlot, typeof m === "string" ? m : (r as string));
    await attempt(createSlot, "create an identity", async () => {
      const ext = externalId.value.trim();
      await call("identities.createIdentity", {
        externalId: ext,
        ...(m ? { meta: m } : {}),
        ...(r.length > 0 ? { ratelimits: r } : {}),
      });
      announce(`Identity ${ext} created.`);
      form.reset();
      await load();
    });
  });
  const search = h("input", { type: "search", name: "search", maxlength: 255 });
  const searchForm = h(
    "form",
    { class: "toolbar", role: "search", "aria-label": "Search identities" },
    field("Search", search, "Part of an external id or identity id (searched by the service)"),
    h("button", { type: "submit" }, "Search"),
  );
  searchForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void load();
  });
  replace(
    main,
    h("h1", {}, "Identities"),
    h("p", {}, "An identity groups keys under your own id of a user or organisation; its rate limits are shared by all its keys."),
    h("details", { class: "card" }, h("summary", {}, "Create an identity"), form),
    searchForm,
    slot,
    table,
    more,
  );

  const rows: Identity[] = [];
  const draw = () =>
    replace(
      table,
      rows.length === 0
        ? h("p", {}, search.value.trim() ? "No identity matches the search." : "No identities yet.")
        : h(
            "table",
            {},
            h("caption", {}, `Identities (${rows.length} loaded)`),
            thead("External id", "Identity id", "Shared rate limits", "Meta", "Actions"),
            h(
              "tbody",
              {},
              rows.map((i) =>
                h(
                  "tr",
                  { "data-identity-id": i.id },
                  h("td", {}, h("a", { href: `#/identities/${encodeURIComponent(i.id)}` }, i.externalId)),
                  h("td", {}, h("code", {}, i.id)),
                  h(
                    "td",
                    {},
                    (i.ratelimits ?? []).map((r) => h("div", {}, limitText(r))),
                  ),
                  h("td", {}, i.meta ? h("code", { class: "clip" }, JSON.stringify(i.meta)) : ""),
                  h(
                    "td",
                    {},
                    h(
                      "button",
                      {
                        type: "button",
                        class: "danger",
                        "aria-label": `Delete identity ${i.externalId}`,
                        onclick: async () => {
                          if (
                            !(await confirmDialog(
                              "Delete this identity?",
                              `${i.externalId} is deleted with its shared rate limits; its keys stay, without an owner.`,
                              "Delete identity",
                            ))
                          )
                            return;
                          await attempt(slot, "delete this identity", async () => {
                            await call("identities.deleteIdentity", { identity: i.id });
                            announce(`Identity ${i.externalId} deleted.`);
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
  const load = async (cursor?: string) => {
    await attempt(slot, "list the identities", async () => {
      const needle = search.value.trim();
      const { data, pagination } = await call("identities.listIdentities", {
        limit: PAGE,
        ...(needle ? { search: needle } : {}),
        ...(cursor ? { cursor } : {}),
      });
      if (!cursor) rows.length = 0;
      rows.push(...data);
      draw();
      replace(
        more,
        pagination?.hasMore ? h("button", { type: "button", onclick: () => void load(pagination.cursor) }, "Load more identities") : null,
      );
    });
  };
  await load();
}
