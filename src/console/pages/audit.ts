// The audit log (keyguard's audit.listEvents): who changed what, and which attempts were refused,
// newest first. Filters by actor, target, operation and time; #/audit/<id> opens one record's
// history (a key's, from its row on the keys page). "Export NDJSON" downloads every matching record.
import type { AuditEventItem } from "../../protocol/types";
import { call, rootKey, type Body } from "../api";
import { field, h, replace, thead, when } from "../dom";
import { attempt } from "../ui";

const PAGE = 50;

/** A datetime-local input's value as Unix ms, or undefined when empty. */
function timeOf(input: HTMLInputElement): number | undefined {
  return input.value ? new Date(input.value).getTime() : undefined;
}

/**
 * Who did it: the root key's name with its id under it; a root key without a name by its id (the
 * id is what the "Actor" filter takes), never as "(no name)".
 */
function actorCell(e: AuditEventItem): Array<HTMLElement> {
  const id = h("code", { class: "clip-line", title: e.actorId }, e.actorId);
  if (e.actorName) return [h("span", { class: "actor-name" }, e.actorName), h("small", { class: "muted" }, id)];
  return [h("span", { class: "muted" }, "root key "), id];
}

export async function auditPage(main: HTMLElement, targetId?: string): Promise<void> {
  const actor = h("input", { name: "actorId", placeholder: "rk_…", spellcheck: "false" });
  const target = h("input", { name: "targetId", placeholder: "key_…, api_…", spellcheck: "false", value: targetId ?? "" });
  const operation = h("input", { name: "operation", placeholder: "keys.updateKey", spellcheck: "false" });
  const since = h("input", { name: "since", type: "datetime-local" });
  const until = h("input", { name: "until", type: "datetime-local" });
  const slot = h("div");
  const table = h("div");
  const more = h("div");
  const records: AuditEventItem[] = [];
  let cursor: string | undefined;

  const filters = (): Body<"audit.listEvents"> => {
    const body: Body<"audit.listEvents"> = {};
    for (const [name, input] of [
      ["actorId", actor],
      ["targetId", target],
      ["operation", operation],
    ] as const) {
      if (input.value.trim()) body[name] = input.value.trim();
    }
    const from = timeOf(since);
    const to = timeOf(until);
    if (from !== undefined) body.since = from;
    if (to !== undefined) body.until = to;
    return body;
  };

  const draw = () =>
    replace(
      table,
      records.length === 0
        ? h("p", {}, "No record matches.")
        : h(
            "table",
            { class: "audit" },
            h("caption", {}, `Audit records (${records.length} loaded)`),
            h(
              "colgroup",
              {},
              ["time", "actor", "operation", "outcome", "targets", "change", "caller"].map((c) => h("col", { class: `c-${c}` })),
            ),
            thead("Time", "Actor", "Operation", "Outcome", "Targets", "Change", "Caller"),
            h(
              "tbody",
              {},
              records.map((e) =>
                h(
                  "tr",
                  { "data-audit-id": e.id },
                  h("td", {}, when(e.time)),
                  h("td", {}, actorCell(e)),
                  h("td", {}, h("code", { class: "clip-line", title: e.operation }, e.operation)),
                  h("td", {}, h("span", { class: `badge ${e.outcome}` }, e.outcome)),
                  h(
                    "td",
                    {},
                    e.targets.map((t) =>
                      h("a", { href: `#/audit/${encodeURIComponent(t)}`, class: "target clip-line", title: t }, h("code", {}, t)),
                    ),
                  ),
                  h("td", {}, h("details", {}, h("summary", {}, "Details"), h("pre", {}, JSON.stringify(e.change, null, 2)))),
                  h(
                    "td",
                    {},
                    h("span", { class: "clip-line", title: e.ip }, e.ip),
                    h("small", { class: "muted clip-line", title: e.requestId }, e.requestId),
                  ),
                ),
              ),
            ),
          ),
    );

  const loadPage = () =>
    attempt(slot, "read the audit log", async () => {
      const { data, pagination } = await call("audit.listEvents", {
        ...filters(),
        limit: PAGE,
        ...(cursor ? { cursor } : {}),
      });
      records.push(...data);
      cursor = pagination?.hasMore ? pagination.cursor : undefined;
      draw();
      replace(more, cursor ? h("button", { type: "button", onclick: () => void loadPage() }, "Load more records") : null);
    });

  const reload = async () => {
    records.length = 0;
    cursor = undefined;
    await loadPage();
  };

  /** Every matching record as NDJSON (Accept: application/x-ndjson), saved as a file. */
  const exportAll = () =>
    attempt(slot, "export the audit log", async () => {
      const res = await fetch("/v2/audit.listEvents", {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/x-ndjson", Authorization: `Bearer ${rootKey() ?? ""}` },
        body: JSON.stringify(filters()),
        cache: "no-store",
      });
      if (!res.ok) return void (await call("audit.listEvents", filters()));
      const link = h("a", { href: URL.createObjectURL(await res.blob()), download: "keyguard-audit.ndjson" });
      link.click();
      URL.revokeObjectURL(link.href);
    });

  const form = h(
    "form",
    { class: "toolbar", "aria-label": "Filter the audit log" },
    field("Actor (root key id)", actor),
    field("Target id", target),
    field("Operation", operation),
    field("From", since),
    field("Before", until),
    h("button", { type: "submit", class: "primary" }, "Filter"),
    h("button", { type: "button", onclick: () => void exportAll() }, "Export NDJSON"),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void reload();
  });
  replace(
    main,
    h("h1", {}, targetId ? `History of ${targetId}` : "Audit log"),
    h(
      "p",
      {},
      "Every change made through the key service's API, and every attempt refused for permissions: who (the root key), what, when and from where. Secrets are never kept.",
    ),
    form,
    slot,
    table,
    more,
  );
  await reload();
}
