// The console's Portals page in Chromium (#/portals): create a portal through the form, see it
// listed, change it, open a preview session in a new tab (the hosted portal, marked as a preview),
// delete it; axe in both schemes.
import { describe, expect, it } from "vitest";
import { RUN_BROWSER } from "./browser";
import { rand, useConsole } from "./harness";

describe.runIf(RUN_BROWSER)("console portals in Chromium", () => {
  const c = useConsole();

  it("creates, changes, previews and deletes a portal", async () => {
    const apiName = `portal-api-${rand()}`;
    const apiId = ((await c.call("apis.createApi", { name: apiName })).body.data as { apiId: string }).apiId;
    const { page, problems } = await c.open();
    await c.signIn(page);
    await page.getByRole("link", { name: "Portals" }).click();
    await page.getByRole("heading", { name: "Portals" }).waitFor();
    await page.getByText("No portals yet.").waitFor();

    await page.getByRole("button", { name: "New portal" }).click();
    const form = page.getByRole("form", { name: "Create a portal" });
    await form.getByLabel("Portal name").fill("Acme customers");
    await form.getByLabel(`${apiName} (${apiId})`).check();
    await form.getByLabel("Accent colour").fill("#c2410c");
    await form.getByLabel("Docs (Markdown)").fill("# Welcome\n\nUse your key.");
    await form.getByLabel("Return origins").fill("https://app.example.com");
    await form.getByLabel("Reroll grace (hours)").fill("2");
    await c.expectAccessible(page, "the portal form");
    await form.getByRole("button", { name: "Create portal" }).click();
    const row = page.locator("main table tbody tr", { hasText: "Acme customers" });
    await row.waitFor();
    const portalId = (await row.getAttribute("data-portal-id"))!;
    const stored = (await c.call("portal.getPortal", { portalId })).body.data;
    expect(stored).toMatchObject({
      name: "Acme customers",
      apiIds: [apiId],
      accentColor: "#c2410c",
      docs: "# Welcome\n\nUse your key.",
      returnOrigins: ["https://app.example.com"],
      rerollGraceMs: 2 * 3_600_000,
      enabled: true,
      actions: { create: true, disable: false, delete: false },
    });
    await c.expectAccessible(page, "the portals page");
    await c.shot(page, "portals");

    // Change it: a new name, deleting allowed, the accent removed.
    await page.getByRole("button", { name: "Edit Acme customers" }).click();
    const edit = page.getByRole("form", { name: "Edit portal Acme customers" });
    await edit.getByLabel("Portal name").fill("Acme developers");
    await edit.getByLabel("End users may delete their keys").check();
    await edit.getByLabel("Accent colour").fill("");
    await edit.getByRole("button", { name: "Save portal" }).click();
    await page.locator("main table tbody tr", { hasText: "Acme developers" }).waitFor();
    const changed = (await c.call("portal.getPortal", { portalId })).body.data as Record<string, unknown>;
    expect(changed).toMatchObject({ name: "Acme developers", actions: { create: true, disable: false, delete: true } });
    expect(changed.accentColor).toBeUndefined();

    // Preview: a preview session opens the hosted portal in a new tab.
    const [tab] = await Promise.all([
      c.browser.context.waitForEvent("page"),
      page.getByRole("button", { name: "Preview Acme developers" }).click(),
    ]);
    await tab.getByText(/^Preview: this is how your customers see the portal/).waitFor();
    expect(new URL(tab.url()).pathname).toBe("/portal/");
    expect(tab.url()).not.toContain("code=");
    expect(await tab.locator("header .brand").innerText()).toBe("Acme developers");
    await tab.getByRole("heading", { name: "Your API keys" }).waitFor();
    await tab.close();

    // Delete it.
    await page.getByRole("button", { name: "Delete Acme developers" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete portal" }).click();
    await page.getByText("No portals yet.").waitFor();
    expect((await c.call("portal.getPortal", { portalId })).status).toBe(404);
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);
});
