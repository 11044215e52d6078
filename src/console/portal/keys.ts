// The portal's Keys tab: the end user's keys (portal.listKeys); reroll one (portal.rerollKey: the
// old key keeps working for the portal's grace period), create one from the portal's template
// (portal.createKey), disable, enable or delete one where the operator allows it. A new key is shown
// once, with a copy button.
import type { KeyInfo, PortalSessionInfo } from "../../protocol/types";
import { dateCell, h, replace, thead } from "../dom";
import { durationText } from "../inputs";
import { announce, attempt, confirmDialog, showOnce } from "../ui";
import { portalCall } from "./api";

export async function keysTab(main: HTMLElement, session: PortalSessionInfo): Promise<void> {
  const slot = h("div");
  const table = h("div");
  const may = (scope: string) => session.scopes.includes(scope);
  const grace = session.rerollGraceMs;
  const graceText = grace === 0 ? "The old key stops working at once." : `The old key keeps working for ${durationText(grace)}.`;

  const create =
    may("keys:create") && session.actions.create
      ? h(
          "button",
          {
            type: "button",
            class: "primary",
            onclick: () =>
              void attempt(slot, "create a key", async () => {
                const made = await portalCall("portal.createKey", {});
                await showOnce("Your new key", made.key, "Copy it now and keep it safe: it is not shown again.");
                announce("Key created.");
                await load();
              }),
          },
          "Create a key",
        )
      : null;

  const actions = (key: KeyInfo) => {
    const label = key.name ?? key.start;
    return h(
      "td",
      { class: "row-actions" },
      may("keys:reroll")
        ? h(
            "button",
            {
              type: "button",
              "aria-label": `Reroll ${label}`,
              onclick: async () => {
                if (!(await confirmDialog("Reroll this key?", `A new key replaces ${label}. ${graceText}`, "Reroll"))) return;
                await attempt(slot, "reroll this key", async () => {
                  const made = await portalCall("portal.rerollKey", { keyId: key.keyId, expiration: grace });
                  await showOnce("Your new key", made.key, `Copy it now: it is not shown again. ${graceText}`);
                  announce("Key rerolled.");
                  await load();
                });
              },
            },
            "Reroll",
          )
        : null,
      session.actions.disable
        ? h(
            "button",
            {
              type: "button",
              "aria-label": `${key.enabled ? "Disable" : "Enable"} ${label}`,
              onclick: () =>
                void attempt(slot, "change this key", async () => {
                  await portalCall("portal.setKeyEnabled", { keyId: key.keyId, enabled: !key.enabled });
                  announce(`Key ${key.enabled ? "disabled" : "enabled"}.`);
                  await load();
                }),
            },
            key.enabled ? "Disable" : "Enable",
          )
        : null,
      session.actions.delete
        ? h(
            "button",
            {
              type: "button",
              class: "danger",
              "aria-label": `Delete ${label}`,
              onclick: async () => {
                if (!(await confirmDialog("Delete this key?", `${label} stops working at once. This cannot be undone.`, "Delete key")))
                  return;
                await attempt(slot, "delete this key", async () => {
                  await portalCall("portal.deleteKey", { keyId: key.keyId });
                  announce("Key deleted.");
                  await load();
                });
              },
            },
            "Delete",
          )
        : null,
    );
  };

  const draw = (keys: KeyInfo[]) =>
    replace(
      table,
      keys.length === 0
        ? h("p", {}, "You have no keys yet.")
        : h(
            "table",
            { class: "keys" },
            h("caption", {}, "Your keys"),
            thead("Name", "Key", "Created", "Expires", "Status", "Actions"),
            h(
              "tbody",
              {},
              keys.map((k) =>
                h(
                  "tr",
                  { "data-key-id": k.keyId },
                  h("td", {}, k.name ?? h("span", { class: "muted" }, "unnamed")),
                  h("td", {}, h("code", {}, `${k.start}…`)),
                  h("td", {}, dateCell(k.createdAt)),
                  h("td", {}, dateCell(k.expires)),
                  h("td", {}, k.enabled ? "enabled" : "disabled"),
                  actions(k),
                ),
              ),
            ),
          ),
    );

  const load = async () => {
    await attempt(slot, "list your keys", async () => {
      // An end user's keys are few: the first 100 (production's page size at most).
      draw(await portalCall("portal.listKeys", { limit: 100 }));
    });
  };
  replace(main, h("h1", {}, "Your API keys"), h("p", { class: "muted" }, `When you reroll a key: ${graceText}`), create, slot, table);
  await load();
}
