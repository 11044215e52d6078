// An API's settings page in Chromium (#/api/<apiId>): name, IP allow-list, key format, leak
// response and credits-low threshold changed with apis.updateApi (only what changed is sent); the service's 400 and 412 shown
// with their detail; a root key without api.*.update_api sees a refusal.
import { describe, expect, it } from "vitest";
import { RUN_BROWSER } from "./browser";
import { alertText, rand, rootKeyWith, useConsole } from "./harness";

describe.runIf(RUN_BROWSER)("console API settings in Chromium", () => {
  const c = useConsole();

  it("changes an API's name, IP allow-list, key format, leak response and credits-low threshold; shows the service's errors and refusals", async () => {
    const name = `settings-${rand()}`;
    const apiId = ((await c.call("apis.createApi", { name })).body.data as { apiId: string }).apiId;
    const { page, problems } = await c.open();
    const sent: unknown[] = [];
    page.on("request", (r) => {
      if (r.url().endsWith("/v2/apis.updateApi")) sent.push(r.postDataJSON());
    });
    await c.signIn(page);
    await page.getByRole("link", { name: `Settings of ${name}` }).click();
    await page.getByRole("heading", { name: `Settings of ${name}` }).waitFor();
    expect(page.url()).toBe(`${c.service.baseUrl}/#/api/${apiId}`);

    // A bad address: the service's 400 with its detail.
    await page.getByLabel("IP allow-list").fill("127.0.0.1\nnot-an-address");
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect
      .poll(() => alertText(page))
      .toMatch(/Could not change this API's settings: .*\(400\)[\s\S]*ipWhitelist\[1\] is not an IPv4/);

    await page.getByLabel("Name", { exact: true }).fill(`${name}-renamed`);
    await page.getByLabel("IP allow-list").fill("127.0.0.1\n10.0.0.0/8");
    await page.getByLabel("Key format").selectOption("checksummed");
    await page.getByLabel("When a key is found in public").selectOption("flag");
    await page.getByLabel("Credits low at").fill("25");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Saved.", { exact: true }).waitFor();
    await page.getByRole("heading", { name: `Settings of ${name}-renamed` }).waitFor();
    expect(sent.at(-1)).toEqual({
      apiId,
      name: `${name}-renamed`,
      ipWhitelist: ["127.0.0.1", "10.0.0.0/8"],
      keyFormat: "checksummed",
      leakResponse: "flag",
      creditsLowThreshold: 25,
    });
    expect((await c.call("apis.getApiSettings", { apiId })).body.data).toMatchObject({
      name: `${name}-renamed`,
      ipWhitelist: ["127.0.0.1", "10.0.0.0/8"],
      keyFormat: "checksummed",
      leakResponse: "flag",
      storeKeys: false,
      creditsLowThreshold: 25,
    });
    await c.expectAccessible(page, "API settings page");
    await c.shot(page, "api-settings");

    // Recoverable keys need an encryption key this service does not have: its 412 with the detail.
    await page.getByLabel(/Recoverable keys/).check();
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect.poll(() => alertText(page)).toMatch(/\(412\)[\s\S]*KEYGUARD_ENCRYPTION_KEY/);
    expect(sent.at(-1)).toEqual({ apiId, storeKeys: true });

    // The allow-list emptied: sent as [] (any address again); the threshold emptied: sent as null (none).
    await page.getByLabel(/Recoverable keys/).uncheck();
    await page.getByLabel("IP allow-list").fill("");
    await page.getByLabel("Credits low at").fill("");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Saved.", { exact: true }).waitFor();
    expect(sent.at(-1)).toEqual({ apiId, ipWhitelist: [], creditsLowThreshold: null });
    expect((await c.call("apis.getApiSettings", { apiId })).body.data).not.toHaveProperty("ipWhitelist");
    expect((await c.call("apis.getApiSettings", { apiId })).body.data).not.toHaveProperty("creditsLowThreshold");

    // A root key that may read the API but not change it.
    await page.getByRole("button", { name: "Sign out" }).click();
    await c.signIn(page, await rootKeyWith(c, "api.*.read_api"));
    await page.goto(`${c.service.baseUrl}/#/api/${apiId}`);
    await page.getByLabel("Key format").selectOption("plain");
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect.poll(() => page.locator(".refusal").innerText()).toContain("update_api");
    expect(problems).toEqual([]);
    await page.close();
  });

  it("shows the keys moved in (keys.migrateKeys) over the last day, from the audit log; nothing when none were", async () => {
    const name = `moving-${rand()}`;
    const apiId = ((await c.call("apis.createApi", { name })).body.data as { apiId: string }).apiId;
    const { page, problems } = await c.open();
    await c.signIn(page);
    const none = page.waitForResponse((r) => r.url().endsWith("/v2/audit.listEvents"));
    await page.goto(`${c.service.baseUrl}/#/api/${apiId}`);
    await page.getByRole("heading", { name: `Settings of ${name}` }).waitFor();
    await page.getByRole("button", { name: "Save settings" }).waitFor();
    expect((await none).status()).toBe(200);
    expect(await page.getByTestId("imports").count()).toBe(0);

    const { migrationId } = await c.service.service.createKeyMigration({ algorithm: "sha256" });
    const hash = (i: number) => Buffer.from(`a key hash of ${name} number ${i}`.padEnd(32, ".")).toString("base64");
    const imported = (await c.call("keys.migrateKeys", { migrationId, apiId, keys: [0, 1, 2].map((i) => ({ hash: hash(i) })) })).body;
    expect(imported.data).toMatchObject({ failed: [] });
    // One hash again: refused as already here.
    await c.call("keys.migrateKeys", { migrationId, apiId, keys: [{ hash: hash(0) }, { hash: hash(3) }] });

    await page.reload();
    const panel = page.getByTestId("imports");
    await expect
      .poll(() => panel.getByTestId("imports-summary").innerText())
      .toMatch(/^4 keys imported since .*, 4 of them in the last hour; 1 refused as already here\.$/);
    expect(await panel.locator('[data-testid="outcome-totals"] tr[data-outcome="IMPORTED"] td').nth(1).innerText()).toBe("4");
    expect(await panel.locator('[data-testid="outcome-totals"] tr[data-outcome="HELD"] td').nth(1).innerText()).toBe("1");
    await c.expectAccessible(page, "keys moved in");
    // A root key that may not read the audit log sees the settings without the panel, and no error.
    const limited = await c.open();
    await c.signIn(limited.page, await rootKeyWith(c, "api.*.read_api", "api.*.update_api"));
    const refused = limited.page.waitForResponse((r) => r.url().endsWith("/v2/audit.listEvents"));
    await limited.page.goto(`${c.service.baseUrl}/#/api/${apiId}`);
    expect((await refused).status()).toBe(403);
    await limited.page.getByRole("button", { name: "Save settings" }).waitFor();
    expect(await limited.page.getByTestId("imports").count()).toBe(0);
    expect(await limited.page.getByRole("alert").count()).toBe(0);
    expect([...problems, ...limited.problems]).toEqual([]);
    await page.close();
    await limited.page.close();
  });
});
