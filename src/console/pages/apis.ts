// APIs: the workspace's APIs (apis.listApis), create one, delete one with confirmation; each links
// to its keys and its settings.
import type { ApiListItem } from "../../protocol/types";
import { call } from "../api";
import { field, h, replace, thead, when } from "../dom";
import { announce, attempt, confirmDialog } from "../ui";

export async function apisPage(main: HTMLElement): Promise<void> {
  const slot = h("div");
  const table = h("div");
  const more = h("div");
  const name = h("input", { name: "name", required: true, minlength: 3, maxlength: 256 });
  const form = h(
    "form",
    { class: "card inline", "aria-label": "Create an API" },
    field("New API name", name),
    h("button", { type: "submit" }, "Create API"),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    await attempt(slot, "create an API", async () => {
      const { data } = await call("apis.createApi", { name: name.value.trim() });
      announce(`API ${data.apiId} created.`);
      name.value = "";
      await load();
    });
  });
  replace(main, h("h1", {}, "APIs"), form, slot, table, more);

  const rows: ApiListItem[] = [];
  const draw = () => {
    replace(
      table,
      rows.length === 0
        ? h("p", {}, "No APIs yet.")
        : h(
            "table",
            {},
            h("caption", {}, "APIs of this workspace"),
            thead("Name", "API id", "Created", "Actions"),
            h(
              "tbody",
              {},
              rows.map((api) =>
                h(
                  "tr",
                  {},
                  h("td", {}, h("a", { href: `#/keys/${encodeURIComponent(api.id)}` }, api.name)),
                  h("td", {}, h("code", {}, api.id)),
                  h("td", {}, when(api.createdAt)),
                  h(
                    "td",
                    {},
                    h(
                      "a",
                      { href: `#/api/${encodeURIComponent(api.id)}`, "aria-label": `Settings of ${api.name}`, class: "button-link" },
                      "Settings",
                    ),
                    " ",
                    h(
                      "button",
                      {
                        type: "button",
                        class: "danger",
                        "aria-label": `Delete API ${api.name}`,
                        onclick: async () => {
                          if (
                            !(await confirmDialog(
                              "Delete this API?",
                              `${api.name} (${api.id}) and every key in it will be deleted. Apps using those keys get 401.`,
                              "Delete API",
                            ))
                          )
                            return;
                          await attempt(slot, "delete this API", async () => {
                            await call("apis.deleteApi", { apiId: api.id });
                            announce(`API ${api.name} deleted.`);
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
  };
  const load = async (cursor?: string) => {
    await attempt(slot, "list the APIs", async () => {
      const { data, pagination } = await call("apis.listApis", { limit: 50, ...(cursor ? { cursor } : {}) });
      if (!cursor) rows.length = 0;
      rows.push(...data);
      draw();
      replace(more, pagination?.hasMore ? h("button", { type: "button", onclick: () => void load(pagination.cursor) }, "Load more") : null);
    });
  };
  await load();
}
