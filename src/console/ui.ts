// Shared pieces of the pages: how an API error is shown (a refusal for 403), confirmation and
// "shown once" dialogs, and the live status line.
import { ApiError } from "./api";
import { h, replace } from "./dom";

/** An error from the API as a panel: a 403 as a clear refusal, anything else with its title and detail. */
export function errorPanel(err: unknown, doing: string, hint?: (e: ApiError) => string | undefined): HTMLElement {
  if (err instanceof ApiError && err.refused) {
    return h(
      "div",
      { class: "refusal", role: "alert" },
      h("h3", {}, "Not allowed with this root key"),
      h("p", {}, `This root key may not ${doing}. The service said: `, h("q", { class: "detail" }, err.detail)),
      h("p", {}, "Sign in with a root key that holds this permission, or create one on the Root keys page with a key that does."),
    );
  }
  const e = err instanceof ApiError ? err : new ApiError(0, "Error", String((err as Error)?.message ?? err), "", undefined);
  return h(
    "div",
    { class: "error", role: "alert" },
    h("h3", {}, `Could not ${doing}: ${e.title}${e.status ? ` (${e.status})` : ""}`),
    h("p", { class: "detail" }, e.detail),
    e.errors.length > 1
      ? h(
          "ul",
          {},
          e.errors.map((x) => h("li", {}, `${x.location ?? ""}: ${x.message ?? ""}${x.fix ? ` (${x.fix})` : ""}`)),
        )
      : null,
    hint?.(e) ? h("p", {}, hint(e)) : null,
    e.requestId ? h("p", { class: "muted" }, `Request id: ${e.requestId}`) : null,
  );
}

/** Runs `fn`; on error shows it in `slot` (cleared first). Returns whether it succeeded. */
export async function attempt(
  slot: HTMLElement,
  doing: string,
  fn: () => Promise<void>,
  hint?: (e: ApiError) => string | undefined,
): Promise<boolean> {
  slot.replaceChildren();
  try {
    await fn();
    return true;
  } catch (err) {
    replace(slot, errorPanel(err, doing, hint));
    return false;
  }
}

/**
 * For a page whose loads may overlap (a choice changed while the last one's answer is on its way):
 * call the returned `begin()` as a load starts; what it returns tells whether that load is still
 * the newest, so a slower answer to an earlier choice draws nothing over a later one's.
 */
export function newestLoad(): () => () => boolean {
  let newest = 0;
  return () => {
    const mine = ++newest;
    return () => mine === newest;
  };
}

/** Announces a short message to screen readers and sighted users. */
export function announce(message: string): void {
  const live = document.getElementById("status");
  if (live) live.textContent = message;
}

/** A modal dialog; resolves true when confirmed. */
export function confirmDialog(title: string, text: string, action: string): Promise<boolean> {
  return new Promise((resolve) => {
    const dialog = h("dialog", { "aria-labelledby": "confirm-title" });
    const close = (ok: boolean) => {
      dialog.close();
      dialog.remove();
      resolve(ok);
    };
    dialog.addEventListener("cancel", () => close(false));
    replace(
      dialog,
      h("h2", { id: "confirm-title" }, title),
      h("p", {}, text),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", onclick: () => close(false) }, "Cancel"),
        h("button", { type: "button", class: "danger", onclick: () => close(true) }, action),
      ),
    );
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** Shows a new secret once, with a copy button; it is not kept anywhere after the dialog closes. */
export function showOnce(title: string, secret: string, note: string): Promise<void> {
  return new Promise((resolve) => {
    const dialog = h("dialog", { "aria-labelledby": "once-title", class: "once" });
    const copied = h("span", { class: "muted", role: "status" });
    const close = () => {
      dialog.close();
      dialog.remove();
      resolve();
    };
    dialog.addEventListener("cancel", close);
    replace(
      dialog,
      h("h2", { id: "once-title" }, title),
      h("p", {}, note),
      h("code", { class: "secret", "data-testid": "new-secret" }, secret),
      h(
        "div",
        { class: "actions" },
        h(
          "button",
          {
            type: "button",
            onclick: async () => {
              try {
                await navigator.clipboard.writeText(secret);
                copied.textContent = "Copied to the clipboard.";
              } catch {
                copied.textContent = "The browser refused the clipboard: select the key and copy it by hand.";
              }
            },
          },
          "Copy",
        ),
        copied,
        h("button", { type: "button", class: "primary", onclick: close }, "I have stored it"),
      ),
    );
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** "a, b, c" → ["a","b","c"] (blank entries dropped). */
export function list(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}
