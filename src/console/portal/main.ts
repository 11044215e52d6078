// The hosted portal's shell (/portal/): the session (portal.getSession) gives the provider's branding
// and the tabs its scopes allow — Keys with keys:read, Analytics with analytics:read, Docs always —
// at hash routes #keys, #analytics, #docs. #ended says the link or session is no longer valid.
import type { PortalSessionInfo } from "../../protocol/types";
import { h, replace } from "../dom";
import { errorPanel } from "../ui";
import { portalCall } from "./api";
import { analyticsTab } from "./analytics";
import { docsTab } from "./docs";
import { keysTab } from "./keys";

type Tab = (main: HTMLElement, session: PortalSessionInfo) => Promise<void>;
const TABS: Array<{ path: string; label: string; scope?: string; render: Tab }> = [
  { path: "keys", label: "Keys", scope: "keys:read", render: keysTab },
  { path: "analytics", label: "Analytics", scope: "analytics:read", render: analyticsTab },
  { path: "docs", label: "Docs", render: docsTab },
];

let session: PortalSessionInfo | undefined;

function ended(app: HTMLElement): void {
  replace(
    app,
    h(
      "main",
      { id: "main" },
      h(
        "div",
        { class: "card" },
        h("h1", {}, "This link is no longer valid"),
        h(
          "p",
          {},
          "The link was used already, or the session has ended. Go back to the app you came from and open the API keys page again.",
        ),
        h("a", { href: "/portal/return", class: "button-link" }, "Back to the app"),
      ),
    ),
  );
}

async function render(moved = false): Promise<void> {
  const app = document.getElementById("app")!;
  if (location.hash === "#ended") return ended(app);
  try {
    session ??= await portalCall("portal.getSession", {});
  } catch (err) {
    replace(app, h("main", { id: "main" }, errorPanel(err, "open your API keys")));
    return;
  }
  const s = session;
  document.title = `${s.name}: API keys`;
  if (s.accentColor) document.documentElement.style.setProperty("--brand", s.accentColor);
  const tabs = TABS.filter((t) => t.scope === undefined || s.scopes.includes(t.scope));
  const path = location.hash.replace(/^#\/?/, "");
  const tab = tabs.find((t) => t.path === path) ?? tabs[0]!;
  const main = h("main", { id: "main", tabindex: "-1" });
  const header = h(
    "header",
    { class: "portal" },
    s.logoUrl ? h("img", { src: s.logoUrl, alt: "", class: "logo" }) : null,
    h("span", { class: "brand" }, s.name),
    h(
      "nav",
      { "aria-label": "Sections" },
      h(
        "ul",
        {},
        tabs.map((t) => h("li", {}, h("a", { href: `#${t.path}`, "aria-current": t === tab ? "page" : undefined }, t.label))),
      ),
    ),
    // Whose keys these are: a link minted for someone else (sent to the reader to sign them in to
    // another account) shows another name here.
    h("span", { class: "who", "data-testid": "signed-in-as" }, `Signed in as ${s.externalId}`),
    s.returnUrl ? h("a", { href: "/portal/return", class: "back" }, "Back to the app") : null,
  );
  const skip = h("a", { href: "#main", class: "skip", onclick: (ev: Event) => (ev.preventDefault(), main.focus()) }, "Skip to the page");
  const note = s.preview
    ? h("p", { class: "preview-note" }, "Preview: this is how your customers see the portal. Keys made here are real keys.")
    : null;
  replace(app, skip, header, main, h("p", { id: "status", class: "sr-status", role: "status", "aria-live": "polite" }));
  if (note) main.before(note);
  if (moved) main.focus();
  await tab.render(main, s);
}

window.addEventListener("hashchange", () => void render(true));
void render();
