// One key (#/key/<keyId>: the key's id, never the key): everything keys.getKey and keyguard's
// keys.getKeySettings answer; edited with
// keys.updateKey (name, owner, expiry, credits and refill, named rate limits, permissions, roles,
// meta), credits changed with keys.updateCredits, enabled or disabled, rerolled, deleted, a
// recoverable key shown again (keys.getKey with decrypt); its verifications over time by outcome
// and its recent events. #/key alone finds a key by its value.
import type { KeyCredits, KeyWithSettings } from "../../protocol/types";
import { call, type Body } from "../api";
import { h, field, replace, when } from "../dom";
import { limitText, problem } from "../inputs";
import { announce, attempt, showOnce } from "../ui";
import { deleteKey, rerollKey, toggleKey } from "./key-actions";
import { keyForm } from "./key-form";
import { keyStatus, withSettings } from "./keys";
import { usagePanel } from "./verifications";

type CreditOperation = Body<"keys.updateCredits">["operation"];
/** keys.updateCredits' operations, each as the form names it. */
const CREDIT_OPERATIONS: Record<CreditOperation, string> = { increment: "add", decrement: "take away", set: "set to" };

function creditsText(c: KeyCredits | undefined): string {
  if (!c || c.remaining === null) return "unlimited";
  const refill = c.refill
    ? `, refilled to ${c.refill.amount} ${c.refill.interval === "daily" ? "daily" : `monthly on day ${c.refill.refillDay ?? 1}`}`
    : "";
  return `${c.remaining} left${refill}`;
}

function facts(k: KeyWithSettings): HTMLElement {
  const rows: Array<[string, Node | string]> = [
    ["Key id", h("code", {}, k.keyId)],
    ["Starts with", h("code", {}, `${k.start}…`)],
    ["Name", k.name ?? "(no name)"],
    [
      "Status",
      h(
        "span",
        {},
        keyStatus(k, Date.now(), undefined).map((s) => h("span", { class: `badge ${s.replace(/ /g, "-")}` }, s)),
      ),
    ],
    ["Created", when(k.createdAt)],
    ["Updated", when(k.updatedAt)],
    ["Last used", when(k.lastUsedAt)],
    ["Expires", k.expires === undefined ? "never" : when(k.expires)],
    ["Owner", k.identity ? h("a", { href: `#/identities/${encodeURIComponent(k.identity.id)}` }, k.identity.externalId) : "no identity"],
    ["Credits", creditsText(k.credits)],
    ["Credits low at", k.creditsLowThreshold === undefined ? "the API's setting" : `${k.creditsLowThreshold} (this key's own)`],
    [
      "Rate limits",
      (k.ratelimits ?? []).length === 0
        ? "none"
        : (k.ratelimits ?? []).map((r) => `${limitText(r)}${r.autoApply ? "" : " (on request)"}`).join("; "),
    ],
    ["Permissions", (k.permissions ?? []).length === 0 ? "none" : (k.permissions ?? []).join(", ")],
    ["Roles", (k.roles ?? []).length === 0 ? "none" : (k.roles ?? []).join(", ")],
    ["Meta", k.meta ? h("pre", {}, JSON.stringify(k.meta, null, 2)) : "none"],
    [
      "Found in public",
      (k.leakReports ?? []).length === 0
        ? "never reported"
        : h(
            "ul",
            { class: "plain" },
            (k.leakReports ?? []).map((r) =>
              h(
                "li",
                {},
                `${when(r.reportedAt)}: ${r.source} (${r.type}) `,
                /^https:\/\//.test(r.url) ? h("a", { href: r.url, rel: "noopener noreferrer" }, r.url) : r.url,
              ),
            ),
          ),
    ],
  ];
  return h(
    "dl",
    { class: "facts", "data-testid": "key-facts" },
    rows.flatMap(([t, d]) => [h("dt", {}, t), h("dd", {}, d)]),
  );
}

/** #/key alone: a key found by its value (keys.whoami), sent in the request body only, then its page by id. */
function findKey(main: HTMLElement): void {
  const value = h("input", { type: "password", name: "key", required: true, autocomplete: "off", spellcheck: "false" });
  const slot = h("div");
  const form = h(
    "form",
    { class: "card inline", "aria-label": "Find a key by its value" },
    field("Key", value, "The whole key, as your caller sends it; it is not kept"),
    h("button", { type: "submit", class: "primary" }, "Find key"),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    await attempt(slot, "find this key", async () => {
      const { data } = await call("keys.whoami", { key: value.value.trim() });
      value.value = "";
      location.hash = `#/key/${encodeURIComponent(data.keyId)}`;
    });
  });
  replace(
    main,
    h("h1", {}, "Find a key"),
    h("p", {}, "Open a key from its row on the ", h("a", { href: "#/keys" }, "Keys"), " page, or find it by its value:"),
    form,
    slot,
  );
}

export async function keyPage(main: HTMLElement, keyId?: string): Promise<(() => void) | void> {
  if (!keyId) return findKey(main);
  const id = keyId;
  // Shown again after each change; the usage panel of the previous showing stops first.
  let stop: (() => void) | undefined;
  const show = async (): Promise<void> => {
    stop?.();
    stop = await showKey(main, id, show);
  };
  await show();
  return () => stop?.();
}

/** Renders the key's page; returns what stops its usage panel's refreshes. */
async function showKey(main: HTMLElement, keyId: string, reload: () => Promise<void>): Promise<(() => void) | undefined> {
  const slot = h("div");
  replace(main, h("h1", {}, "Key"), slot);
  let key: KeyWithSettings | undefined;
  await attempt(slot, "read this key", async () => {
    [key] = await withSettings([(await call("keys.getKey", { keyId })).data]);
  });
  if (!key) return undefined;
  const k = key;
  const label = k.name ?? k.keyId;

  const form = keyForm(k);
  const editSlot = h("div");
  const edit = h(
    "form",
    { "aria-label": "Edit this key" },
    form.element,
    h("button", { type: "submit", class: "primary" }, "Save key"),
    editSlot,
  );
  edit.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const fields = form.read();
    if (typeof fields === "string") return problem(editSlot, fields);
    const ok = await attempt(editSlot, "update this key", async () => {
      await call("keys.updateKey", { keyId: k.keyId, ...fields });
    });
    if (ok) {
      announce(`Key ${label} saved.`);
      await reload();
    }
  });

  const operation = h(
    "select",
    { name: "creditsOperation" },
    Object.entries(CREDIT_OPERATIONS).map(([value, text]) => h("option", { value }, text)),
  );
  const value = h("input", { name: "creditsValue", type: "number", min: 0, step: 1, required: true });
  const creditSlot = h("div");
  const credits = h(
    "form",
    { class: "card inline", "aria-label": "Change the credits" },
    field("Credits operation", operation),
    field("Amount", value),
    h("button", { type: "submit" }, "Change credits"),
    creditSlot,
  );
  credits.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    await attempt(creditSlot, "change the credits", async () => {
      const { data } = await call("keys.updateCredits", {
        keyId: k.keyId,
        operation: operation.value as CreditOperation,
        value: Number(value.value),
      });
      announce(`Credits of ${label}: ${creditsText(data)}.`);
      await reload();
    });
  });

  const button = (text: string, onclick: () => Promise<void>, danger = false) =>
    h("button", { type: "button", class: danger ? "danger" : undefined, onclick }, text);
  const actions = h(
    "div",
    { class: "actions" },
    button(k.enabled ? "Disable key" : "Enable key", async () => void ((await toggleKey(k, slot)) && (await reload()))),
    button("Show the key", async () => {
      let plaintext: string | undefined;
      const ok = await attempt(slot, "show this key", async () => {
        plaintext = (await call("keys.getKey", { keyId: k.keyId, decrypt: true })).data.plaintext;
      });
      if (!ok) return;
      if (plaintext === undefined)
        return problem(
          slot,
          "This key has no recoverable copy: it was not created as recoverable, or the service's encryption key changed.",
        );
      await showOnce(`Key ${label}`, plaintext, "The service keeps an encrypted copy of this key. Treat it as a secret.");
    }),
    button("Reroll key", async () => {
      const newId = await rerollKey(k, slot);
      if (newId) location.hash = `#/key/${encodeURIComponent(newId)}`;
    }),
    button(
      "Delete key",
      async () => {
        if (await deleteKey(k, slot)) location.hash = "#/keys";
      },
      true,
    ),
  );

  const usage = h("div");
  replace(
    main,
    h("h1", {}, `Key ${label}`),
    slot,
    facts(k),
    actions,
    h("details", { class: "card" }, h("summary", {}, "Edit this key"), edit),
    credits,
    h("section", { "aria-labelledby": "usage-title" }, h("h2", { id: "usage-title" }, "Verifications of this key"), usage),
  );
  const panel = await usagePanel(k.keyId);
  replace(usage, panel.element);
  return panel.stop;
}
