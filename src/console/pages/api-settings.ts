// One API's settings (#/api/<apiId>): read with keyguard's apis.getApiSettings, changed with keyguard's apis.updateApi
// (name, IP allow-list, recoverable keys, key format, leak response, credits-low threshold); only the fields changed are
// sent. A refusal or an error is shown with the service's detail. Below, the keys moved in (imports.ts), when there were any.
import type { ApiSettings } from "../../protocol/types";
import { call, type Body } from "../api";
import { field, h, replace, uid } from "../dom";
import { announce, attempt, list } from "../ui";
import { importsPanel } from "./imports";

type Changes = Omit<Body<"apis.updateApi">, "apiId">;
/** The key formats of the contract, each as the form names it. */
const KEY_FORMATS: Record<NonNullable<Changes["keyFormat"]>, string> = { plain: "plain", checksummed: "checksummed (CRC32)" };
/** The leak responses of the contract, each as the form names it. */
const LEAK_RESPONSES: Record<NonNullable<Changes["leakResponse"]>, string> = { disable: "disable the key", flag: "only flag the key" };

function select(name: string, value: string, options: Record<string, string>): HTMLSelectElement {
  const el = h(
    "select",
    { name },
    Object.entries(options).map(([v, text]) => h("option", { value: v }, text)),
  );
  el.value = value;
  return el;
}

export async function apiSettingsPage(main: HTMLElement, apiId?: string): Promise<void> {
  const slot = h("div");
  replace(main, h("h1", {}, "API settings"), h("p", {}, h("a", { href: "#/apis" }, "All APIs")), slot);
  if (!apiId) return void slot.append(h("p", {}, "Open an API's settings from its row on the APIs page."));
  let api: ApiSettings | undefined;
  await attempt(slot, "read this API", async () => {
    api = (await call("apis.getApiSettings", { apiId })).data;
  });
  if (!api) return;
  const a = api;
  const name = h("input", { name: "name", required: true, minlength: 3, maxlength: 256, value: a.name });
  const allow = h("textarea", { name: "ipWhitelist", rows: 3, spellcheck: "false" });
  allow.value = (a.ipWhitelist ?? []).join("\n");
  const store = h("input", { type: "checkbox", id: uid("store"), name: "storeKeys", checked: a.storeKeys === true });
  const format = select("keyFormat", a.keyFormat ?? "plain", KEY_FORMATS);
  const leak = select("leakResponse", a.leakResponse ?? "disable", LEAK_RESPONSES);
  const low = h("input", { name: "creditsLowThreshold", type: "number", min: 1, step: 1, value: a.creditsLowThreshold ?? "" });
  const saveSlot = h("div");
  const title = h("h1", {}, `Settings of ${a.name}`);
  const form = h(
    "form",
    { class: "card", "aria-label": "API settings" },
    h(
      "div",
      { class: "grid" },
      field("Name", name),
      field("Key format", format, "New keys; a checksum lets scanners check a key offline"),
      field("When a key is found in public", leak, "What a secret-scanning report of one of its keys does"),
      field("Credits low at", low, "A charge that takes a key's credits to this or below sends key.credits_low; empty: never"),
      h(
        "div",
        { class: "check" },
        store,
        h("label", { for: store.id }, "Recoverable keys: keep an encrypted copy of keys created as recoverable"),
      ),
      field("IP allow-list", allow, "Addresses or CIDR ranges allowed to verify this API's keys, one a line; empty: any address"),
    ),
    h("button", { type: "submit", class: "primary" }, "Save settings"),
    saveSlot,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const changes: Changes = {};
    if (name.value.trim() !== a.name) changes.name = name.value.trim();
    const ips = list(allow.value);
    if (ips.join("\n") !== (a.ipWhitelist ?? []).join("\n")) changes.ipWhitelist = ips;
    if (store.checked !== (a.storeKeys === true)) changes.storeKeys = store.checked;
    if (format.value !== (a.keyFormat ?? "plain")) changes.keyFormat = format.value as keyof typeof KEY_FORMATS;
    if (leak.value !== (a.leakResponse ?? "disable")) changes.leakResponse = leak.value as keyof typeof LEAK_RESPONSES;
    const threshold = low.value.trim() === "" ? null : Number(low.value);
    if (threshold !== (a.creditsLowThreshold ?? null)) changes.creditsLowThreshold = threshold;
    if (Object.keys(changes).length === 0) return replace(saveSlot, h("p", { class: "muted" }, "Nothing changed."));
    await attempt(saveSlot, "change this API's settings", async () => {
      const { data } = await call("apis.updateApi", { apiId: a.id, ...changes });
      Object.assign(a, { ipWhitelist: undefined, creditsLowThreshold: undefined }, data);
      title.textContent = `Settings of ${data.name}`;
      announce(`Settings of ${data.name} saved.`);
      replace(saveSlot, h("p", { class: "muted" }, "Saved."));
    });
  });
  replace(
    main,
    title,
    h("p", {}, h("a", { href: "#/apis" }, "All APIs"), " · ", h("a", { href: `#/keys/${encodeURIComponent(a.id)}` }, "Its keys")),
    slot,
    h("dl", { class: "facts" }, h("dt", {}, "API id"), h("dd", {}, h("code", {}, a.id))),
    form,
  );
  const imports = await importsPanel(a.id);
  if (imports) main.append(imports);
}
