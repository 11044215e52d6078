// The console's shell: sign-in, navigation and hash routes (#/apis, #/api/<apiId>, #/keys/<apiId>,
// #/key/<keyId>, #/identities[/<id>], #/ratelimits[/<namespace>], #/rbac, #/root-keys,
// #/verifications, #/audit[/<id>], #/webhooks, #/portals). The root key lives in this tab's sessionStorage
// only; the location holds ids only.
import { call, rootKey, signIn, signOut } from "./api";
import { field, h, replace } from "./dom";
import { apiSettingsPage } from "./pages/api-settings";
import { apisPage } from "./pages/apis";
import { auditPage } from "./pages/audit";
import { identitiesPage } from "./pages/identities";
import { keyPage } from "./pages/key";
import { keysPage } from "./pages/keys";
import { portalsPage } from "./pages/portals";
import { ratelimitsPage } from "./pages/ratelimits";
import { rbacPage } from "./pages/rbac";
import { rootKeysPage } from "./pages/root-keys";
import { verificationsPage } from "./pages/verifications";
import { webhooksPage } from "./pages/webhooks";
import { errorPanel } from "./ui";

const ROUTES: Array<{ path: string; label: string }> = [
  { path: "apis", label: "APIs" },
  { path: "keys", label: "Keys" },
  { path: "identities", label: "Identities" },
  { path: "ratelimits", label: "Rate limits" },
  { path: "rbac", label: "Permissions and roles" },
  { path: "root-keys", label: "Root keys" },
  { path: "verifications", label: "Verifications" },
  { path: "audit", label: "Audit log" },
  { path: "webhooks", label: "Webhooks" },
  { path: "portals", label: "Portals" },
];

/** A page renders into `main` and may return a function that stops its timers when left. */
type Page = (main: HTMLElement, arg?: string) => Promise<(() => void) | void>;

const PAGES: Record<string, Page> = {
  apis: apisPage,
  api: apiSettingsPage,
  keys: keysPage,
  key: keyPage,
  identities: identitiesPage,
  ratelimits: ratelimitsPage,
  rbac: rbacPage,
  "root-keys": rootKeysPage,
  verifications: verificationsPage,
  audit: auditPage,
  webhooks: webhooksPage,
  portals: portalsPage,
};

let leave: (() => void) | undefined;

function route(): { page: string; arg: string | undefined } {
  const [page, arg] = location.hash.replace(/^#\/?/, "").split("/");
  return { page: page || "apis", arg: arg ? decodeURIComponent(arg) : undefined };
}

function signInView(app: HTMLElement, problem?: unknown): void {
  const input = h("input", { type: "password", name: "rootKey", autocomplete: "off", required: true, spellcheck: "false" });
  const slot = h("div");
  if (problem) slot.append(errorPanel(problem, "go on with the root key you signed in with"));
  const form = h(
    "form",
    { class: "card signin", "aria-labelledby": "signin-title" },
    h("h1", { id: "signin-title" }, "keyguard console"),
    h(
      "p",
      {},
      "Sign in with a root key of the key service. It is kept in this browser tab only (sessionStorage) and sent to this service alone.",
    ),
    field("Root key", input),
    h("button", { type: "submit", class: "primary" }, "Sign in"),
    slot,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    slot.replaceChildren();
    try {
      await call("apis.listApis", { limit: 1 }, key);
    } catch (err) {
      // A 403 proves the key too: it only may not list APIs.
      if ((err as { status?: number }).status !== 403) {
        replace(slot, errorPanel(err, "sign in"));
        return;
      }
    }
    signIn(key);
    input.value = "";
    void render();
  });
  replace(app, h("main", { id: "main" }, form));
  input.focus();
}

/** `moved`: the reader followed a link; focus goes to the new page, as a page load would put it. */
async function render(moved = false): Promise<void> {
  const app = document.getElementById("app")!;
  leave?.();
  leave = undefined;
  if (!rootKey()) return signInView(app);
  const { page, arg } = route();
  const main = h("main", { id: "main", tabindex: "-1" });
  const links = ROUTES.map((r) =>
    h(
      "li",
      {},
      h(
        "a",
        {
          href: `#/${r.path}`,
          "aria-current":
            r.path === page || (r.path === "keys" && page === "key") || (r.path === "apis" && page === "api") ? "page" : undefined,
        },
        r.label,
      ),
    ),
  );
  const signOutButton = h("button", { type: "button", class: "signout" }, "Sign out");
  signOutButton.addEventListener("click", () => {
    signOut();
    history.replaceState(null, "", location.pathname);
    void render();
  });
  const header = h(
    "header",
    {},
    h("span", { class: "brand" }, "keyguard"),
    h("nav", { "aria-label": "Sections" }, h("ul", {}, links)),
    signOutButton,
  );
  const skip = h("a", { href: "#main", class: "skip", onclick: (ev: Event) => (ev.preventDefault(), main.focus()) }, "Skip to the page");
  replace(app, skip, header, main, h("p", { id: "status", class: "sr-status", role: "status", "aria-live": "polite" }));
  if (moved) main.focus();
  const stop = await (PAGES[page] ?? apisPage)(main, arg);
  if (stop) leave = stop;
}

window.addEventListener("hashchange", () => void render(true));
window.addEventListener("keyguard:signed-out", (ev) => {
  leave?.();
  leave = undefined;
  signInView(document.getElementById("app")!, (ev as CustomEvent).detail);
});
void render();
