// The console in a real browser (Debian's Chromium through playwright-core) against `keyguard
// serve` on SQLite: sign in; create a key and copy it; use it against an app protected by
// apiKeyAuth() and see the verification in the chart; disable it and see the app answer 401; a
// root key without a permission sees a clear refusal; a key reported leaked by secret scanning is
// marked; root keys; accessibility (axe-core) and the
// Content-Security-Policy holding (no violation reported by the browser).
// KEYGUARD_SCREENSHOTS=1 writes the screenshots of docs/console.md into docs/console/.
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import express from "express";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKeyAuth, silentLogger } from "keyguard";
import { ALL_ROOT_PERMISSIONS } from "keyguard/server";
import { killChildren, serve, type Served } from "../cli/cli-process";
import { launch, RUN_BROWSER, type Browser } from "./browser";
import { expectAccessible, shot } from "./harness";
import { reportBody, scanningKey, sendReport, writeKeysDocument } from "../support/secret-scanning-host";
import { GENEROUS } from "../support/time-limits";

/** The code host signing secret scanning reports (its public key is in a file given to serve). */
const scanner = scanningKey();

let browser: Browser;
let service: Served & { rootKey: string };
let app: Server;
let appUrl: string;
let dir: string;
/** Whether the service answers analytics.getVerifications (the chart's source). */
let analytics = false;

async function call(
  op: string,
  body: unknown,
  key = service.rootKey,
): Promise<{ status: number; body: { data?: unknown; error?: { detail: string } } }> {
  const res = await fetch(`${service.baseUrl}/v2/${op}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as never };
}

describe.runIf(RUN_BROWSER)("console in Chromium, keyguard serve on SQLite", () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "keyguard-console-"));
    const keysFile = writeKeysDocument(join(dir, "scanning-keys.json"), [scanner]);
    const served = await serve(["--port", "0", "--data", join(dir, "keys.db"), "--secret-scanning-keys", keysFile]);
    service = { ...served, rootKey: served.rootKey! };
    // An app protected by apiKeyAuth() against that service, without a cache: a change shows at once.
    const demo = express();
    demo.use("/api", apiKeyAuth({ rootKey: service.rootKey, baseUrl: service.baseUrl, cache: false, logger: silentLogger, ...GENEROUS }));
    demo.get("/api/docs", (req, res) => void res.json({ docs: ["getting-started.md"], key: req.apiKey?.keyId }));
    app = await new Promise<Server>((resolve) => {
      const s = demo.listen(0, "127.0.0.1", () => resolve(s));
    });
    appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
    analytics = (await call("analytics.getVerifications", { query: "SELECT count(*) AS total FROM key_verifications_v1" })).status === 200;
    if (!analytics) console.log("[skipped part] the chart journey did not run: this service does not answer analytics.getVerifications.");
    browser = await launch();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (app ? app.close(() => resolve()) : resolve()));
    killChildren();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A new tab that records what the browser reports about the CSP and failed script. */
  async function open(): Promise<{ page: Page; problems: string[] }> {
    const page = await browser.context.newPage();
    const problems: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error" && /Content Security Policy|Refused to/.test(m.text())) problems.push(m.text());
      if (m.text().includes("root_")) problems.push(`a root key in the browser's console: ${m.text()}`);
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    // Works offline: nothing is fetched from anywhere but the service itself.
    page.on("request", (r) => {
      if (!r.url().startsWith(`${service.baseUrl}/`)) problems.push(`request to another origin: ${r.url()}`);
      // Root keys (root_…) travel in the Authorization header only, never in a URL.
      if (r.url().includes("root_")) problems.push(`a root key in a URL: ${r.url()}`);
    });
    await page.goto(`${service.baseUrl}/`);
    return { page, problems };
  }

  async function signIn(page: Page, key: string): Promise<void> {
    await page.getByLabel("Root key").fill(key);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Sections" }).waitFor();
  }

  async function newApi(): Promise<string> {
    const res = await call("apis.createApi", { name: `console-${Math.random().toString(36).slice(2, 10)}` });
    return (res.body.data as { apiId: string }).apiId;
  }

  it("signs in with a root key kept in sessionStorage only; a wrong key is refused with the service's detail", async () => {
    const { page, problems } = await open();
    await expectAccessible(page, "sign-in page");
    await shot(page, "sign-in");
    await page.getByLabel("Root key").fill("root_notAKeyOfThisService");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByRole("alert").innerText()).toContain("The provided root key is invalid");

    await signIn(page, service.rootKey);
    await page.getByRole("heading", { name: "APIs" }).waitFor();
    await page.getByRole("cell", { name: service.apiId }).waitFor();
    expect(await page.evaluate("sessionStorage.getItem('keyguard.rootKey')")).toBe(service.rootKey);
    expect(await page.evaluate("localStorage.length")).toBe(0);
    expect(await browser.context.cookies()).toEqual([]);
    expect(page.url()).not.toContain(service.rootKey);
    await expectAccessible(page, "APIs page");
    await shot(page, "apis");

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("Root key").waitFor();
    expect(await page.evaluate("sessionStorage.getItem('keyguard.rootKey')")).toBeNull();
    expect(problems).toEqual([]);
    await page.close();
  });

  it("creates a key, copies it once, the app accepts it; disabled in the console, the app answers 401", async () => {
    const apiId = await newApi();
    const { page, problems } = await open();
    await browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: service.baseUrl });
    await signIn(page, service.rootKey);
    await page.goto(`${service.baseUrl}/#/keys/${apiId}`);
    await page.getByText("No keys in this API yet.").waitFor();

    await page.getByText("Create a key").click();
    const name = `journey-${Math.random().toString(36).slice(2, 8)}`;
    await page.getByLabel("Name", { exact: true }).fill(name);
    await page.getByLabel("Prefix").fill("jr");
    await page.getByLabel("Credits", { exact: true }).fill("50");
    await page.getByLabel("Permissions").fill("docs.read");
    await page.getByLabel("Meta (JSON object)").fill("{not json");
    await page.getByRole("button", { name: "Create key" }).click();
    await expect.poll(() => page.getByRole("alert").innerText()).toContain("Meta is not valid JSON");
    await page.getByLabel("Meta (JSON object)").fill('{"plan": "pro"}');
    // An error of the service is shown with its detail.
    await page.getByLabel("Roles").fill("missing-role");
    await page.getByRole("button", { name: "Create key" }).click();
    await expect
      .poll(() => page.getByRole("alert").innerText())
      .toMatch(/Could not create a key: .*\(404\)[\s\S]*body\.roles\[0\] \(a string of 12 characters\) does not exist/);
    await page.getByLabel("Roles").fill("");
    await page.getByRole("button", { name: "Create key" }).click();

    const dialog = page.getByRole("dialog", { name: "Your new key" });
    await dialog.waitFor();
    const shown = (await dialog.getByTestId("new-secret").innerText()).trim();
    expect(shown).toMatch(/^jr_\w+$/);
    await expectAccessible(page, "new-key dialog");
    await shot(page, "new-key");
    await dialog.getByRole("button", { name: "Copy" }).click();
    await dialog.getByText("Copied to the clipboard.").waitFor();
    const copied = await page.evaluate<string>("navigator.clipboard.readText()");
    expect(copied).toBe(shown);
    await dialog.getByRole("button", { name: "I have stored it" }).click();
    await expect.poll(() => page.getByTestId("new-secret").count()).toBe(0);

    // The key as the service keeps it: the form's fields, and never the key in the page again.
    const row = page.locator("tr", { hasText: name });
    await row.waitFor();
    expect(await row.innerText()).toContain("enabled");
    expect(await page.content()).not.toContain(copied);

    const ok = await fetch(`${appUrl}/api/docs`, { headers: { authorization: `Bearer ${copied}` } });
    expect(ok.status).toBe(200);

    // lastUsedAt is written with the verification events, in batches of about a second.
    if (analytics) {
      await expect
        .poll(
          async () => {
            await page.reload();
            return row.locator("td").nth(3).innerText();
          },
          { timeout: 10_000, interval: 500 },
        )
        .not.toBe("never");
    }
    await expectAccessible(page, "keys page");
    await shot(page, "keys");

    await row.getByRole("button", { name: `Actions for ${name}` }).click();
    await row.getByRole("button", { name: `Disable ${name}` }).click();
    await page.getByRole("dialog", { name: "Disable this key?" }).getByRole("button", { name: "Disable key" }).click();
    await expect.poll(() => row.innerText()).toContain("disabled");
    const refused = await fetch(`${appUrl}/api/docs`, { headers: { authorization: `Bearer ${copied}` } });
    expect(refused.status).toBe(401);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("shows a verification made through the app in the chart and the latest events", async (ctx) => {
    if (!analytics) return ctx.skip("this service does not answer analytics.getVerifications");
    const apiId = await newApi();
    const created = await call("keys.createKey", { apiId, name: "charted" });
    const { key, keyId } = created.body.data as { key: string; keyId: string };
    const { page, problems } = await open();
    await signIn(page, service.rootKey);
    await page.goto(`${service.baseUrl}/#/verifications`);
    await page.getByTestId("updated").getByText("Updated").waitFor();
    const valid = page.getByTestId("outcome-totals").locator('tr[data-outcome="VALID"] td').nth(1);
    const before = (await valid.count()) === 0 ? 0 : Number(await valid.innerText());
    // Verified through the app while the page is open: the page shows them without a reload.
    for (let i = 0; i < 3; i++)
      expect((await fetch(`${appUrl}/api/docs`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    const events = page.getByTestId("latest-events");
    await expect.poll(async () => ((await events.count()) === 0 ? "" : events.innerText()), { timeout: 15_000 }).toContain(keyId);
    await expect
      .poll(async () => ((await valid.count()) === 0 ? 0 : Number(await valid.innerText())), { timeout: 15_000 })
      .toBeGreaterThanOrEqual(before + 3);
    expect(await page.locator('svg.chart rect[data-outcome="VALID"]').count()).toBeGreaterThan(0);
    await expectAccessible(page, "verifications page");
    await shot(page, "verifications");
    expect(problems).toEqual([]);
    await page.close();
  });

  it("marks a key rate limited recently after the app answered 429 for it", async (ctx) => {
    if (!analytics) return ctx.skip("this service does not answer analytics.getVerifications");
    const apiId = await newApi();
    const created = await call("keys.createKey", {
      apiId,
      name: "limited",
      ratelimits: [{ name: "requests", limit: 1, duration: 60_000, autoApply: true }],
    });
    const { key, keyId } = created.body.data as { key: string; keyId: string };
    const other = (await call("keys.createKey", { apiId, name: "calm" })).body.data as { keyId: string };
    expect((await fetch(`${appUrl}/api/docs`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    expect((await fetch(`${appUrl}/api/docs`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(429);
    const { page, problems } = await open();
    await signIn(page, service.rootKey);
    await page.goto(`${service.baseUrl}/#/keys/${apiId}`);
    const row = page.locator(`tr[data-key-id="${keyId}"]`);
    await expect
      .poll(
        async () => {
          await page.reload();
          return row.innerText();
        },
        { timeout: 10_000, interval: 500 },
      )
      .toContain("rate limited recently");
    expect(await page.locator(`tr[data-key-id="${other.keyId}"]`).innerText()).not.toContain("rate limited");
    expect(problems).toEqual([]);
    await page.close();
  });

  it("goes back to the sign-in form, saying why, when the signed-in root key is deleted", async () => {
    const created = await call("rootKeys.createRootKey", { name: "short-lived", permissions: ["api.*.read_api"] });
    const { key, keyId } = created.body.data as { key: string; keyId: string };
    const { page, problems } = await open();
    await signIn(page, key);
    expect((await call("rootKeys.deleteRootKey", { keyId })).status).toBe(200);
    await page.getByRole("link", { name: "Keys", exact: true }).click();
    await expect.poll(() => page.getByRole("alert").innerText()).toContain("The provided root key is invalid");
    await page.getByLabel("Root key").waitFor();
    expect(await page.evaluate("sessionStorage.getItem('keyguard.rootKey')")).toBeNull();
    expect(problems).toEqual([]);
    await page.close();
  });

  it("pages through keys, searches them and shows each status", async () => {
    const apiId = await newApi();
    for (let i = 0; i < 27; i++) await call("keys.createKey", { apiId, name: `bulk-${String(i).padStart(2, "0")}` });
    const expired = (await call("keys.createKey", { apiId, name: "was-valid", expires: Date.now() - 60_000 })).body.data as {
      keyId: string;
    };
    const spent = (await call("keys.createKey", { apiId, name: "spent", credits: { remaining: 0 } })).body.data as { keyId: string };
    const off = (await call("keys.createKey", { apiId, name: "switched-off", enabled: false })).body.data as { keyId: string };
    const { page, problems } = await open();
    await signIn(page, service.rootKey);
    await page.goto(`${service.baseUrl}/#/keys/${apiId}`);
    const caption = page.locator("table.keys caption");
    await expect.poll(() => caption.innerText()).toBe("Keys (25 loaded; more on the service)");
    // Searched by the service: the keys not loaded yet are found too.
    await page.getByLabel("Search", { exact: true }).fill("BULK-2");
    await expect.poll(() => caption.innerText()).toBe('Keys (7 loaded, matching "BULK-2")');
    expect(await page.locator("table.keys tbody tr").count()).toBe(7);
    await page.getByLabel("Search", { exact: true }).fill("no key is called this");
    await page.getByText('No key of this API matches "no key is called this".').waitFor();
    await page.getByLabel("Search", { exact: true }).fill("");
    await expect.poll(() => caption.innerText()).toBe("Keys (25 loaded; more on the service)");
    await page.getByRole("button", { name: "Load more keys" }).click();
    await expect.poll(() => caption.innerText()).toBe("Keys (30 loaded)");
    await expect.poll(() => page.getByRole("button", { name: "Load more keys" }).count()).toBe(0);

    // Sorted by the service on a click on a column's head, again for the other way: from its first page.
    const names = () => page.locator("table.keys tbody td.name").allInnerTexts();
    expect((await names()).slice(0, 2)).toEqual(["bulk-00", "bulk-01"]);
    await page.getByRole("button", { name: "Name", exact: true }).click();
    await expect.poll(() => page.locator('th[aria-sort="ascending"]').innerText()).toContain("Name");
    await expect.poll(async () => (await names()).slice(0, 2)).toEqual(["bulk-00", "bulk-01"]);
    await page.getByRole("button", { name: "Name", exact: true }).click();
    await expect.poll(() => page.locator('th[aria-sort="descending"]').innerText()).toContain("Name");
    await expect.poll(async () => (await names()).slice(0, 3)).toEqual(["was-valid", "switched-off", "spent"]);
    await expect.poll(() => caption.innerText()).toBe("Keys (25 loaded; more on the service)");
    expect(await page.locator(`tr[data-key-id="${expired.keyId}"] .badge`).allInnerTexts()).toEqual(["enabled", "expired"]);
    expect(await page.locator(`tr[data-key-id="${spent.keyId}"] .badge`).allInnerTexts()).toEqual(["enabled", "out of credits"]);
    expect(await page.locator(`tr[data-key-id="${off.keyId}"] .badge`).allInnerTexts()).toEqual(["disabled"]);
    // Descending first: keys that never expire (later than any date) lead; ascending, the expired one.
    await page.getByRole("button", { name: "Expires", exact: true }).click();
    await expect.poll(() => page.locator('th[aria-sort="descending"]').innerText()).toContain("Expires");
    await page.getByRole("button", { name: "Expires", exact: true }).click();
    await expect.poll(async () => (await names())[0]).toBe("was-valid");
    await page.getByRole("button", { name: "Credits", exact: true }).click();
    await expect.poll(() => page.locator('th[aria-sort="descending"]').innerText()).toContain("Credits");
    await page.getByRole("button", { name: "Credits", exact: true }).click();
    await expect.poll(async () => (await names())[0]).toBe("spent");

    await page.reload();
    await expect.poll(() => caption.innerText()).toBe("Keys (25 loaded; more on the service)");
    await page.getByRole("button", { name: /Load all keys/ }).click();
    await expect.poll(() => caption.innerText()).toBe("Keys (30 loaded)");
    expect(problems).toEqual([]);
    await page.close();
  });

  it("marks keys reported leaked by secret scanning: disabled by default, only flagged on a flag-only API", async () => {
    const apiId = await newApi();
    const { key, keyId } = (await call("keys.createKey", { apiId, name: "pushed-to-github" })).body.data as { key: string; keyId: string };
    const calm = (await call("keys.createKey", { apiId, name: "kept-secret" })).body.data as { keyId: string };
    const flagApi = (await call("apis.createApi", { name: "flag-only-api", leakResponse: "flag" })).body.data as { apiId: string };
    const flagged = (await call("keys.createKey", { apiId: flagApi.apiId, name: "flagged" })).body.data as { key: string; keyId: string };
    const url = "https://github.com/octo/demo/blob/0123abc/.env";
    const report = await sendReport(
      service.baseUrl,
      scanner,
      reportBody([
        { token: key, url, source: "commit" },
        { token: flagged.key, url },
      ]),
    );
    expect(report.status).toBe(200);
    expect((await fetch(`${appUrl}/api/docs`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(401);

    const { page, problems } = await open();
    await signIn(page, service.rootKey);
    await page.goto(`${service.baseUrl}/#/keys/${apiId}`);
    const row = page.locator(`tr[data-key-id="${keyId}"]`);
    await row.waitFor();
    expect(await row.locator(".badge").allInnerTexts()).toEqual(["disabled", "leaked"]);
    expect(await row.locator(".leak-note").innerText()).toContain("Found in public (commit)");
    expect(await row.getByRole("link", { name: "where" }).getAttribute("href")).toBe(url);
    expect(await page.locator(`tr[data-key-id="${calm.keyId}"] .badge`).allInnerTexts()).toEqual(["enabled"]);
    await expectAccessible(page, "keys page with a leaked key");

    await page.goto(`${service.baseUrl}/#/keys/${flagApi.apiId}`);
    const flaggedRow = page.locator(`tr[data-key-id="${flagged.keyId}"]`);
    await flaggedRow.waitFor();
    expect(await flaggedRow.locator(".badge").allInnerTexts()).toEqual(["enabled", "leaked"]);
    // The key's own page lists its reports.
    await flaggedRow.getByRole("link", { name: "Open key flagged" }).click();
    await expect.poll(() => page.getByTestId("key-facts").innerText()).toContain(url);
    expect(await page.getByTestId("key-facts").innerText()).toMatch(/Found in public\s+\d{1,2} \w{3} \d{4}, [\d:]+ UTC: \w+/);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("shows a clear refusal (403 with the service's detail) to a root key without the permission", async () => {
    const apiId = await newApi();
    const reader = await call("rootKeys.createRootKey", { name: "reader", permissions: ["api.*.read_api", "api.*.read_key"] });
    const readerKey = (reader.body.data as { key: string }).key;
    const { page, problems } = await open();
    await signIn(page, readerKey);
    await page.goto(`${service.baseUrl}/#/root-keys`);
    const refusal = page.locator(".refusal");
    await refusal.waitFor();
    expect(await refusal.innerText()).toContain("Not allowed with this root key");
    expect(await refusal.innerText()).toContain("workspace.*.read_root_key");
    await expectAccessible(page, "refusal");
    await shot(page, "refusal");

    await page.goto(`${service.baseUrl}/#/keys/${apiId}`);
    await page.getByText("No keys in this API yet.").waitFor();
    await page.getByText("Create a key").click();
    await page.getByRole("button", { name: "Create key" }).click();
    // Creating a key without api.*.create_key is "not found", as production masks it; the page says why.
    await expect.poll(() => page.getByRole("alert").innerText()).toContain("The specified API was not found.");
    expect(await page.getByRole("alert").innerText()).toContain("lacks api.*.create_key");

    await page.goto(`${service.baseUrl}/#/apis`);
    await page.getByLabel("New API name").fill("not allowed");
    await page.getByRole("button", { name: "Create API" }).click();
    await expect.poll(() => page.locator(".refusal").innerText()).toContain("api.*.create_api");
    expect(problems).toEqual([]);
    await page.close();
  });

  it("creates a root key with chosen permissions, shown once, that signs in; deletes it after confirmation", async () => {
    const { page, problems } = await open();
    await signIn(page, service.rootKey);
    await page.goto(`${service.baseUrl}/#/root-keys`);
    await page.getByText("Create a root key").click();
    // Every permission the service checks, once, each in an area of its own (none left to "Other").
    const form = page.getByRole("form", { name: "Create a root key" });
    const offered = await form
      .locator("input[type=checkbox]")
      .evaluateAll((boxes) => boxes.map((b) => (b as unknown as { value: string }).value));
    expect(offered.sort()).toEqual([...ALL_ROOT_PERMISSIONS].sort());
    expect(await form.locator("legend").allInnerTexts()).not.toContain("Other");
    const name = `ci-${Math.random().toString(36).slice(2, 8)}`;
    await page.getByLabel("Name", { exact: true }).fill(name);
    await page.getByLabel("api.*.read_api").check();
    await page.getByLabel("api.*.verify_key").check();
    await page.getByRole("button", { name: "Create root key" }).click();
    const dialog = page.getByRole("dialog", { name: "Your new root key" });
    const key = (await dialog.getByTestId("new-secret").innerText()).trim();
    expect(key).toMatch(/^root_/);
    await dialog.getByRole("button", { name: "I have stored it" }).click();
    const row = page.locator("tr", { hasText: name });
    await row.waitFor();
    expect(await row.innerText()).toContain("2 permissions");
    expect((await call("apis.getApi", { apiId: service.apiId }, key)).status).toBe(200);
    await expectAccessible(page, "root keys page");
    await shot(page, "root-keys");

    await row.getByRole("button", { name: `Delete root key ${name}` }).click();
    await page.getByRole("dialog", { name: "Delete this root key?" }).getByRole("button", { name: "Cancel" }).click();
    expect((await call("apis.getApi", { apiId: service.apiId }, key)).status).toBe(200);
    await row.getByRole("button", { name: `Delete root key ${name}` }).click();
    await page.getByRole("dialog", { name: "Delete this root key?" }).getByRole("button", { name: "Delete root key" }).click();
    await expect.poll(() => row.count()).toBe(0);
    expect((await call("apis.getApi", { apiId: service.apiId }, key)).status).toBe(401);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("manages permissions and roles, and edits, rerolls and deletes a key with confirmation", async () => {
    const apiId = await newApi();
    const slug = `perm.${Math.random().toString(36).slice(2, 8)}`;
    const { page, problems } = await open();
    await signIn(page, service.rootKey);
    await page.goto(`${service.baseUrl}/#/rbac`);
    await page.getByLabel("Permission slug").fill(slug);
    await page.getByRole("button", { name: "Create permission" }).click();
    await page.getByRole("cell", { name: slug, exact: true }).waitFor();
    const role = `role-${Math.random().toString(36).slice(2, 8)}`;
    await page.getByLabel("Role name").fill(role);
    await page.getByRole("textbox", { name: "Permissions", exact: true }).fill(slug);
    await page.getByRole("button", { name: "Create role" }).click();
    await page.locator("tr", { hasText: role }).getByText(slug).waitFor();
    await expectAccessible(page, "permissions and roles");
    await shot(page, "permissions-roles");

    const created = await call("keys.createKey", { apiId, name: "to-edit" });
    const { key } = created.body.data as { key: string };
    await page.goto(`${service.baseUrl}/#/keys/${apiId}`);
    const row = page.locator("tr", { hasText: "to-edit" });
    await row.getByRole("button", { name: "Actions for to-edit" }).click();
    await row.getByRole("button", { name: "Edit to-edit" }).click();
    const edit = page.getByRole("dialog", { name: "Edit to-edit" });
    await edit.getByLabel("Name", { exact: true }).fill("edited");
    await edit.getByLabel("Roles").fill(role);
    await edit.getByRole("button", { name: "Save" }).click();
    const edited = page.locator("tr", { hasText: "edited" });
    await edited.waitFor();
    const info = await call("keys.whoami", { key });
    expect(info.body.data).toMatchObject({ name: "edited", roles: [role] });

    await edited.getByRole("button", { name: "Actions for edited" }).click();
    await edited.getByRole("button", { name: "Reroll edited" }).click();
    await page.getByRole("dialog", { name: "Reroll this key?" }).getByRole("button", { name: "Reroll key" }).click();
    const once = page.getByRole("dialog", { name: "The rerolled key" });
    const newKey = (await once.getByTestId("new-secret").innerText()).trim();
    const newKeyId = /New key (key_\w+)/.exec(await once.innerText())![1]!;
    await once.getByRole("button", { name: "I have stored it" }).click();
    const oldKeyId = (info.body.data as { keyId: string }).keyId;
    // The old key stays listed, expired; the new one carries its settings.
    await expect.poll(() => page.locator(`tr[data-key-id="${oldKeyId}"]`).innerText()).toContain("expired");
    expect(await page.locator(`tr[data-key-id="${newKeyId}"]`).innerText()).toContain("enabled");
    expect((await fetch(`${appUrl}/api/docs`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(401);
    expect((await fetch(`${appUrl}/api/docs`, { headers: { authorization: `Bearer ${newKey}` } })).status).toBe(200);

    const fresh = page.locator(`tr[data-key-id="${newKeyId}"]`);
    await fresh.getByRole("button", { name: "Actions for edited" }).click();
    await fresh.getByRole("button", { name: "Delete edited" }).click();
    await page.getByRole("dialog", { name: "Delete this key?" }).getByRole("button", { name: "Delete key" }).click();
    await expect.poll(() => fresh.count()).toBe(0);
    expect((await fetch(`${appUrl}/api/docs`, { headers: { authorization: `Bearer ${newKey}` } })).status).toBe(401);
    expect(problems).toEqual([]);
    await page.close();
  });
});
