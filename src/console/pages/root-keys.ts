// Root keys (keyguard's rootKeys.* operations): list, create one with chosen permissions (shown
// once), delete one. A root key can grant only permissions it holds.
import { ALL_ROOT_PERMISSIONS } from "../../protocol/contract/root-permissions";
import { call } from "../api";
import { h, replace, thead, when, uid, field } from "../dom";
import { announce, attempt, confirmDialog, showOnce } from "../ui";

/** The form's fieldsets: each permission the service checks goes in the first area it belongs to. */
const AREAS: ReadonlyArray<readonly [string, (permission: string) => boolean]> = [
  ["APIs and keys", (p) => p.startsWith("api.") && !p.endsWith(".read_analytics")],
  ["Permissions and roles", (p) => p.startsWith("rbac.")],
  ["Identities", (p) => p.startsWith("identity.")],
  ["Rate limits", (p) => p.startsWith("ratelimit.")],
  ["Analytics", (p) => p.endsWith(".read_analytics")],
  ["Root keys", (p) => p.endsWith("_root_key")],
  ["Audit log", (p) => p.endsWith("_audit_log")],
  ["Webhooks", (p) => p.endsWith("_webhook")],
  ["Customer portals", (p) => p.startsWith("portal.")],
  // A permission added to the service before it has an area here is still offered.
  ["Other", () => true],
];

/** The service's permissions by area, in the service's order; areas without one left out. */
function permissionGroups(): Array<[string, string[]]> {
  const groups = new Map<string, string[]>(AREAS.map(([area]) => [area, []]));
  for (const p of ALL_ROOT_PERMISSIONS) groups.get(AREAS.find(([, has]) => has(p))![0])!.push(p);
  return [...groups].filter(([, perms]) => perms.length > 0);
}

export async function rootKeysPage(main: HTMLElement): Promise<void> {
  const slot = h("div");
  const table = h("div");
  const name = h("input", { name: "name", maxlength: 256 });
  const boxes: HTMLInputElement[] = [];
  const fieldsets = permissionGroups().map(([legend, perms]) =>
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
      const { data } = await call("rootKeys.createRootKey", {
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
      const { data } = await call("rootKeys.listRootKeys", { limit: 100 });
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
