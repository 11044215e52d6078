// One identity (#/identities/<id>): its ids, meta and shared rate limits (edited with
// identities.updateIdentity), its keys in every API the root key may read (apis.listKeys with the
// externalId), and deletion with confirmation.
import type { ApiListItem, Identity, KeyInfo } from "../../protocol/types";
import { call, callAll } from "../api";
import { h, replace, thead } from "../dom";
import { metaInput, problem, ratelimitsInput } from "../inputs";
import { announce, attempt, confirmDialog } from "../ui";
import { keyStatus } from "./keys";

export async function identityPage(main: HTMLElement, id: string): Promise<void> {
  const slot = h("div");
  replace(main, h("h1", {}, "Identity"), h("p", {}, h("a", { href: "#/identities" }, "All identities")), slot);
  let identity: Identity | undefined;
  await attempt(slot, "read this identity", async () => {
    identity = (await call("identities.getIdentity", { identity: id })).data;
  });
  if (!identity) return;
  const it = identity;
  const meta = metaInput(it.meta);
  const limits = ratelimitsInput(it.ratelimits);
  const saveSlot = h("div");
  const form = h(
    "form",
    { class: "card", "aria-labelledby": "identity-edit" },
    h("h2", { id: "identity-edit" }, "Meta and shared rate limits"),
    h("div", { class: "grid" }, h("fieldset", { class: "wide" }, h("legend", {}, "Shared rate limits"), limits.element), meta.element),
    h("button", { type: "submit", class: "primary" }, "Save identity"),
    saveSlot,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const m = meta.read();
    const r = limits.read();
    if (typeof m === "string" || typeof r === "string") return problem(saveSlot, typeof m === "string" ? m : (r as string));
    await attempt(saveSlot, "update this identity", async () => {
      // The API takes meta as an object only: an emptied meta is saved as {}.
      await call("identities.updateIdentity", { identity: it.id, meta: m ?? {}, ratelimits: r });
      announce(`Identity ${it.externalId} saved.`);
      replace(saveSlot, h("p", { class: "muted" }, "Saved."));
    });
  });
  const remove = h(
    "button",
    {
      type: "button",
      class: "danger",
      onclick: async () => {
        if (
          !(await confirmDialog(
            "Delete this identity?",
            `${it.externalId} is deleted with its shared rate limits; its keys stay, without an owner.`,
            "Delete identity",
          ))
        )
          return;
        await attempt(slot, "delete this identity", async () => {
          await call("identities.deleteIdentity", { identity: it.id });
          announce(`Identity ${it.externalId} deleted.`);
          location.hash = "#/identities";
        });
      },
    },
    "Delete identity",
  );
  const keysBox = h("div");
  replace(
    main,
    h("h1", {}, `Identity ${it.externalId}`),
    h("p", {}, h("a", { href: "#/identities" }, "All identities")),
    slot,
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "External id"),
      h("dd", {}, h("code", {}, it.externalId)),
      h("dt", {}, "Identity id"),
      h("dd", {}, h("code", {}, it.id)),
    ),
    form,
    h("section", { "aria-labelledby": "identity-keys" }, h("h2", { id: "identity-keys" }, "Keys"), keysBox),
    h("div", { class: "actions" }, remove),
  );
  const keySlot = h("div");
  const found: Array<[ApiListItem, KeyInfo]> = [];
  await attempt(keySlot, "list this identity's keys", async () => {
    for (const api of await callAll("apis.listApis")) {
      for (const k of await callAll("apis.listKeys", { apiId: api.id, externalId: it.externalId })) found.push([api, k]);
    }
  });
  const now = Date.now();
  replace(
    keysBox,
    keySlot,
    found.length === 0
      ? h("p", {}, "No keys of this identity.")
      : h(
          "table",
          { "data-testid": "identity-keys" },
          thead("Name", "Key", "API", "Status"),
          h(
            "tbody",
            {},
            found.map(([api, k]) =>
              h(
                "tr",
                { "data-key-id": k.keyId },
                h("td", {}, h("a", { href: `#/key/${encodeURIComponent(k.keyId)}` }, k.name ?? k.keyId)),
                h("td", {}, h("code", {}, `${k.start}…`)),
                h("td", {}, api.name),
                h(
                  "td",
                  {},
                  keyStatus(k, now, undefined).map((s) => h("span", { class: `badge ${s.replace(/ /g, "-")}` }, s)),
                ),
              ),
            ),
          ),
        ),
  );
}
