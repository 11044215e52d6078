// The portal's Docs tab: the operator's Markdown (./markdown, text only) and how to call the API with a key.
import type { PortalSessionInfo } from "../../protocol/types";
import { h, replace } from "../dom";
import { markdown } from "./markdown";

export async function docsTab(main: HTMLElement, session: PortalSessionInfo): Promise<void> {
  replace(
    main,
    h("h1", {}, "Docs"),
    h("div", { class: "docs card" }, session.docs ? markdown(session.docs) : h("p", {}, `${session.name} has not written docs here yet.`)),
    h(
      "section",
      { class: "card", "aria-labelledby": "howto" },
      h("h2", { id: "howto" }, "Calling the API with your key"),
      h("p", {}, "Send your key in the Authorization header of every request:"),
      h("pre", {}, h("code", {}, 'curl "$API_URL/…" \\\n  -H "Authorization: Bearer $YOUR_KEY"')),
      h("p", { class: "muted" }, "Keep the key on your server: never put it in a web page or an app you ship."),
    ),
  );
  return Promise.resolve();
}
