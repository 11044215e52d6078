// Webhooks (keyguard's webhooks.* operations): the workspace's endpoints (add one, for some event
// types or all of them: its signing secret is shown once; change its URL and events; pause and
// resume it; rotate its secret; send it a test event; enable a disabled one again; delete one) and
// the deliveries, filtered by status a page at a time, each with its attempts and sent again, or
// every failed one of an endpoint since a time. A form the service refuses shows its reasons at
// the form, beside the fields they name.
import { ALL_EVENTS, WEBHOOK_EVENT_TYPES } from "../../protocol/contract/webhook-events";
import type { WebhookDeliveryItem, WebhookEndpointItem } from "../../protocol/types";
import { ApiError, call } from "../api";
import { field, h, replace, thead, uid, when } from "../dom";
import { announce, attempt, confirmDialog, showOnce } from "../ui";

/** The event checkboxes of a form: "All events" first, which covers (and greys out) the others. */
function eventChoices(chosen: readonly string[] = []) {
  const all = h("input", { type: "checkbox", value: ALL_EVENTS, id: uid("event"), checked: chosen.includes(ALL_EVENTS) });
  const boxes = WEBHOOK_EVENT_TYPES.filter((t) => t !== "webhook.test").map((type) =>
    h("input", { type: "checkbox", value: type, id: uid("event"), checked: chosen.includes(type) }),
  );
  const sync = () => boxes.forEach((b) => (b.disabled = all.checked));
  all.addEventListener("change", sync);
  sync();
  const fieldset = h(
    "fieldset",
    {},
    h("legend", {}, "Events"),
    h("div", { class: "check" }, all, h("label", { for: all.id }, "All events, those added later included")),
    boxes.map((box) => h("div", { class: "check" }, box, h("label", { for: box.id }, h("code", {}, box.value)))),
  );
  const chosenEvents = () => (all.checked ? [ALL_EVENTS] : boxes.filter((b) => b.checked).map((b) => b.value));
  const reset = () => {
    all.checked = false;
    sync();
  };
  return { fieldset, chosenEvents, reset };
}

/**
 * Runs a form's request: a 400 (the service refused what the form holds) is shown in `slot` as the
 * form's problems, each naming its field, and the fields it names are marked invalid; anything
 * else as any failure.
 */
async function submitForm(
  form: HTMLFormElement,
  slot: HTMLElement,
  doing: string,
  fields: Record<string, HTMLElement>,
  fn: () => Promise<void>,
): Promise<boolean> {
  for (const el of Object.values(fields)) el.removeAttribute("aria-invalid");
  slot.replaceChildren();
  try {
    await fn();
    return true;
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 400) {
      return attempt(slot, doing, () => Promise.reject(err));
    }
    const problems = err.errors.length > 0 ? err.errors : [{ message: err.detail }];
    const id = uid("problems");
    replace(
      slot,
      h(
        "div",
        { class: "form-problem", role: "alert", id },
        h("p", {}, "The service did not accept this form:"),
        h(
          "ul",
          {},
          problems.map((p) => {
            const name = /^body\.(\w+)/.exec(p.location ?? "")?.[1];
            const label = name === undefined ? "" : `${name === "events" ? "Events" : name === "url" ? "URL" : name}: `;
            return h("li", {}, `${label}${p.message ?? ""}`, p.fix ? h("small", {}, ` ${p.fix}`) : null);
          }),
        ),
      ),
    );
    for (const p of problems) {
      const el = fields[/^body\.(\w+)/.exec(p.location ?? "")?.[1] ?? ""];
      if (el) {
        el.setAttribute("aria-invalid", "true");
        el.setAttribute("aria-errormessage", id);
      }
    }
    form.querySelector<HTMLElement>("[aria-invalid=true]")?.focus();
    return false;
  }
}

/** A modal of the page's own (a form, a table); `close()` removes it. */
function modal(title: string, ...children: Array<Node | null>): { dialog: HTMLDialogElement; close: () => void } {
  const titleId = uid("dialog");
  const dialog = h("dialog", { "aria-labelledby": titleId });
  const close = () => {
    dialog.close();
    dialog.remove();
  };
  dialog.addEventListener("cancel", close);
  replace(dialog, h("h2", { id: titleId }, title), ...children);
  document.body.append(dialog);
  dialog.showModal();
  return { dialog, close };
}

export async function webhooksPage(main: HTMLElement): Promise<void> {
  const slot = h("div");
  const endpointsTable = h("div");
  const deliveriesTable = h("div");
  const url = h("input", { name: "url", type: "url", required: true });
  const description = h("input", { name: "description", maxlength: 256 });
  const events = eventChoices();
  const createSlot = h("div");
  const form = h(
    "form",
    { "aria-label": "Add an endpoint" },
    field("URL", url, "Your receiver's http(s) address; it must answer 2xx"),
    field("Description", description),
    events.fieldset,
    h("button", { type: "submit", class: "primary" }, "Add endpoint"),
    createSlot,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const chosen = events.chosenEvents();
    if (chosen.length === 0) {
      return replace(createSlot, h("p", { class: "form-problem", role: "alert" }, "Choose at least one event, or All events."));
    }
    await submitForm(form, createSlot, "add a webhook endpoint", { url, events: events.fieldset, description }, async () => {
      const { data } = await call("webhooks.createEndpoint", {
        url: url.value.trim(),
        events: chosen,
        ...(description.value.trim() ? { description: description.value.trim() } : {}),
      });
      form.reset();
      events.reset();
      await showOnce(
        "The endpoint's signing secret",
        data.secret,
        `Endpoint ${data.endpointId}. Your receiver checks each request's signature with it (Standard Webhooks); it is not shown again.`,
      );
      await load();
    });
  });

  const editEndpoint = (e: WebhookEndpointItem) => {
    const editUrl = h("input", { name: "url", type: "url", required: true, value: e.url });
    const editDescription = h("input", { name: "description", maxlength: 256, value: e.description ?? "" });
    const choices = eventChoices(e.events);
    const problems = h("div");
    const editForm = h(
      "form",
      { "aria-label": `Change endpoint ${e.url}` },
      field("URL", editUrl),
      field("Description", editDescription),
      choices.fieldset,
      problems,
    );
    const { close } = modal(
      "Change the endpoint",
      editForm,
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", onclick: () => close() }, "Cancel"),
        h("button", { type: "button", class: "primary", onclick: () => editForm.requestSubmit() }, "Save"),
      ),
    );
    editForm.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const ok = await submitForm(
        editForm,
        problems,
        "change this endpoint",
        { url: editUrl, events: choices.fieldset, description: editDescription },
        async () => {
          const text = editDescription.value.trim();
          await call("webhooks.updateEndpoint", {
            endpointId: e.endpointId,
            url: editUrl.value.trim(),
            events: choices.chosenEvents(),
            description: text === "" ? null : text,
          });
        },
      );
      if (!ok) return;
      close();
      announce("Endpoint changed.");
      await load();
    });
  };

  const rotate = async (e: WebhookEndpointItem) => {
    const confirmed = await confirmDialog(
      "Rotate the signing secret?",
      `${e.url} gets a new secret. For 24 hours each message is signed with both, so the receiver keeps working until it has the new one.`,
      "Rotate secret",
    );
    if (!confirmed) return;
    await attempt(slot, "rotate this endpoint's secret", async () => {
      const { data } = await call("webhooks.rotateSecret", { endpointId: e.endpointId });
      await showOnce(
        "The endpoint's new signing secret",
        data.secret,
        `Give it to the receiver before ${when(data.previousSecretExpiresAt)}: the old secret signs as well until then. It is not shown again.`,
      );
      await load();
    });
  };

  const button = (label: string, aria: string, onclick: () => unknown, cls?: string) =>
    h("button", { type: "button", "aria-label": aria, onclick, ...(cls ? { class: cls } : {}) }, label);

  const drawEndpoints = (endpoints: WebhookEndpointItem[]) =>
    replace(
      endpointsTable,
      endpoints.length === 0
        ? h("p", {}, "No endpoint yet.")
        : h(
            "table",
            {},
            h("caption", {}, "Endpoints"),
            thead("URL", "Events", "State", "Actions"),
            h(
              "tbody",
              {},
              endpoints.map((e) =>
                h(
                  "tr",
                  { "data-endpoint-id": e.endpointId },
                  h("td", {}, h("code", {}, e.url), h("br"), h("small", { class: "muted" }, e.description ?? e.endpointId)),
                  h(
                    "td",
                    {},
                    e.events.map((t) => h("code", { class: "tag" }, t === ALL_EVENTS ? "all events" : t)),
                  ),
                  h(
                    "td",
                    {},
                    h("small", { class: "muted" }, `created ${when(e.createdAt)}`),
                    e.disabledAt === undefined
                      ? null
                      : h(
                          "div",
                          {},
                          h("span", { class: "badge disabled" }, "disabled"),
                          h("small", { class: "muted" }, ` ${when(e.disabledAt)}`),
                        ),
                    e.pausedAt === undefined
                      ? null
                      : h(
                          "div",
                          {},
                          h("span", { class: "badge paused" }, "paused"),
                          h("small", { class: "muted" }, ` ${when(e.pausedAt)}`),
                        ),
                    e.previousSecretExpiresAt === undefined
                      ? null
                      : h("div", {}, h("small", { class: "muted" }, `old secret signs until ${when(e.previousSecretExpiresAt)}`)),
                  ),
                  h(
                    "td",
                    { class: "row-actions" },
                    e.disabledAt === undefined
                      ? null
                      : button("Enable", `Enable endpoint ${e.url}`, () =>
                          attempt(slot, "enable this endpoint", async () => {
                            await call("webhooks.enableEndpoint", { endpointId: e.endpointId });
                            announce("Endpoint enabled: it receives events again.");
                            await load();
                          }),
                        ),
                    button("Edit", `Edit endpoint ${e.url}`, () => editEndpoint(e)),
                    e.pausedAt === undefined
                      ? button("Pause", `Pause endpoint ${e.url}`, () =>
                          attempt(slot, "pause this endpoint", async () => {
                            await call("webhooks.pauseEndpoint", { endpointId: e.endpointId });
                            announce("Endpoint paused: its events are kept and sent once it is resumed.");
                            await load();
                          }),
                        )
                      : button("Resume", `Resume endpoint ${e.url}`, () =>
                          attempt(slot, "resume this endpoint", async () => {
                            await call("webhooks.resumeEndpoint", { endpointId: e.endpointId });
                            announce("Endpoint resumed: the events kept meanwhile are being sent.");
                            await load();
                          }),
                        ),
                    button("Send test event", `Send test event to ${e.url}`, () =>
                      attempt(slot, "send a test event", async () => {
                        const { data } = await call("webhooks.sendTestEvent", { endpointId: e.endpointId });
                        announce(`Test event ${data.messageId} sent to ${e.url}.`);
                        await load();
                      }),
                    ),
                    button("Rotate secret", `Rotate secret of ${e.url}`, () => rotate(e)),
                    button(
                      "Delete",
                      `Delete endpoint ${e.url}`,
                      async () => {
                        if (!(await confirmDialog("Delete this endpoint?", `${e.url} receives no event from now on.`, "Delete endpoint")))
                          return;
                        await attempt(slot, "delete this endpoint", async () => {
                          await call("webhooks.deleteEndpoint", { endpointId: e.endpointId });
                          announce("Endpoint deleted.");
                          await load();
                        });
                      },
                      "danger",
                    ),
                  ),
                ),
              ),
            ),
          ),
    );

  const showAttempts = async (d: WebhookDeliveryItem) => {
    await attempt(slot, "read this message's attempts", async () => {
      const { data } = await call("webhooks.getDelivery", { messageId: d.messageId });
      const { close } = modal(
        `Attempts of ${d.type}`,
        h("p", {}, h("code", {}, d.messageId), ` (${data.status})`),
        data.attemptHistory.length === 0
          ? h("p", {}, "Not tried yet.")
          : h(
              "table",
              { "data-testid": "attempts" },
              thead("Time", "Answer", "Time taken"),
              h(
                "tbody",
                {},
                data.attemptHistory.map((a) =>
                  h(
                    "tr",
                    {},
                    h("td", {}, when(a.time)),
                    h(
                      "td",
                      {},
                      a.status === 0 ? "no answer" : String(a.status),
                      a.error ? h("small", { class: "muted" }, ` ${a.error}`) : null,
                    ),
                    h("td", {}, `${a.durationMs} ms`),
                  ),
                ),
              ),
            ),
        h("div", { class: "actions" }, h("button", { type: "button", class: "primary", onclick: () => close() }, "Close")),
      );
    });
  };

  // Deliveries: a status filter, a page at a time (newest first), "Load more" following the cursor.
  const status = h(
    "select",
    { name: "status" },
    h("option", { value: "" }, "any"),
    ["pending", "delivered", "failed"].map((s) => h("option", { value: s }, s)),
  );
  status.addEventListener("change", () => void loadDeliveries());
  let shown: WebhookDeliveryItem[] = [];
  let urls = new Map<string, string>();
  let cursor: string | undefined;
  const more = h("button", { type: "button", hidden: true, onclick: () => void loadDeliveries(cursor) }, "Load more");

  const drawDeliveries = () =>
    replace(
      deliveriesTable,
      shown.length === 0
        ? h("p", {}, status.value ? `No ${status.value} delivery.` : "No delivery yet.")
        : h(
            "table",
            {},
            h("caption", {}, `Deliveries (${shown.length}${cursor ? ", more to load" : ""})`),
            thead("Event", "Endpoint", "Status", "Attempts", "Last answer", "Created", "Actions"),
            h(
              "tbody",
              {},
              shown.map((d) =>
                h(
                  "tr",
                  { "data-message-id": d.messageId },
                  h("td", {}, h("code", {}, d.type), h("br"), h("small", { class: "muted" }, d.messageId)),
                  h("td", {}, h("code", {}, urls.get(d.endpointId) ?? d.endpointId)),
                  h(
                    "td",
                    {},
                    h("span", { class: `badge delivery-${d.status}` }, d.status),
                    d.status === "pending" && d.nextAttemptAt ? h("small", { class: "muted" }, ` next ${when(d.nextAttemptAt)}`) : null,
                  ),
                  h("td", {}, String(d.attempts)),
                  h(
                    "td",
                    {},
                    d.lastStatus === undefined ? "" : d.lastStatus === 0 ? "no answer" : String(d.lastStatus),
                    d.lastError ? h("small", { class: "muted" }, ` ${d.lastError}`) : null,
                    d.lastLatencyMs === undefined ? null : h("small", { class: "muted" }, ` (${d.lastLatencyMs} ms)`),
                  ),
                  h("td", {}, when(d.createdAt)),
                  h(
                    "td",
                    { class: "row-actions" },
                    button("Attempts", `Attempts of message ${d.messageId}`, () => showAttempts(d)),
                    button("Resend", `Resend ${d.type} message ${d.messageId}`, () =>
                      attempt(slot, "send this message again", async () => {
                        await call("webhooks.resendDelivery", { messageId: d.messageId });
                        announce(`Message ${d.messageId} sent again.`);
                        await load();
                      }),
                    ),
                  ),
                ),
              ),
            ),
          ),
    );

  const loadDeliveries = (from?: string) =>
    attempt(slot, "list the deliveries", async () => {
      const wanted = status.value as "" | "pending" | "delivered" | "failed";
      const { data, pagination } = await call("webhooks.listDeliveries", {
        limit: 50,
        ...(wanted ? { status: wanted } : {}),
        ...(from ? { cursor: from } : {}),
      });
      shown = from ? [...shown, ...data] : data;
      cursor = pagination?.hasMore ? pagination.cursor : undefined;
      more.hidden = cursor === undefined;
      drawDeliveries();
    });

  // Resend every failed message of an endpoint since a time.
  const resendEndpoint = h("select", { name: "endpoint", required: true });
  const since = h("input", { name: "since", type: "datetime-local", required: true });
  const resendSlot = h("div");
  const resendForm = h(
    "form",
    { "aria-label": "Resend failed messages" },
    h("div", { class: "grid" }, field("Endpoint", resendEndpoint), field("Failed since", since, "Messages created at or after this time")),
    h("button", { type: "submit" }, "Resend failed"),
    resendSlot,
  );
  resendForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    await submitForm(resendForm, resendSlot, "send the failed messages again", { endpointId: resendEndpoint, since }, async () => {
      const { data } = await call("webhooks.resendFailed", { endpointId: resendEndpoint.value, since: new Date(since.value).getTime() });
      announce(
        data.resent === 0
          ? "No failed message since then."
          : `${data.resent} failed message${data.resent === 1 ? "" : "s"} sent again${data.hasMore ? "; more remain: resend again" : ""}.`,
      );
      await load();
    });
  });

  const load = () =>
    attempt(slot, "list the webhook endpoints", async () => {
      const { data: endpoints } = await call("webhooks.listEndpoints", {});
      urls = new Map(endpoints.map((e) => [e.endpointId, e.url]));
      drawEndpoints(endpoints);
      const chosen = resendEndpoint.value;
      replace(
        resendEndpoint,
        endpoints.map((e) => h("option", { value: e.endpointId, selected: e.endpointId === chosen }, e.url)),
      );
      await loadDeliveries();
    });

  replace(
    main,
    h("h1", {}, "Webhooks"),
    h(
      "p",
      {},
      "Endpoints receive the workspace's events (keys, root keys, APIs, permissions, roles, identities, rate-limit overrides), signed per Standard Webhooks, at least once.",
    ),
    h("details", { class: "card" }, h("summary", {}, "Add an endpoint"), form),
    slot,
    endpointsTable,
    h("h2", {}, "Deliveries"),
    h("div", { class: "toolbar" }, field("Status", status), h("button", { type: "button", onclick: () => void load() }, "Refresh")),
    deliveriesTable,
    more,
    h("details", { class: "card" }, h("summary", {}, "Resend failed messages since a time"), resendForm),
  );
  await load();
}
