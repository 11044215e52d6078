// Permissions and roles: list, create and delete both; a role's permissions are set when created
// and changed later (permissions.setRolePermissions).
import type { Role } from "../../protocol/types";
import { call, callAll } from "../api";
import { field, h, replace, thead } from "../dom";
import { announce, attempt, confirmDialog, list } from "../ui";

export async function rbacPage(main: HTMLElement): Promise<void> {
  const permSlot = h("div");
  const roleSlot = h("div");
  const permTable = h("div");
  const roleTable = h("div");

  const slug = h("input", { name: "slug", required: true, maxlength: 128, pattern: "[A-Za-z0-9_:\\-.*]+" });
  const permDescription = h("input", { name: "description", maxlength: 512 });
  const permForm = h(
    "form",
    { class: "card inline", "aria-label": "Create a permission" },
    field("Permission slug", slug, "e.g. docs.read"),
    field("Description", permDescription),
    h("button", { type: "submit" }, "Create permission"),
  );
  permForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    await attempt(permSlot, "create a permission", async () => {
      const s = slug.value.trim();
      await call("permissions.createPermission", {
        name: s,
        slug: s,
        ...(permDescription.value.trim() ? { description: permDescription.value.trim() } : {}),
      });
      announce(`Permission ${s} created.`);
      permForm.reset();
      await loadPermissions();
    });
  });

  const roleName = h("input", { name: "role", required: true, maxlength: 128 });
  const rolePerms = h("input", { name: "rolePermissions" });
  const roleForm = h(
    "form",
    { class: "card inline", "aria-label": "Create a role" },
    field("Role name", roleName),
    field("Permissions", rolePerms, "Comma-separated permission slugs"),
    h("button", { type: "submit" }, "Create role"),
  );
  roleForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    await attempt(roleSlot, "create a role", async () => {
      const name = roleName.value.trim();
      const perms = list(rolePerms.value);
      await call("permissions.createRole", { name, ...(perms.length > 0 ? { permissions: perms } : {}) });
      announce(`Role ${name} created.`);
      roleForm.reset();
      await loadRoles();
    });
  });

  replace(
    main,
    h("h1", {}, "Permissions and roles"),
    h("section", { "aria-labelledby": "perm-title" }, h("h2", { id: "perm-title" }, "Permissions"), permForm, permSlot, permTable),
    h("section", { "aria-labelledby": "role-title" }, h("h2", { id: "role-title" }, "Roles"), roleForm, roleSlot, roleTable),
  );

  const deleteButton = (what: string, name: string, fn: () => Promise<void>, slot: HTMLElement) =>
    h(
      "button",
      {
        type: "button",
        class: "danger",
        "aria-label": `Delete ${what} ${name}`,
        onclick: async () => {
          if (
            !(await confirmDialog(
              `Delete this ${what}?`,
              `${name} is removed from every key${what === "permission" ? " and role" : ""} holding it.`,
              `Delete ${what}`,
            ))
          )
            return;
          await attempt(slot, `delete this ${what}`, fn);
        },
      },
      "Delete",
    );

  /** A dialog holding the role's permissions as a list; saved as its complete new set. */
  const editRole = (r: Role) => {
    const input = h("input", { name: "rolePermissionsEdit", value: (r.permissions ?? []).map((p) => p.slug).join(", ") });
    const problem = h("div");
    const dialog = h("dialog", { "aria-labelledby": "role-edit-title" });
    const close = () => (dialog.close(), dialog.remove());
    const form = h(
      "form",
      {},
      h("h2", { id: "role-edit-title" }, `Permissions of ${r.name}`),
      field("Permissions", input, "Comma-separated slugs; missing permissions are created, an empty list clears"),
      problem,
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", onclick: close }, "Cancel"),
        h("button", { type: "submit", class: "primary" }, "Save permissions"),
      ),
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const ok = await attempt(problem, "change this role's permissions", async () => {
        await call("permissions.setRolePermissions", { roleId: r.id, permissions: list(input.value) });
      });
      if (!ok) return;
      close();
      announce(`Permissions of ${r.name} saved.`);
      await Promise.all([loadRoles(), loadPermissions()]);
    });
    dialog.append(form);
    dialog.addEventListener("close", () => dialog.remove());
    document.body.append(dialog);
    dialog.showModal();
  };

  const loadPermissions = () =>
    attempt(permSlot, "list the permissions", async () => {
      const perms = await callAll("permissions.listPermissions");
      replace(
        permTable,
        perms.length === 0
          ? h("p", {}, "No permissions yet.")
          : h(
              "table",
              {},
              thead("Slug", "Description", "Actions"),
              h(
                "tbody",
                {},
                perms.map((p) =>
                  h(
                    "tr",
                    {},
                    h("td", {}, h("code", {}, p.slug)),
                    h("td", {}, p.description ?? ""),
                    h(
                      "td",
                      {},
                      deleteButton(
                        "permission",
                        p.slug,
                        async () => {
                          await call("permissions.deletePermission", { permission: p.slug });
                          announce(`Permission ${p.slug} deleted.`);
                          await loadPermissions();
                          await loadRoles();
                        },
                        permSlot,
                      ),
                    ),
                  ),
                ),
              ),
            ),
      );
    });
  const loadRoles = () =>
    attempt(roleSlot, "list the roles", async () => {
      const roles = await callAll("permissions.listRoles");
      replace(
        roleTable,
        roles.length === 0
          ? h("p", {}, "No roles yet.")
          : h(
              "table",
              {},
              thead("Role", "Permissions", "Actions"),
              h(
                "tbody",
                {},
                roles.map((r) =>
                  h(
                    "tr",
                    {},
                    h("td", {}, r.name),
                    h(
                      "td",
                      {},
                      (r.permissions ?? []).map((p) => h("code", { class: "tag" }, p.slug)),
                    ),
                    h(
                      "td",
                      {},
                      h(
                        "div",
                        { class: "row-actions" },
                        h(
                          "button",
                          { type: "button", "aria-label": `Change the permissions of ${r.name}`, onclick: () => void editRole(r) },
                          "Permissions",
                        ),
                        deleteButton(
                          "role",
                          r.name,
                          async () => {
                            await call("permissions.deleteRole", { role: r.name });
                            announce(`Role ${r.name} deleted.`);
                            await loadRoles();
                          },
                          roleSlot,
                        ),
                      ),
                    ),
                  ),
                ),
              ),
            ),
      );
    });
  await Promise.all([loadPermissions(), loadRoles()]);
}
