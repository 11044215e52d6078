// The keys table sorted by the service (apis.listKeys' `sort`): a click or the keyboard
// on a column's head orders every key of the API, not the page loaded; "Load more" goes on in that
// order; the order holds with the search; aria-sort says which column and way; axe in both schemes.
import { describe, expect, it } from "vitest";
import { RUN_BROWSER } from "./browser";
import { tabTo, useConsole } from "./harness";

describe.runIf(RUN_BROWSER)("console keys table sorted by the service", () => {
  const c = useConsole();

  it("orders every key of the API by the column chosen, by click or keyboard, with the search too", async () => {
    const apiName = `sorted-${Date.now()}`;
    const apiId = ((await c.call("apis.createApi", { name: apiName })).body.data as { apiId: string }).apiId;
    // 30 keys: more than the first page (25). The last created sorts first by name, so only the
    // service's sort can show it first.
    for (let i = 0; i < 29; i++) await c.call("keys.createKey", { apiId, name: `m-${String(i).padStart(2, "0")}` });
    await c.call("keys.createKey", { apiId, name: "a-last-made" });
    const { page, problems } = await c.open();
    await c.signIn(page);
    await page.goto(`${c.service.baseUrl}/#/keys/${apiId}`);
    const caption = page.locator("table.keys caption");
    const names = () => page.locator("table.keys tbody td.name").allInnerTexts();
    await expect.poll(() => caption.innerText()).toBe("Keys (25 loaded; more on the service)");
    expect(await names()).not.toContain("a-last-made");
    expect(await page.locator('th[aria-sort="ascending"]').innerText()).toContain("Created");

    await page.getByRole("button", { name: "Name", exact: true }).click();
    await expect.poll(() => page.locator('th[aria-sort="ascending"]').innerText()).toContain("Name");
    await expect.poll(async () => (await names())[0]).toBe("a-last-made");
    expect(await page.locator("th[aria-sort]").count()).toBe(1);
    // The focus stays on the column's button: Enter sorts the other way.
    expect(await page.evaluate<string | undefined>("document.activeElement?.textContent")).toContain("Name");
    await page.keyboard.press("Enter");
    await expect.poll(() => page.locator('th[aria-sort="descending"]').innerText()).toContain("Name");
    await expect.poll(async () => (await names()).slice(0, 2)).toEqual(["m-28", "m-27"]);
    // "Load more" continues in the service's order.
    await page.getByRole("button", { name: "Load more keys" }).click();
    await expect.poll(() => caption.innerText()).toBe("Keys (30 loaded)");
    expect((await names()).slice(-3)).toEqual(["m-01", "m-00", "a-last-made"]);
    await c.expectAccessible(page, "keys table sorted by name");

    // With the search: what it keeps, in the sort's order.
    await page.getByLabel("Search", { exact: true }).fill("M-1");
    await expect.poll(() => caption.innerText()).toBe('Keys (10 loaded, matching "M-1")');
    expect(await names()).toEqual(Array.from({ length: 10 }, (_, i) => `m-1${9 - i}`));
    // Keyboard alone: Tab to the Created column's head and sort by it (descending first).
    await tabTo(page, "Created");
    await page.keyboard.press("Enter");
    await expect.poll(() => page.locator('th[aria-sort="descending"]').innerText()).toContain("Created");
    await expect.poll(async () => (await names())[0]).toBe("m-19");
    expect(await names()).toHaveLength(10);
    // "Last used" is not a column the service sorts by: a plain head.
    expect(await page.getByRole("button", { name: "Last used", exact: true }).count()).toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("a row's menu opened before the badges arrive stays open, with the focus where it was, when the table is drawn again", async () => {
    const apiId = ((await c.call("apis.createApi", { name: `menu-${Date.now()}` })).body.data as { apiId: string }).apiId;
    await c.call("keys.createKey", { apiId, name: "menu-kept" });
    const { page, problems } = await c.open();
    await c.signIn(page);
    // The badges' query ("Rate limited recently") answers only once released: the first draw comes without them.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    await page.route("**/v2/analytics.getVerifications", async (route) => {
      await released;
      await route.continue();
    });
    await page.goto(`${c.service.baseUrl}/#/keys/${apiId}`);
    const toggle = page.getByRole("button", { name: "Actions for menu-kept" });
    await toggle.click();
    const history = page.getByRole("link", { name: "History of menu-kept" });
    await history.focus();
    const firstDraw = await toggle.elementHandle();
    release();
    // The second draw replaces the table's rows.
    await expect.poll(() => firstDraw!.evaluate((e) => e.isConnected)).toBe(false);
    expect(await toggle.getAttribute("aria-expanded")).toBe("true");
    expect(await history.isVisible()).toBe(true);
    expect(await page.evaluate<string | null>('document.activeElement?.getAttribute("aria-label")')).toBe("History of menu-kept");
    await page.unroute("**/v2/analytics.getVerifications");
    expect(problems).toEqual([]);
    await page.close();
  });
});
