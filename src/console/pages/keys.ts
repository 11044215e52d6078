// Keys of one API (#/keys/<apiId>): search, pagination, status, lastUsedAt; create (shown once),
// edit, disable/enable, reroll and delete, each confirmed.
import type { ApiListItem, CreateKeyResult, KeyInfo } from "../../protocol/types";
import { call } from "../api";
import { field, h, replace, thead, when } from "../dom";
import { rateLimitedSince } from "../analytics";
import { announce, attempt, confirmDialog, showOnce } from "../ui";
import { keyForm } from "./key-form";

const PAGE = 25;
/** "Load all" stops at this many keys. */
const MAX_KEYS = 2000;
/** "Rate limited recently": a RATE_LIMITED verification within this window. */
const RECENT_MS = 60 * 60 * 1000;

function keyStatus(key: KeyInfo, now: number, limited: ReadonlySet<string> | undefined): string[] {
  const status: string[] = [key.enabled ? "enabled" : "disabled"];
  if (key.expires !== undefined && key.expires <= now) status.push("expired");
  if (key.credits && key.credits.remaining !== null && key.credits.remaining <= 0) status.push("out of credits");
  if (limited?.has(key.keyId)) status.push("rate limited recently");
  return status;
}

export async function keysPage(main: HTMLElement, apiId?: string): Promise<void> {
  const slot = h("div");
  replace(main, h("h1", {}, "Keys"), slot);
  let apis: ApiListItem[] = [];
  const listed = await attempt(slot, "list the APIs", async () => {
    apis = (await call<ApiListItem[]>("apis.listApis", { limit: 100 })).data;
  });
  if (!listed && !apiId) return;
  if (!apiId) {
    if (apis.length === 0)
      return void main.append(h("p", {}, "No API yet: create one on the ", h("a", { href: "#/apis" }, "APIs"), " page."));
    apiId = apis[0]!.id;
  }
  const chooser = h(
    "select",
    { name: "api" },
    apis.map((a) => h("option", { value: a.id }, `${a.name} (${a.id})`)),
  );
  if (!apis.some((a) => a.id === apiId)) chooser.append(h("option", { value: apiId }, apiId));
  chooser.value = apiId;
  chooser.addEventListener("change", () => (location.hash = `#/keys/${encodeURIComponent(chooser.value)}`));

  const search = h("input", { type: "search", name: "search", placeholder: "name, id, start, owner" });
  const table = h("div");
  const more = h("div");
  const note = h("p", { class: "muted" });
  const create = keyForm();
  const createSlot = h("div");
  const createForm = h(
    "form",
    { "aria-label": "Create a key" },
    create.element,
    h("button", { type: "submit", class: "primary" }, "Create key"),
    createSlot,
  );
  createForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const fields = create.read();
    if (typeof fields === "string")
      return replace(createSlot, h("div", { class: "error", role: "alert" }, h("p", { class: "detail" }, fields)));
    await attempt(
      createSlot,
      "create a key",
      async () => {
        const { data } = await call<CreateKeyResult>("keys.createKey", { apiId, ...fields });
        createForm.reset();
        await showOnce(
          "Your new key",
          data.key,
          `Key ${data.keyId}. Copy it now: the service keeps only its hash and cannot show it again.`,
        );
        await reload();
      },
      (e) =>
        e.status === 404 && /API was not found/.test(e.detail)
          ? 'As production does, the service also answers "not found" when the root key lacks api.*.create_key (or api.<id>.create_key) for this API.'
          : undefined,
    );
  });

  replace(
    main,
    h("h1", {}, "Keys"),
    h("div", { class: "toolbar" }, field("API", chooser), field("Search", search, "Filters the keys loaded so far")),
    h("details", { class: "card" }, h("summary", {}, "Create a key"), createForm),
    slot,
    note,
    table,
    more,
  );

  const keys: KeyInfo[] = [];
  let limited: Set<string> | undefined;
  let cursor: string | undefined;

  const actions = (key: KeyInfo) => {
    const label = key.name ?? key.keyId;
    const edit = async () => {
      const form = keyForm(key);
      const dialog = h("dialog", { "aria-labelledby": "edit-title" });
      const problem = h("div");
      const close = () => (dialog.close(), dialog.remove());
      const save = h("form", {}, h("h2", { id: "edit-title" }, `Edit ${label}`), form.element, problem);
      save.append(
        h(
          "div",
          { class: "actions" },
          h("button", { type: "button", onclick: close }, "Cancel"),
          h("button", { type: "submit", class: "primary" }, "Save"),
        ),
      );
      save.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        const fields = form.read();
        if (typeof fields === "string")
          return replace(problem, h("div", { class: "error", role: "alert" }, h("p", { class: "detail" }, fields)));
        const ok = await attempt(problem, "update this key", async () => {
          await call("keys.updateKey", { keyId: key.keyId, ...fields });
        });
        if (ok) {
          close();
          announce(`Key ${label} saved.`);
          await reload();
        }
      });
      dialog.append(save);
      dialog.addEventListener("close", () => dialog.remove());
      document.body.append(dialog);
      dialog.showModal();
    };
    const toggle = async () => {
      const disabling = key.enabled;
      const sure = await confirmDialog(
        disabling ? "Disable this key?" : "Enable this key?",
        disabling ? `${label} will be refused (401) until enabled again.` : `${label} will be accepted again.`,
        disabling ? "Disable key" : "Enable key",
      );
      if (!sure) return;
      await attempt(slot, disabling ? "disable this key" : "enable this key", async () => {
        await call("keys.updateKey", { keyId: key.keyId, enabled: !disabling });
        announce(`Key ${label} ${disabling ? "disabled" : "enabled"}.`);
        await reload();
      });
    };
    const reroll = async () => {
      if (
        !(await confirmDialog(
          "Reroll this key?",
          `A new key replaces ${label} with the same settings; the old key stops working now.`,
          "Reroll key",
        ))
      )
        return;
      await attempt(slot, "reroll this key", async () => {
        const { data } = await call<CreateKeyResult>("keys.rerollKey", { keyId: key.keyId, expiration: 0 });
        await showOnce("The rerolled key", data.key, `New key ${data.keyId}. Copy it now: it is not shown again.`);
        await reload();
      });
    };
    const remove = async () => {
      if (!(await confirmDialog("Delete this key?", `${label} (${key.keyId}) will be deleted; apps using it get 401.`, "Delete key")))
        return;
      await attempt(slot, "delete this key", async () => {
        await call("keys.deleteKey", { keyId: key.keyId });
        announce(`Key ${label} deleted.`);
        await reload();
      });
    };
    return h(
      "div",
      { class: "row-actions" },
      h("button", { type: "button", onclick: edit, "aria-label": `Edit ${label}` }, "Edit"),
      h(
        "button",
        { type: "button", onclick: toggle, "aria-label": `${key.enabled ? "Disable" : "Enable"} ${label}` },
        key.enabled ? "Disable" : "Enable",
      ),
      h("button", { type: "button", onclick: reroll, "aria-label": `Reroll ${label}` }, "Reroll"),
      h("button", { type: "button", class: "danger", onclick: remove, "aria-label": `Delete ${label}` }, "Delete"),
    );
  };

  const draw = () => {
    const now = Date.now();
    const needle = search.value.trim().toLowerCase();
    const shown = keys.filter(
      (k) => !needle || [k.name, k.keyId, k.start, k.identity?.externalId].some((f) => f?.toLowerCase().includes(needle)),
    );
    replace(
      table,
      shown.length === 0
        ? h("p", {}, keys.length === 0 ? "No keys in this API yet." : "No loaded key matches the search.")
        : h(
            "table",
            { class: "keys" },
            h("caption", {}, `Keys (${shown.length} shown of ${keys.length} loaded)`),
            thead("Name", "Key", "Status", "Last used", "Credits", "Created", "Actions"),
            h(
              "tbody",
              {},
              shown.map((k) =>
                h(
                  "tr",
                  { "data-key-id": k.keyId },
                  h("td", {}, k.name ?? h("span", { class: "muted" }, "(no name)")),
                  h("td", {}, h("code", {}, `${k.start}…`), h("br"), h("small", { class: "muted" }, k.keyId)),
                  h(
                    "td",
                    {},
                    keyStatus(k, now, limited).map((s) => h("span", { class: `badge ${s.replace(/ /g, "-")}` }, s)),
                  ),
                  h("td", {}, k.lastUsedAt === undefined ? h("span", { class: "muted" }, "never") : when(k.lastUsedAt)),
                  h("td", {}, k.credits ? (k.credits.remaining === null ? "unlimited" : String(k.credits.remaining)) : "unlimited"),
                  h("td", {}, when(k.createdAt)),
                  h("td", {}, actions(k)),
                ),
              ),
            ),
          ),
    );
  };
  search.addEventListener("input", draw);

  const loadPage = async () => {
    await attempt(slot, "list the keys", async () => {
      const { data, pagination } = await call<KeyInfo[]>("apis.listKeys", { apiId, limit: PAGE, ...(cursor ? { cursor } : {}) });
      keys.push(...data);
      cursor = pagination?.hasMore ? pagination.cursor : undefined;
      draw();
      replace(
        more,
        cursor
          ? h(
              "div",
              { class: "actions" },
              h("button", { type: "button", onclick: () => void loadPage() }, "Load more keys"),
              h("button", { type: "button", onclick: () => void loadAll() }, `Load all keys (up to ${MAX_KEYS}) to search them`),
            )
          : null,
      );
    });
  };
  const loadAll = async () => {
    while (cursor && keys.length < MAX_KEYS) {
      const before = keys.length;
      await loadPage();
      if (keys.length === before) break;
    }
  };
  const reload = async () => {
    keys.length = 0;
    cursor = undefined;
    const since = await rateLimitedSince(Date.now() - RECENT_MS);
    limited = since.keys;
    note.textContent = since.unavailable ? `"Rate limited recently" is not shown: ${since.unavailable}` : "";
    await loadPage();
  };
  await reload();
}
