// Webhooks (keyguard's webhooks.* operations): the workspace's endpoints (create one: its signing
// secret is shown once; enable a disabled one again; delete one) and the latest deliveries with
// their status, attempts, answer and time taken, each of which can be sent again.
import { WEBHOOK_EVENT_TYPES } from "../../protocol/contract/webhook-events";
import type { WebhookDeliveryItem, WebhookEndpointItem } from "../../protocol/types";
import { call } from "../api";
import { field, h, replace, thead, uid, when } from "../dom";
import { announce, attempt, confirmDialog, showOnce } from "../ui";

export async function webhooksPage(main: HTMLElement): Promise<void> {
  const slot = h("div");
  const endpointsTable = h("div");
  const deliveriesTable = h("div");
  const url = h("input", { name: "url", type: "url", required: true });
  const description = h("input", { name: "description", maxlength: 256 });
  const boxes = WEBHOOK_EVENT_TYPES.map((type) => h("input", { type: "checkbox", value: type, id: uid("event") }));
  const createSlot = h("div");
  const form = h(
    "form",
    { "aria-label": "Add an endpoint" },
    field("URL", url, "Your receiver's http(s) address; it must answer 2xx"),
    field("Description", description),
    h(
      "fieldset",
      {},
      h("legend", {}, "Events"),
      boxes.map((box) => h("div", { class: "check" }, box, h("label", { for: box.id }, h("code", {}, box.value)))),
    ),
    h("button", { type: "submit", class: "primary" }, "Add endpoint"),
    createSlot,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const events = boxes.filter((b) => b.checked).map((b) => b.value);
    if (events.length === 0) {
      return replace(createSlot, h("div", { class: "error", role: "alert" }, h("p", { class: "detail" }, "Choose at least one event.")));
    }
    await attempt(createSlot, "add a webhook endpoint", async () => {
      const { data } = await call("webhooks.createEndpoint", {
        url: url.value.trim(),
        events,
        ...(description.value.trim() ? { description: description.value.trim() } : {}),
      });
      form.reset();
      await showOnce(
        "The endpoint's signing secret",
        data.secret,
        `Endpoint ${data.endpointId}. Your receiver checks each request's signature with it (Standard Webhooks); it is not shown again.`,
      );
      await load();
    });
  });

  const drawEndpoints = (endpoints: WebhookEndpointItem[]) =>
    replace(
      endpointsTable,
      endpoints.length === 0
        ? h("p", {}, "No endpoint yet.")
        : h(
            "table",
            {},
            h("caption", {}, "Endpoints"),
            thead("URL", "Events", "Created", "Actions"),
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
                    e.events.map((t) => h("code", { class: "tag" }, t)),
                  ),
                  h(
                    "td",
                    {},
                    when(e.createdAt),
                    e.disabledAt === undefined
                      ? null
                      : h(
                          "div",
                          {},
                          h("span", { class: "badge disabled" }, "disabled"),
                          h("small", { class: "muted" }, ` ${when(e.disabledAt)}`),
                        ),
                  ),
                  h(
                    "td",
                    {},
                    e.disabledAt === undefined
                      ? null
                      : h(
                          "button",
                          {
                            type: "button",
                            "aria-label": `Enable endpoint ${e.url}`,
                            onclick: () =>
                              attempt(slot, "enable this endpoint", async () => {
                                await call("webhooks.enableEndpoint", { endpointId: e.endpointId });
                                announce("Endpoint enabled: it receives events again.");
                                await load();
                              }),
                          },
                          "Enable",
                        ),
                    h(
                      "button",
                      {
                        type: "button",
                        class: "danger",
                        "aria-label": `Delete endpoint ${e.url}`,
                        onclick: async () => {
                          if (!(await confirmDialog("Delete this endpoint?", `${e.url} receives no event from now on.`, "Delete endpoint")))
                            return;
                          await attempt(slot, "delete this endpoint", async () => {
                            await call("webhooks.deleteEndpoint", { endpointId: e.endpointId });
                            announce("Endpoint deleted.");
                            await load();
                          });
                        },
                      },
                      "Delete",
                    ),
                  ),
                ),
              ),
            ),
          ),
    );

  const drawDeliveries = (deliveries: WebhookDeliveryItem[], urls: Map<string, string>) =>
    replace(
      deliveriesTable,
      deliveries.length === 0
        ? h("p", {}, "No delivery yet.")
        : h(
            "table",
            {},
            h("caption", {}, `Latest deliveries (${deliveries.length})`),
            thead("Event", "Endpoint", "Status", "Attempts", "Last answer", "Time taken", "Created", "Actions"),
            h(
              "tbody",
              {},
              deliveries.map((d) =>
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
                  ),
                  h("td", {}, d.lastLatencyMs === undefined ? "" : `${d.lastLatencyMs} ms`),
                  h("td", {}, when(d.createdAt)),
                  h(
                    "td",
                    {},
                    h(
                      "button",
                      {
                        type: "button",
                        "aria-label": `Resend ${d.type} message ${d.messageId}`,
                        onclick: () =>
                          attempt(slot, "send this message again", async () => {
                            await call("webhooks.resendDelivery", { messageId: d.messageId });
                            announce(`Message ${d.messageId} sent again.`);
                            await load();
                          }),
                      },
                      "Resend",
                    ),
                  ),
                ),
              ),
            ),
          ),
    );

  const load = () =>
    attempt(slot, "list the webhook endpoints", async () => {
      const [{ data: endpoints }, { data: deliveries }] = await Promise.all([
        call("webhooks.listEndpoints", {}),
        call("webhooks.listDeliveries", { limit: 50 }),
      ]);
      drawEndpoints(endpoints);
      drawDeliveries(deliveries, new Map(endpoints.map((e) => [e.endpointId, e.url])));
    });

  replace(
    main,
    h("h1", {}, "Webhooks"),
    h(
      "p",
      {},
      "Endpoints receive the workspace's events (keys created, changed, rerolled, deleted, leaked; root keys created and deleted), signed per Standard Webhooks, at least once.",
    ),
    h("details", { class: "card" }, h("summary", {}, "Add an endpoint"), form),
    slot,
    endpointsTable,
    h("h2", {}, "Deliveries"),
    h("button", { type: "button", onclick: () => void load() }, "Refresh"),
    deliveriesTable,
  );
  await load();
}
