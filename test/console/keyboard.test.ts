// The console with the keyboard alone (two journeys across its pages, the skip link, dialogs) and
// its colour schemes (prefers-color-scheme, light and dark), in Chromium.
import { describe, expect, it } from "vitest";
import { RUN_BROWSER } from "./browser";
import { rand, tabTo, useConsole } from "./harness";

describe.runIf(RUN_BROWSER)("console by keyboard and colour scheme in Chromium", () => {
  const c = useConsole();

  it("follows prefers-color-scheme: dark and light", async () => {
    const { page, problems } = await c.open();
    const background = () => page.evaluate<string>("getComputedStyle(document.documentElement).backgroundColor");
    await page.emulateMedia({ colorScheme: "light" });
    const light = await background();
    await page.emulateMedia({ colorScheme: "dark" });
    const dark = await background();
    expect(light).toBe("rgb(246, 247, 249)");
    expect(dark).toBe("rgb(15, 19, 32)");
    await page.emulateMedia({ colorScheme: "light" });
    expect(problems).toEqual([]);
    await page.close();
  });

  it("a journey with the keyboard alone: sign in, create an identity, open a key's page and disable the key, set a rate-limit override", async () => {
    // Its first letter is the only one of its kind among the APIs (the other journey makes `kb-api-…`):
    // a select jumps to an option by the first key typed.
    const apiName = `journey-${rand()}`;
    const apiId = ((await c.call("apis.createApi", { name: apiName })).body.data as { apiId: string }).apiId;
    const key = (await c.call("keys.createKey", { apiId, name: "by-keyboard" })).body.data as { keyId: string };
    const { page, problems } = await c.open();
    // The sign-in field has the focus: type and press Enter.
    await page.keyboard.type(c.service.rootKey);
    await page.keyboard.press("Enter");
    await page.getByRole("navigation", { name: "Sections" }).waitFor();

    await tabTo(page, "Identities");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Identities" }).waitFor();
    await tabTo(page, "Create an identity");
    await page.keyboard.press("Enter");
    await tabTo(page, "External id");
    const ext = `kb_${rand()}`;
    await page.keyboard.type(ext);
    await tabTo(page, "Add a rate limit");
    await page.keyboard.press("Enter");
    await tabTo(page, "Rate limit name", true);
    await page.keyboard.type("requests");
    await page.keyboard.press("Tab");
    await page.keyboard.type("60");
    await page.keyboard.press("Tab");
    await page.keyboard.type("1");
    // The window's unit: a select takes its option by typing the start of its text.
    await page.keyboard.press("Tab");
    await page.keyboard.type("hours");
    await tabTo(page, "Create identity");
    await page.keyboard.press("Enter");
    await page.locator("tr", { hasText: ext }).waitFor();
    expect((await c.call("identities.getIdentity", { identity: ext })).body.data).toMatchObject({
      ratelimits: [{ name: "requests", limit: 60, duration: 3_600_000 }],
    });

    // The keys of the API, by the API chooser; then the key's own page from its row.
    await tabTo(page, "Keys");
    await page.keyboard.press("Enter");
    await tabTo(page, "API");
    // A select takes its option by typing the start of its text.
    await page.keyboard.type(apiName);
    await page.getByRole("link", { name: "Open key by-keyboard" }).waitFor();
    expect(page.url()).toContain(`#/keys/${apiId}`);
    await tabTo(page, "Open key by-keyboard");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Key by-keyboard" }).waitFor();
    await tabTo(page, "Disable key");
    await page.keyboard.press("Enter");
    // The dialog holds the focus; Tab reaches its action.
    await tabTo(page, "Disable key");
    await page.keyboard.press("Enter");
    await expect.poll(() => page.getByTestId("key-facts").innerText()).toContain("disabled");
    expect(((await c.call("keys.getKey", { keyId: key.keyId })).body.data as { enabled: boolean }).enabled).toBe(false);

    // Rate limits: a namespace opened, an override set.
    const ns = `kb_ns_${rand()}`;
    await c.call("ratelimit.limit", { namespace: ns, identifier: "x", limit: 1, duration: 1000, cost: 0 });
    await tabTo(page, "Rate limits");
    await page.keyboard.press("Enter");
    await tabTo(page, "Namespace");
    await page.keyboard.type(ns);
    await page.keyboard.press("Enter");
    await page.getByText("No overrides in this namespace.").waitFor();
    await tabTo(page, "Identifier or pattern");
    await page.keyboard.type("vip_*");
    await page.keyboard.press("Tab");
    await page.keyboard.type("1000");
    await page.keyboard.press("Tab");
    await page.keyboard.type("2");
    await page.keyboard.press("Tab");
    await page.keyboard.type("hours");
    await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Enter");
    await page.locator("tr", { hasText: "vip_*" }).waitFor();
    expect((await c.call("ratelimit.getOverride", { namespace: ns, identifier: "vip_*" })).body.data).toMatchObject({
      limit: 1000,
      duration: 7_200_000,
    });

    // Skip link: the first Tab on a page offers it; it moves the focus into the page.
    await page.goto(`${c.service.baseUrl}/#/identities`);
    await page.getByRole("heading", { name: "Identities" }).waitFor();
    await page.evaluate("document.activeElement && document.activeElement.blur()");
    await tabTo(page, "Skip to the page");
    await page.keyboard.press("Enter");
    expect(await page.evaluate<string>("document.activeElement.id")).toBe("main");
    expect(problems).toEqual([]);
    await page.close();
  });

  it("a second keyboard journey: create an API, a permission and a root key (a checkbox by Space, the shown-once dialog)", async () => {
    const { page, problems } = await c.open();
    await page.keyboard.type(c.service.rootKey);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "APIs" }).waitFor();
    const api = `kb-api-${rand()}`;
    await tabTo(page, "New API name");
    await page.keyboard.type(api);
    await page.keyboard.press("Enter");
    await page.getByRole("link", { name: api, exact: true }).waitFor();

    await tabTo(page, "Permissions and roles");
    await page.keyboard.press("Enter");
    const slug = `kb.${rand()}`;
    await tabTo(page, "Permission slug");
    await page.keyboard.type(slug);
    await page.keyboard.press("Enter");
    await page.getByRole("cell", { name: slug, exact: true }).waitFor();

    await tabTo(page, "Root keys");
    await page.keyboard.press("Enter");
    await tabTo(page, "Create a root key");
    await page.keyboard.press("Enter");
    await tabTo(page, "Name");
    await page.keyboard.type("made-by-keyboard");
    await tabTo(page, "api.*.read_api");
    await page.keyboard.press("Space");
    await tabTo(page, "Create root key");
    await page.keyboard.press("Enter");
    const dialog = page.getByRole("dialog", { name: "Your new root key" });
    await dialog.waitFor();
    await tabTo(page, "I have stored it");
    await page.keyboard.press("Enter");
    await expect.poll(() => dialog.count()).toBe(0);
    const row = page.locator("tr", { hasText: "made-by-keyboard" });
    await row.waitFor();
    expect(await row.innerText()).toMatch(/\b1 permission\b/);
    expect(problems).toEqual([]);
    await page.close();
  });
});
