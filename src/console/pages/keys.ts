// Keys of one API (#/keys/<apiId>): a search by the service (apis.listKeys' `search`), pagination,
// columns sorted by the service on a click on their head (apis.listKeys' `sort`), status (a key reported leaked by secret scanning
// included), lastUsedAt; create (shown once), edit, disable/enable, reroll and delete, each
// confirmed, from one menu per row.
import type { ApiListItem, KeyInfo, KeySort, KeyWithSettings } from "../../protocol/types";
import { call, type Body } from "../api";
import { dateCell, field, h, replace, uid, when } from "../dom";
import { rateLimitedSince } from "../analytics";
import { announce, attempt, newestLoad, showOnce } from "../ui";
import { deleteKey, rerollKey, toggleKey } from "./key-actions";
import { keyForm } from "./key-form";

const PAGE = 25;

/** Keys with their settings (keyguard's keys.getKeySettings: leak reports, allow-list, threshold), one call per page. */
export async function withSettings(keys: readonly KeyInfo[]): Promise<KeyWithSettings[]> {
  if (keys.length === 0) return [];
  const { data } = await call("keys.getKeySettings", { keyIds: keys.map((k) => k.keyId) });
  const byId = new Map(data.map(({ keyId, ...settings }) => [keyId, settings]));
  return keys.map((k) => ({ ...k, ...byId.get(k.keyId) }));
}
/** "Load all" stops at this many keys. */
const MAX_KEYS = 2000;
/** "Rate limited recently": a RATE_LIMITED verification within this window. */
const RECENT_MS = 60 * 60 * 1000;

export function keyStatus(key: KeyWithSettings, now: number, limited: ReadonlySet<string> | undefined): string[] {
  const status: string[] = [key.enabled ? "enabled" : "disabled"];
  if (key.expires !== undefined && key.expires <= now) status.push("expired");
  if (key.credits && key.credits.remaining !== null && key.credits.remaining <= 0) status.push("out of credits");
  if (limited?.has(key.keyId)) status.push("rate limited recently");
  if (key.leakReports && key.leakReports.length > 0) status.push("leaked");
  return status;
}

/** Where and when a leaked key was last found in public (secret scanning), under its badges. */
function leakNote(key: KeyWithSettings): HTMLElement | null {
  const last = key.leakReports?.at(-1);
  if (!last) return null;
  const count = key.leakReports!.length;
  const where = /^https:\/\//.test(last.url) ? h("a", { href: last.url, rel: "noopener noreferrer" }, "where") : null;
  return h(
    "small",
    { class: "leak-note" },
    `Found in public (${last.source}) ${when(last.reportedAt)}${count > 1 ? `, ${count} reports` : ""}`,
    where ? [" · ", where] : [],
  );
}

export async function keysPage(main: HTMLElement, apiId?: string): Promise<void> {
  const slot = h("div");
  replace(main, h("h1", {}, "Keys"), slot);
  let apis: ApiListItem[] = [];
  const listed = await attempt(slot, "list the APIs", async () => {
    apis = (await call("apis.listApis", { limit: 100 })).data;
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

  const search = h("input", { type: "search", name: "search", maxlength: 255, placeholder: "name, id or start" });
  const owner = h("input", { type: "search", name: "owner", maxlength: 255 });
  owner.addEventListener("change", () => void reload());
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
        // A form for a new key sets no field to null (null clears a field of a key being edited).
        const { data } = await call("keys.createKey", { apiId, ...(fields as Omit<Body<"keys.createKey">, "apiId">) });
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
    h(
      "div",
      { class: "toolbar" },
      field("API", chooser),
      field("Search", search, "Every key of the API whose name, id or start contains it"),
      field("Owner", owner, "An identity's externalId: the service lists its keys only"),
    ),
    h("p", {}, h("a", { href: "#/key" }, "Find a key by its value")),
    h("details", { class: "card" }, h("summary", {}, "Create a key"), createForm),
    slot,
    note,
    table,
    more,
  );

  const keys: KeyWithSettings[] = [];
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
    const toggle = async () => void ((await toggleKey(key, slot)) && (await reload()));
    const reroll = async () => void ((await rerollKey(key, slot)) && (await reload()));
    const remove = async () => void ((await deleteKey(key, slot)) && (await reload()));
    return rowMenu(label, [
      h("button", { type: "button", onclick: edit, "aria-label": `Edit ${label}` }, "Edit"),
      h(
        "button",
        { type: "button", onclick: toggle, "aria-label": `${key.enabled ? "Disable" : "Enable"} ${label}` },
        key.enabled ? "Disable" : "Enable",
      ),
      h("button", { type: "button", onclick: reroll, "aria-label": `Reroll ${label}` }, "Reroll"),
      h("a", { href: `#/audit/${encodeURIComponent(key.keyId)}`, "aria-label": `History of ${label}` }, "History"),
      h("button", { type: "button", class: "danger", onclick: remove, "aria-label": `Delete ${label}` }, "Delete"),
    ]);
  };

  let sort: SortState = { column: "createdAt", descending: false };
  const header = (column: SortColumn | undefined, label: string) => {
    if (!column) return h("th", { scope: "col" }, label);
    const active = sort.column === column;
    return h(
      "th",
      { scope: "col", "aria-sort": active ? (sort.descending ? "descending" : "ascending") : undefined },
      h(
        "button",
        {
          type: "button",
          class: "sort",
          onclick: () => {
            // Sorted by the service: every key of the API (and of the search) in this order, a page at a time.
            sort = { column, descending: active ? !sort.descending : column !== "name" };
            void reload().then(() => table.querySelector<HTMLButtonElement>(`th[aria-sort] button`)?.focus());
          },
        },
        label,
        h("span", { "aria-hidden": "true" }, active ? (sort.descending ? " ▼" : " ▲") : ""),
      ),
    );
  };

  const draw = () => {
    const now = Date.now();
    const shown = keys;
    // A redraw (the first page's badges arrive after it) keeps the row menu the reader opened, and the focus.
    const openMenu = table.querySelector('[aria-expanded="true"]')?.getAttribute("aria-label");
    const focused = table.contains(document.activeElement) ? document.activeElement?.getAttribute("aria-label") : undefined;
    const labelled = (label: string) => table.querySelector<HTMLElement>(`[aria-label="${CSS.escape(label)}"]`);
    replace(
      table,
      shown.length === 0
        ? h("p", {}, searched ? `No key of this API matches "${searched}".` : "No keys in this API yet.")
        : h(
            "table",
            { class: "keys" },
            h(
              "caption",
              {},
              `Keys (${keys.length} loaded${searched ? `, matching "${searched}"` : ""}${cursor ? "; more on the service" : ""})`,
            ),
            h(
              "colgroup",
              {},
              ["name", "key", "status", "used", "expires", "credits", "created", "actions"].map((c) => h("col", { class: `c-${c}` })),
            ),
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                header("name", "Name"),
                header(undefined, "Key"),
                header(undefined, "Status"),
                header(undefined, "Last used"),
                header("expires", "Expires"),
                header("credits", "Credits"),
                header("createdAt", "Created"),
                h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Actions")),
              ),
            ),
            h(
              "tbody",
              {},
              shown.map((k) =>
                h(
                  "tr",
                  { "data-key-id": k.keyId },
                  h(
                    "td",
                    { class: "name" },
                    h(
                      "a",
                      { href: `#/key/${encodeURIComponent(k.keyId)}`, "aria-label": `Open key ${k.name ?? k.keyId}` },
                      k.name ?? "(no name)",
                    ),
                  ),
                  h(
                    "td",
                    {},
                    h("code", { class: "clip-line", title: `${k.start}…` }, `${k.start}…`),
                    h("small", { class: "muted clip-line", title: k.keyId }, k.keyId),
                  ),
                  h(
                    "td",
                    {},
                    keyStatus(k, now, limited).map((s) => h("span", { class: `badge ${s.replace(/ /g, "-")}` }, s)),
                    leakNote(k),
                  ),
                  h("td", {}, dateCell(k.lastUsedAt)),
                  h("td", {}, k.expires === undefined ? h("span", { class: "muted" }, "never") : dateCell(k.expires)),
                  h("td", {}, k.credits ? (k.credits.remaining === null ? "unlimited" : String(k.credits.remaining)) : "unlimited"),
                  h("td", {}, dateCell(k.createdAt)),
                  h("td", {}, actions(k)),
                ),
              ),
            ),
          ),
    );
    if (openMenu) labelled(openMenu)?.click();
    if (focused) labelled(focused)?.focus();
  };
  // Searched by the service as the reader types (the last answer wins), or at once on Enter.
  let searched = "";
  let typing: ReturnType<typeof setTimeout> | undefined;
  const searchNow = () => {
    clearTimeout(typing);
    if (search.value.trim() !== searched) void reload();
  };
  search.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(searchNow, 300);
  });
  search.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") searchNow();
  });

  /** Whether a page belongs to the newest reload: an answer to an earlier search is dropped. */
  const beginReload = newestLoad();
  let currentReload = beginReload();
  const loadPage = async () => {
    const current = currentReload;
    await attempt(slot, "list the keys", async () => {
      const { data, pagination } = await call("apis.listKeys", {
        apiId,
        limit: PAGE,
        ...(owner.value.trim() ? { externalId: owner.value.trim() } : {}),
        ...(searched ? { search: searched } : {}),
        sort: { by: sort.column, order: sort.descending ? "desc" : "asc" },
        ...(cursor ? { cursor } : {}),
      });
      const page = await withSettings(data);
      if (!current()) return;
      keys.push(...page);
      cursor = pagination?.hasMore ? pagination.cursor : undefined;
      draw();
      replace(
        more,
        cursor
          ? h(
              "div",
              { class: "actions" },
              h("button", { type: "button", onclick: () => void loadPage() }, "Load more keys"),
              h("button", { type: "button", onclick: () => void loadAll() }, `Load all keys (up to ${MAX_KEYS})`),
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
    currentReload = beginReload();
    searched = search.value.trim();
    keys.length = 0;
    cursor = undefined;
    // The first page does not wait for the analytics query; the badges follow when it answers.
    const since = rateLimitedSince(Date.now() - RECENT_MS).then((r) => {
      limited = r.keys;
      note.textContent = r.unavailable ? `"Rate limited recently" is not shown: ${r.unavailable}` : "";
    });
    await loadPage();
    await since;
    draw();
  };
  await reload();
}

/** The columns the service sorts by (keyguard's `sort` on apis.listKeys); "Last used" is not one. */
type SortColumn = KeySort["by"];
interface SortState {
  column: SortColumn;
  descending: boolean;
}

/** One "Actions" button per row opening its actions (a menu), closed by Escape, a choice or leaving it. */
function rowMenu(label: string, items: HTMLElement[]): HTMLElement {
  const id = uid("menu");
  const list = h("div", { class: "menu-items", id, hidden: true }, items);
  const toggle = h(
    "button",
    { type: "button", "aria-expanded": "false", "aria-controls": id, "aria-label": `Actions for ${label}` },
    "Actions ▾",
  );
  const show = (open: boolean) => {
    list.hidden = !open;
    toggle.setAttribute("aria-expanded", String(open));
  };
  toggle.addEventListener("click", () => {
    show(list.hidden);
    if (!list.hidden) list.querySelector<HTMLElement>("button, a")?.focus();
  });
  const menu = h("div", { class: "menu" }, toggle, list);
  menu.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && !list.hidden) {
      ev.stopPropagation();
      show(false);
      toggle.focus();
    }
  });
  menu.addEventListener("focusout", (ev) => {
    if (!menu.contains(ev.relatedTarget as Node | null)) show(false);
  });
  list.addEventListener("click", () => show(false));
  return menu;
}
