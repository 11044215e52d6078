// The console's audit and webhooks pages in a real browser (Chromium through playwright-core)
// against `keyguard serve` on SQLite: a key's row links to its history (created, renamed, a refused
// deletion by a weaker root key), the filters narrow the log, a target opens its own history; an
// endpoint added in the console (its secret shown once) receives a key's creation, seen delivered
// on the page and sent again from it, a real receiver process at the other end. Each page passes the accessibility check
// (axe-core) with no Content-Security-Policy violation.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killChildren, serve, type Served } from "../cli/cli-process";
import { receiver, stopReceivers } from "../support/webhook-receiver-process";
import { launch, RUN_BROWSER, seriousViolations, type Browser } from "./browser";

let browser: Browser;
let service: Served & { rootKey: string };
let dir: string;

async function call(op: string, body: unknown, key = service.rootKey): Promise<{ status: number; data: Record<string, string> }> {
  const res = await fetch(`${service.baseUrl}/v2/${op}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, data: ((await res.json()) as { data: Record<string, string> }).data };
}

describe.runIf(RUN_BROWSER)("the console's audit page in Chromium, keyguard serve on SQLite", () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "keyguard-console-audit-"));
    const served = await serve(["--port", "0", "--data", join(dir, "keys.db"), "--webhooks-allow-private"]);
    service = { ...served, rootKey: served.rootKey! };
    browser = await launch();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    killChildren();
    stopReceivers();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function open(): Promise<{ page: Page; problems: string[] }> {
    const page = await browser.context.newPage();
    const problems: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error" && /Content Security Policy|Refused to/.test(m.text())) problems.push(m.text());
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    await page.goto(`${service.baseUrl}/`);
    await page.getByLabel("Root key").fill(service.rootKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Sections" }).waitFor();
    return { page, problems };
  }

  it("a key's row links to its history: created, renamed, and a deletion refused to a weaker root key", async () => {
    const { apiId } = (await call("apis.createApi", { name: "audited api" })).data;
    const { keyId } = (await call("keys.createKey", { apiId: apiId!, name: "audited" })).data;
    await call("keys.updateKey", { keyId: keyId!, name: "audited-renamed" });
    const weak = (await call("rootKeys.createRootKey", { name: "read only", permissions: ["api.*.read_key"] })).data;
    expect((await call("keys.deleteKey", { keyId: keyId! }, weak.key)).status).toBe(403);

    const { page, problems } = await open();
    await page.goto(`${service.baseUrl}/#/keys/${apiId}`);
    await page.getByRole("button", { name: "Actions for audited-renamed" }).click();
    await page.getByRole("link", { name: "History of audited-renamed" }).click();
    await page.getByRole("heading", { name: `History of ${keyId}` }).waitFor();
    const rows = page.locator("tbody tr");
    await expect.poll(() => rows.count()).toBe(3);
    const text = await page.locator("tbody").innerText();
    expect(text).toMatch(/keys\.deleteKey[\s\S]*refused[\s\S]*keys\.updateKey[\s\S]*success[\s\S]*keys\.createKey[\s\S]*success/);
    expect(await rows.first().innerText()).toContain("read only");
    const violations = await seriousViolations(page);
    expect(violations, JSON.stringify(violations, null, 1)).toEqual([]);

    // The whole log, narrowed to one operation; a target opens its own history.
    await page.getByRole("link", { name: "Audit log" }).click();
    await page.getByRole("heading", { name: "Audit log" }).waitFor();
    await page.getByLabel("Operation").fill("apis.createApi");
    await page.getByRole("button", { name: "Filter" }).click();
    // Only createApi records (this test's API among them: another test of this file may have made one too).
    await expect
      .poll(async () => (await rows.allInnerTexts()).every((t) => t.includes("apis.createApi")) && (await rows.count()) > 0)
      .toBe(true);
    await page.locator("tbody tr", { hasText: apiId! }).getByRole("link", { name: apiId! }).click();
    await page.getByRole("heading", { name: `History of ${apiId}` }).waitFor();
    await expect.poll(() => page.locator("tbody").innerText()).toContain("keys.createKey");
    expect(problems).toEqual([]);
    await page.close();
  });

  it("adds an endpoint (its secret shown once) that receives a key's creation, seen delivered", async () => {
    const r = await receiver();
    const { page, problems } = await open();
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByRole("heading", { name: "Webhooks" }).waitFor();
    await page.getByText("Add an endpoint").click();
    await page.getByLabel("URL").fill(r.url);
    await page.getByLabel("key.created", { exact: true }).check();
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const dialog = page.getByRole("dialog", { name: "The endpoint's signing secret" });
    await dialog.waitFor();
    expect((await dialog.getByTestId("new-secret").innerText()).trim()).toMatch(/^whsec_/);
    await dialog.getByRole("button", { name: "I have stored it" }).click();
    await page.getByRole("cell", { name: r.url }).first().waitFor();

    const { apiId } = (await call("apis.createApi", { name: "hooked api" })).data;
    await call("keys.createKey", { apiId: apiId! });
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(1);
    await expect
      .poll(
        async () => {
          await page.getByRole("button", { name: "Refresh" }).click();
          return page.locator("tr[data-message-id]").first().innerText();
        },
        { timeout: 10_000, interval: 300 },
      )
      .toMatch(/key\.created[\s\S]*delivered[\s\S]*204/);
    const violations = await seriousViolations(page);
    expect(violations, JSON.stringify(violations, null, 1)).toEqual([]);

    // Sent again from its row: the receiver gets it a second time, same webhook-id.
    const messageId = await page.locator("tr[data-message-id]").first().getAttribute("data-message-id");
    await page.getByRole("button", { name: `Resend key.created message ${messageId}` }).click();
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(2);
    expect(r.received[1]!.id).toBe(r.received[0]!.id);
    await expect
      .poll(
        async () => {
          await page.getByRole("button", { name: "Refresh" }).click();
          return page.locator(`tr[data-message-id="${messageId}"] td`).nth(3).innerText();
        },
        { timeout: 10_000, interval: 300 },
      )
      .toBe("2");

    await page.getByRole("button", { name: `Delete endpoint ${r.url}` }).click();
    await page.getByRole("dialog", { name: "Delete this endpoint?" }).getByRole("button", { name: "Delete endpoint" }).click();
    await page.getByText("No endpoint yet.").waitFor();
    expect(problems).toEqual([]);
    await page.close();
  });

  it("shows a root key without the audit permission a clear refusal", async () => {
    const weak = (await call("rootKeys.createRootKey", { permissions: ["api.*.read_api"] })).data;
    const page = await browser.context.newPage();
    await page.goto(`${service.baseUrl}/`);
    await page.getByLabel("Root key").fill(weak.key!);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Sections" }).waitFor();
    await page.goto(`${service.baseUrl}/#/audit`);
    await expect.poll(() => page.getByRole("alert").innerText()).toContain("workspace.*.read_audit_log");
    await page.close();
  });
});
