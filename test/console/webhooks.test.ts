// The console's webhooks page in Chromium, for what the journey against `keyguard serve`
// (audit-journey.test.ts) cannot reach in a test's time: an endpoint disabled after failing for a
// whole retry window (set here in the store, as the delivery would leave it) shown as disabled,
// enabled again with its button.
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
    const endpoints = await readEndpoints(store.direct, c.service.workspaceId);
    endpoints[0]!.disabledAt = Date.now();
    await writeEndpoints(store.direct, c.service.workspaceId, endpoints);

    const { page, problems } = await c.open();
    await c.signIn(page);
    await page.goto(`${c.service.baseUrl}/#/webhooks`);
    const row = page.locator("tr[data-endpoint-id]");
    await expect.poll(() => row.innerText()).toContain("disabled");
    await c.expectAccessible(page, "webhooks page with a disabled endpoint");
    await page.getByRole("button", { name: `Enable endpoint ${url}` }).click();
    await expect.poll(() => row.innerText()).not.toContain("disabled");
    expect(await page.getByRole("button", { name: `Enable endpoint ${url}` }).count()).toBe(0);
    const listed = (await c.call("webhooks.listEndpoints", {})).body.data as Array<{ disabledAt?: number }>;
    expect(listed[0]!.disabledAt).toBeUndefined();
    expect(problems).toEqual([]);
    await page.close();
  });
});
