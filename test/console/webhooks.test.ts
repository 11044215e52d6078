// The console's webhooks page in Chromium, for what the journey against `keyguard serve`
// (audit-journey.test.ts) cannot reach in a test's time: an endpoint disabled after failing for a
// whole retry window (set here in the store, as the delivery would leave it) shown as disabled,
// enabled again with its button; an endpoint for all events, a refused form shown at the form,
// changing, pausing and resuming an endpoint, a test event and its attempts, a rotated secret, the
// status filter and resending the failed messages since a time.
import { describe, expect, it } from "vitest";
import { memoryStorage } from "keyguard/server";
import { readEndpoints, writeEndpoints } from "../../src/server/webhooks/endpoints";
import { RUN_BROWSER } from "./browser";
import { useConsole } from "./harness";

describe.runIf(RUN_BROWSER)("console webhooks page in Chromium", () => {
  const store = memoryStorage();
  const c = useConsole(() => ({ storage: store, webhooksAllowPrivate: true }));

  it("shows an endpoint disabled for failing, and enables it again", async () => {
    const url = "http://127.0.0.1:9/hooks";
    const created = await c.call("webhooks.createEndpoint", { url, events: ["key.created"] });
    expect(created.status).toBe(200);
    const endpointId = (created.body.data as { endpointId: string }).endpointId;
    // Other tests of this file add endpoints of their own: this one is found by its id.
    const endpoints = await readEndpoints(store.direct, c.service.workspaceId);
    endpoints.find((e) => e.id === endpointId)!.disabledAt = Date.now();
    await writeEndpoints(store.direct, c.service.workspaceId, endpoints);

    const { page, problems } = await c.open();
    await c.signIn(page);
    await page.goto(`${c.service.baseUrl}/#/webhooks`);
    const row = page.locator(`tr[data-endpoint-id="${endpointId}"]`);
    await expect.poll(() => row.innerText()).toContain("disabled");
    await c.expectAccessible(page, "webhooks page with a disabled endpoint");
    await page.getByRole("button", { name: `Enable endpoint ${url}` }).click();
    await expect.poll(() => row.innerText()).not.toContain("disabled");
    expect(await page.getByRole("button", { name: `Enable endpoint ${url}` }).count()).toBe(0);
    const listed = (await c.call("webhooks.listEndpoints", {})).body.data as Array<{ endpointId: string; disabledAt?: number }>;
    expect(listed.find((e) => e.endpointId === endpointId)!.disabledAt).toBeUndefined();
    expect(problems).toEqual([]);
    await page.close();
  });

  it("adds an endpoint for all events, shows a refusal at the form, changes, pauses and tests it", async () => {
    const { page, problems } = await c.open();
    await c.signIn(page);
    await page.goto(`${c.service.baseUrl}/#/webhooks`);
    await page.getByRole("heading", { name: "Webhooks" }).waitFor();
    await page.getByText("Add an endpoint").click();
    const add = page.getByRole("form", { name: "Add an endpoint" });

    // A URL the browser takes and the service refuses: its reason at the form, the field marked.
    await add.getByLabel("URL").fill("ftp://hooks.example.com/x");
    await add.getByLabel("All events, those added later included").check();
    expect(await add.getByLabel("key.created", { exact: true }).isDisabled()).toBe(true);
    await add.getByRole("button", { name: "Add endpoint" }).click();
    const refusal = add.locator(".form-problem[role=alert]");
    await expect.poll(() => refusal.innerText()).toContain("URL:");
    expect(await add.locator(".error").count()).toBe(0);
    expect(await add.getByLabel("URL").getAttribute("aria-invalid")).toBe("true");
    await c.expectAccessible(page, "webhooks page with a refused form");

    const url = "http://127.0.0.1:9/all";
    await add.getByLabel("URL").fill(url);
    await add.getByRole("button", { name: "Add endpoint" }).click();
    await page.getByRole("dialog", { name: "The endpoint's signing secret" }).getByRole("button", { name: "I have stored it" }).click();
    const row = page.locator("tr[data-endpoint-id]", { hasText: url });
    await expect.poll(() => row.innerText()).toContain("all events");
    const listed = () =>
      c.call("webhooks.listEndpoints", {}).then((r) => (r.body.data as Array<Record<string, unknown>>).find((e) => e.url === url)!);
    expect((await listed()).events).toEqual(["*"]);

    // Changed in its dialog: one event type instead of all.
    await page.getByRole("button", { name: `Edit endpoint ${url}` }).click();
    const edit = page.getByRole("dialog", { name: "Change the endpoint" });
    await edit.getByLabel("All events, those added later included").uncheck();
    await edit.getByLabel("key.deleted", { exact: true }).check();
    await c.expectAccessible(page, "webhooks page, changing an endpoint");
    await edit.getByRole("button", { name: "Save" }).click();
    await expect.poll(async () => (await listed()).events).toEqual(["key.deleted"]);
    await expect.poll(() => row.innerText()).toContain("key.deleted");

    // Paused, then resumed.
    await page.getByRole("button", { name: `Pause endpoint ${url}` }).click();
    await expect.poll(() => row.innerText()).toContain("paused");
    expect((await listed()).pausedAt).toEqual(expect.any(Number));
    await page.getByRole("button", { name: `Resume endpoint ${url}` }).click();
    await expect.poll(() => row.innerText()).not.toContain("paused");

    // A test event, tried against a closed port: its attempts in a dialog.
    await page.getByRole("button", { name: `Send test event to ${url}` }).click();
    const testRow = page.locator("tr[data-message-id]", { hasText: "webhook.test" });
    await expect
      .poll(
        async () => {
          await page.getByRole("button", { name: "Refresh" }).click();
          return testRow.locator("td").nth(3).innerText();
        },
        { timeout: 15_000, interval: 300 },
      )
      .not.toBe("0");
    const messageId = await testRow.getAttribute("data-message-id");
    await page.getByRole("button", { name: `Attempts of message ${messageId}` }).click();
    const attempts = page.getByRole("dialog", { name: "Attempts of webhook.test" });
    await expect.poll(() => attempts.getByTestId("attempts").innerText()).toContain("no answer");
    await c.expectAccessible(page, "webhooks page, a message's attempts");
    await attempts.getByRole("button", { name: "Close" }).click();

    // The status filter.
    await page.getByLabel("Status").selectOption("delivered");
    await page.getByText("No delivered delivery.").waitFor();
    await page.getByLabel("Status").selectOption("");

    // A rotated secret, shown once.
    await page.getByRole("button", { name: `Rotate secret of ${url}` }).click();
    await page.getByRole("dialog", { name: "Rotate the signing secret?" }).getByRole("button", { name: "Rotate secret" }).click();
    const rotated = page.getByRole("dialog", { name: "The endpoint's new signing secret" });
    expect((await rotated.getByTestId("new-secret").innerText()).trim()).toMatch(/^whsec_/);
    await rotated.getByRole("button", { name: "I have stored it" }).click();
    await expect.poll(() => row.innerText()).toContain("old secret signs until");

    // Resend failed since a time: none failed yet.
    await page.getByText("Resend failed messages since a time").click();
    const resend = page.getByRole("form", { name: "Resend failed messages" });
    await resend.getByLabel("Endpoint").selectOption({ label: url });
    await resend.getByLabel("Failed since").fill("2020-01-01T00:00");
    await resend.getByRole("button", { name: "Resend failed" }).click();
    await expect.poll(() => page.locator("#status").innerText()).toBe("No failed message since then.");
    await c.expectAccessible(page, "webhooks page with its forms open");
    expect(problems).toEqual([]);
    await page.close();
  });
});
