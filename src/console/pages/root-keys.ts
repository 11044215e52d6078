// Root keys (keyguard's rootKeys.* operations): list, create one with chosen permissions (shown
// once), delete one. A root key can grant only permissions it holds.
import type { CreateKeyResult, RootKeyItem } from "../../protocol/types";
import { call } from "../api";
import { h, replace, thead, when, uid, field } from "../dom";
import { PERMISSION_GROUPS as GROUPS } from "../permissions";
import { announce, attempt, confirmDialog, showOnce } from "../ui";

export async function rootKeysPage(main: HTMLElement): Promise<void> {
  const slot = h("div");
  const table = h("div");
  const name = h("input", { name: "name", maxlength: 256 });
  const boxes: HTMLInputElement[] = [];
  const fieldsets = GROUPS.map(([legend, perms]) =>
    h(
      "fieldset",
      {},
      h("legend", {}, legend),
      perms.map((p) => {
        const box = h("input", { type: "checkbox", value: p, id: uid("perm") });
        boxes.push(box);
        return h("div", { class: "check" }, box, h("label", { for: box.id }, h("code", {}, p)));
      }),
    ),
  );
  const createSlot = h("div");
  const form = h(
    "form",
    { "aria-label": "Create a root key" },
    field("Name", name, "Who or what uses it"),
    h("div", { class: "perm-groups" }, fieldsets),
    h("button", { type: "submit", class: "primary" }, "Create root key"),
    createSlot,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const permissions = boxes.filter((b) => b.checked).map((b) => b.value);
    if (permissions.length === 0)
      return replace(
        createSlot,
        h("div", { class: "error", role: "alert" }, h("p", { class: "detail" }, "Choose at least one permission.")),
      );
    await attempt(createSlot, "create a root key", async () => {
      const { data } = await call<CreateKeyResult>("rootKeys.createRootKey", {
        permissions,
        ...(name.value.trim() ? { name: name.value.trim() } : {}),
      });
      form.reset();
      await showOnce(
        "Your new root key",
        data.key,
        `Root key ${data.keyId}. Copy it now: the service keeps only its hash and cannot show it again.`,
      );
      await load();
    });
  });
  replace(
    main,
    h("h1", {}, "Root keys"),
    h("p", {}, "Root keys call the key service's API (and sign in here). A root key can give a new one only permissions it holds itself."),
    h("details", { class: "card" }, h("summary", {}, "Create a root key"), form),
    slot,
    table,
  );
  const load = () =>
    attempt(slot, "list the root keys", async () => {
      const { data } = await call<RootKeyItem[]>("rootKeys.listRootKeys", { limit: 100 });
      replace(
        table,
        h(
          "table",
          {},
          thead("Name", "Id", "Permissions", "Created", "Actions"),
          h(
            "tbody",
            {},
            data.map((k) =>
              h(
                "tr",
                {},
                h("td", {}, k.name ?? h("span", { class: "muted" }, "(no name)")),
                h("td", {}, h("code", {}, k.keyId)),
                h(
                  "td",
                  {},
                  h(
                    "details",
                    {},
                    h("summary", {}, `${k.permissions.length} permission${k.permissions.length === 1 ? "" : "s"}`),
                    h(
                      "ul",
                      { class: "plain" },
                      k.permissions.map((p) => h("li", {}, h("code", {}, p))),
                    ),
                  ),
                ),
                h("td", {}, when(k.createdAt)),
                h(
                  "td",
                  {},
                  h(
                    "button",
                    {
                      type: "button",
                      class: "danger",
                      "aria-label": `Delete root key ${k.name ?? k.keyId}`,
                      onclick: async () => {
                        if (
                          !(await confirmDialog(
                            "Delete this root key?",
                            `${k.name ?? k.keyId} stops working at once, for every tool using it.`,
                            "Delete root key",
                          ))
                        )
                          return;
                        await attempt(slot, "delete this root key", async () => {
                          await call("rootKeys.deleteRootKey", { keyId: k.keyId });
                          announce("Root key deleted.");
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
    });
  await load();
}
