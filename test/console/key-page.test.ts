// A key's own page in Chromium (#/key/<keyId>): everything keys.getKey answers, edited, its credits
// and usage; a key found by its value; a role's permissions changed, as a key holds them.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { RUN_BROWSER } from "./browser";
import { alertText, rand, useConsole } from "./harness";

describe.runIf(RUN_BROWSER)("console key page in Chromium", () => {
  // With a key-encryption key, so that recoverable keys can be created and shown again.
  const c = useConsole(() => ({ encryptionKey: randomBytes(32).toString("base64") }));

  it("a key's own page: everything getKey answers, edited (several rate limits, credits, refill, expiry, meta, permissions, roles), its usage", async () => {
    const apiId = await c.newApi();
    const role = `role-${rand()}`;
    await c.call("permissions.createRole", { name: role });
    const created = (
      await c.call("keys.createKey", {
        apiId,
        name: "detailed",
        externalId: `acct_${rand()}`,
        meta: { plan: "pro" },
        permissions: ["docs.read"],
        credits: { remaining: 40, refill: { interval: "daily", amount: 40 } },
        ratelimits: [
          { name: "requests", limit: 10, duration: 60_000, autoApply: true },
          { name: "bursts", limit: 3, duration: 1000, autoApply: false },
        ],
      })
    ).body.data as { keyId: string; key: string };
    for (let i = 0; i < 3; i++) await c.call("keys.verifyKey", { key: created.key });
    await c.call("keys.verifyKey", { key: created.key, permissions: "docs.write" });
    await c.service.service.flushVerifications();

    const { page, problems } = await c.open();
    await c.signIn(page);
    await page.goto(`${c.service.baseUrl}/#/keys/${apiId}`);
    await page.getByRole("link", { name: "Open key detailed" }).click();
    await page.getByRole("heading", { name: "Key detailed" }).waitFor();
    expect(page.url()).toBe(`${c.service.baseUrl}/#/key/${created.keyId}`);
    expect(page.url()).not.toContain(created.key);
    const facts = page.getByTestId("key-facts");
    const text = await facts.innerText();
    for (const shown of [
      created.keyId,
      "requests: 10 / 1 min",
      "bursts: 3 / 1 s (on request)",
      "37 left, refilled to 40 daily",
      "docs.read",
      '"plan": "pro"',
    ])
      expect(text).toContain(shown);
    // Dates in the browser's locale (en-GB here) with the time zone.
    expect(text).toMatch(/Created\s+\d{1,2} \w{3} \d{4}, \d\d:\d\d:\d\d UTC/);
    expect(text).toMatch(/Last used\s+\d{1,2} \w{3} \d{4}/);

    // Its verifications by outcome, and its recent events.
    const totals = page.getByTestId("outcome-totals");
    await expect.poll(() => totals.locator('tr[data-outcome="VALID"] td').nth(1).innerText()).toBe("3");
    expect(await totals.locator('tr[data-outcome="INSUFFICIENT_PERMISSIONS"] td').nth(1).innerText()).toBe("1");
    expect(await page.getByTestId("latest-events").locator("tbody tr").count()).toBe(4);
    await c.expectAccessible(page, "key page");
    await c.shot(page, "key", true);

    // Edited: a third rate limit, monthly refill, expiry, meta (checked as JSON first), permissions, roles.
    await page.getByText("Edit this key").click();
    const edit = page.getByRole("form", { name: "Edit this key" });
    await edit.getByRole("button", { name: "Add a rate limit" }).click();
    await edit.getByLabel("Rate limit name").nth(2).fill("daily");
    await edit.getByLabel("Requests").nth(2).fill("1000");
    await edit.getByLabel("Window", { exact: true }).nth(2).fill("1");
    await edit.getByLabel("Window unit").nth(2).selectOption("days");
    // An existing limit's window is shown in its largest whole unit.
    expect(await edit.getByLabel("Window", { exact: true }).nth(0).inputValue()).toBe("1");
    expect(await edit.getByLabel("Window unit").nth(0).inputValue()).toBe("60000");
    await edit.getByLabel("Refill", { exact: true }).selectOption("monthly");
    await edit.getByLabel("Refill amount").fill("500");
    await edit.getByLabel("Refill day (monthly)").fill("15");
    await edit.getByLabel("Expires").fill("2031-05-01T12:30");
    await edit.getByLabel("Credits low at").fill("10");
    await edit.getByLabel("Permissions").fill("docs.read, docs.write");
    await edit.getByLabel("Roles").fill(role);
    await edit.getByLabel("Meta (JSON object)").fill('{"plan": ');
    await edit.getByRole("button", { name: "Save key" }).click();
    await expect.poll(() => alertText(page)).toContain("Meta is not valid JSON");
    await edit.getByLabel("Meta (JSON object)").fill('{"plan": "enterprise"}');
    await edit.getByRole("button", { name: "Save key" }).click();
    await expect.poll(() => facts.innerText()).toContain("daily: 1000 / 1 day");
    expect(await facts.innerText()).toContain("10 (this key's own)");
    const info = (await c.call("keys.getKey", { keyId: created.keyId })).body.data as Record<string, unknown>;
    expect(info).toMatchObject({
      meta: { plan: "enterprise" },
      permissions: ["docs.read", "docs.write"],
      roles: [role],
      expires: Date.UTC(2031, 4, 1, 12, 30),
      credits: { remaining: 37, refill: { interval: "monthly", amount: 500, refillDay: 15 } },
    });
    expect((await c.call("keys.getKeySettings", { keyIds: [created.keyId] })).body.data).toEqual([
      { keyId: created.keyId, creditsLowThreshold: 10 },
    ]);
    expect((info.ratelimits as Array<{ name: string }>).map((r) => r.name)).toEqual(["requests", "bursts", "daily"]);

    // Credits changed by the service's own operation.
    await page.getByLabel("Credits operation").selectOption("increment");
    await page.getByLabel("Amount", { exact: true }).fill("5");
    await page.getByRole("button", { name: "Change credits" }).click();
    await expect.poll(() => facts.innerText()).toContain("42 left");

    await page.getByRole("button", { name: "Disable key" }).click();
    await page.getByRole("dialog", { name: "Disable this key?" }).getByRole("button", { name: "Disable key" }).click();
    await expect.poll(() => facts.innerText()).toContain("disabled");
    expect(((await c.call("keys.verifyKey", { key: created.key })).body.data as { code: string }).code).toBe("DISABLED");

    // By URL alone, in a fresh tab: an unknown key id is the service's 404 with its detail.
    await page.goto(`${c.service.baseUrl}/#/key/key_doesNotExist123`);
    await expect.poll(() => alertText(page)).toMatch(/Could not read this key: .*\(404\)/);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("finds a key by its value (sent in a request body only), opens its page by id, rerolls and deletes it there", async () => {
    const apiId = await c.newApi();
    const created = (await c.call("keys.createKey", { apiId, name: "found", prefix: "fnd" })).body.data as { keyId: string; key: string };
    const { page, problems } = await c.open();
    page.on("request", (r) => {
      if (r.url().includes(created.key)) problems.push(`the key in a URL: ${r.url()}`);
    });
    await c.signIn(page);
    await page.goto(`${c.service.baseUrl}/#/keys/${apiId}`);
    await page.getByRole("link", { name: "Find a key by its value" }).click();
    await page.getByLabel("Key", { exact: true }).fill("fnd_notAKeyOfThisService");
    await page.getByRole("button", { name: "Find key" }).click();
    await expect.poll(() => alertText(page)).toMatch(/Could not find this key: .*\(404\)/);
    await c.expectAccessible(page, "find a key");
    await page.getByLabel("Key", { exact: true }).fill(created.key);
    await page.getByRole("button", { name: "Find key" }).click();
    await page.getByRole("heading", { name: "Key found" }).waitFor();
    expect(page.url()).toBe(`${c.service.baseUrl}/#/key/${created.keyId}`);
    expect(await page.content()).not.toContain(created.key);

    // Rerolled from its page: the new key shown once, then the new key's page.
    await page.getByRole("button", { name: "Reroll key" }).click();
    await page.getByRole("dialog", { name: "Reroll this key?" }).getByRole("button", { name: "Reroll key" }).click();
    const once = page.getByRole("dialog", { name: "The rerolled key" });
    const newKey = (await once.getByTestId("new-secret").innerText()).trim();
    const newKeyId = /New key (key_\w+)/.exec(await once.innerText())![1]!;
    await once.getByRole("button", { name: "I have stored it" }).click();
    await expect.poll(() => page.url()).toBe(`${c.service.baseUrl}/#/key/${newKeyId}`);
    expect(((await c.call("keys.verifyKey", { key: newKey })).body.data as { valid: boolean }).valid).toBe(true);
    expect(((await c.call("keys.verifyKey", { key: created.key })).body.data as { code: string }).code).toBe("EXPIRED");

    // Deleted from its page: back to the keys, the key gone.
    await page.getByRole("button", { name: "Delete key" }).click();
    await page.getByRole("dialog", { name: "Delete this key?" }).getByRole("button", { name: "Delete key" }).click();
    await expect.poll(() => page.url()).toBe(`${c.service.baseUrl}/#/keys`);
    expect((await c.call("keys.getKey", { keyId: newKeyId })).status).toBe(404);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("creates a recoverable key and shows it again from its page (keys.getKey with decrypt); a key without a copy says so", async () => {
    const apiId = await c.newApi();
    expect((await c.call("apis.updateApi", { apiId, storeKeys: true })).status).toBe(200);
    const plain = (await c.call("keys.createKey", { apiId, name: "plain" })).body.data as { keyId: string; key: string };
    const { page, problems } = await c.open();
    await c.signIn(page);
    await page.goto(`${c.service.baseUrl}/#/keys/${apiId}`);
    await page.getByText("Create a key").click();
    const form = page.getByRole("form", { name: "Create a key" });
    await form.getByLabel("Name").fill("kept");
    await form.getByLabel(/^Recoverable/).check();
    await form.getByRole("button", { name: "Create key" }).click();
    const once = page.getByRole("dialog", { name: "Your new key" });
    const key = (await once.getByTestId("new-secret").innerText()).trim();
    await once.getByRole("button", { name: "I have stored it" }).click();

    await page.getByRole("link", { name: "Open key kept" }).click();
    await page.getByRole("heading", { name: "Key kept" }).waitFor();
    expect(await page.content()).not.toContain(key);
    await page.getByRole("button", { name: "Show the key" }).click();
    const shown = page.getByRole("dialog", { name: "Key kept" });
    expect((await shown.getByTestId("new-secret").innerText()).trim()).toBe(key);
    await c.expectAccessible(page, "a recoverable key shown");
    await shown.getByRole("button", { name: "I have stored it" }).click();
    expect(page.url()).not.toContain(key);

    // A key created without the option: nothing to show, said in words.
    await page.goto(`${c.service.baseUrl}/#/key/${plain.keyId}`);
    await page.getByRole("heading", { name: "Key plain" }).waitFor();
    await page.getByRole("button", { name: "Show the key" }).click();
    await expect.poll(() => alertText(page)).toContain("This key has no recoverable copy");
    // On an API that does not store keys, the service's 412 with its detail.
    const other = await c.newApi();
    const elsewhere = (await c.call("keys.createKey", { apiId: other, name: "elsewhere" })).body.data as { keyId: string };
    await page.goto(`${c.service.baseUrl}/#/key/${elsewhere.keyId}`);
    await page.getByRole("heading", { name: "Key elsewhere" }).waitFor();
    await page.getByRole("button", { name: "Show the key" }).click();
    await expect
      .poll(() => alertText(page))
      .toMatch(/Could not show this key: .*\(412\)\s+The API for this key does not support key encryption/);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("changes a role's permissions (permissions.setRolePermissions)", async () => {
    const role = `role-${rand()}`;
    await c.call("permissions.createRole", { name: role, permissions: ["docs.read"] });
    const { page, problems } = await c.open();
    await c.signIn(page);
    await page.goto(`${c.service.baseUrl}/#/rbac`);
    await page.getByRole("button", { name: `Change the permissions of ${role}` }).click();
    const dialog = page.getByRole("dialog", { name: `Permissions of ${role}` });
    expect(await dialog.getByLabel("Permissions").inputValue()).toBe("docs.read");
    await dialog.getByLabel("Permissions").fill("docs.read, docs.write");
    await dialog.getByRole("button", { name: "Save permissions" }).click();
    await page.locator("tr", { hasText: role }).getByText("docs.write").waitFor();
    const saved = (await c.call("permissions.getRole", { role })).body.data as { permissions: Array<{ slug: string }> };
    expect(saved.permissions.map((p) => p.slug).sort()).toEqual(["docs.read", "docs.write"]);
    expect(problems).toEqual([]);
    await page.close();
  });
});
