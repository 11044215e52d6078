// Every page of the console at 1,280 px wide, in the light and the dark colour scheme, with
// realistic data (long names, ids, URLs and patterns, keys with every column filled): no page
// scrolls sideways (document.documentElement.scrollWidth <= clientWidth), and axe finds nothing
// serious on it. The keys page's row menu, open, stays inside the page too.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { RUN_BROWSER } from "./browser";
import { useConsole } from "./harness";

const WIDTH = 1280;
const LONG = "nightly-reconciliation-worker-for-the-eu-west-1-region-primary-instance-01";

/** How far the page scrolls sideways (0 when it fits). */
const overflow = (page: Page) => page.evaluate<number>("document.documentElement.scrollWidth - document.documentElement.clientWidth");

describe.runIf(RUN_BROWSER)("console layout at 1,280 px", () => {
  const c = useConsole(() => ({ webhooksAllowPrivate: true }));

  it("no page scrolls sideways, in either colour scheme, with long names and every column filled", async () => {
    const ok = async (op: string, body: unknown) => {
      const res = await c.call(op, body);
      expect(res.status, `${op}: ${JSON.stringify(res.body.error)}`).toBe(200);
      return res.body.data as Record<string, string>;
    };
    const { apiId } = await ok("apis.createApi", { name: "customer-facing-billing-and-invoicing-api-for-enterprise-tenants" });
    await ok("apis.createApi", { name: "internal-reporting" });
    const owner = `org_${"acme-corporation-holding-europe-".repeat(2)}1`;
    const { identityId } = await ok("identities.createIdentity", {
      externalId: owner,
      meta: { plan: "enterprise", region: "eu-west-1", contact: "platform-team@acme-corporation.example.com" },
      ratelimits: [{ name: "requests-per-tenant-across-all-regions", limit: 100_000, duration: 86_400_000, autoApply: true }],
    });
    const slugs = ["invoices.read", "invoices.write", `reports.export.${"quarterly-".repeat(4)}csv`];
    for (const slug of slugs)
      await ok("permissions.createPermission", { name: slug, slug, description: `May ${slug} ${"in every region ".repeat(4)}` });
    const role = "billing-administrator-with-export-rights-for-every-region";
    await ok("permissions.createRole", { name: role, description: "Everything billing needs", permissions: slugs });
    let keyId = "";
    for (let i = 0; i < 12; i++) {
      const made = await ok("keys.createKey", {
        apiId,
        name: i % 2 ? `${LONG}-${i}` : `worker ${i}`,
        prefix: "billing_live",
        expires: Date.now() + (i + 1) * 86_400_000,
        credits: { remaining: 1000 * i, refill: { interval: "daily", amount: 1000 } },
        ratelimits: [
          { name: "requests", limit: 100, duration: 60_000, autoApply: true },
          { name: "bursts-of-expensive-exports", limit: 3, duration: 1000, autoApply: false },
        ],
        permissions: slugs,
        roles: [role],
        ...(i === 3 ? { externalId: owner } : {}),
        meta: { team: "billing", ticket: `BILL-${1000 + i}`, note: "x".repeat(120) },
      });
      keyId ||= made.keyId!;
      if (i < 4) await ok("keys.verifyKey", { key: made.key, permissions: slugs[i % 3] });
    }
    const namespace = `api.requests.${"per-tenant-".repeat(5)}v2`;
    await ok("ratelimit.limit", { namespace, identifier: "user_42", limit: 10, duration: 60_000, cost: 0 });
    await ok("ratelimit.limit", { namespace: "email.outbound", identifier: "user_42", limit: 10, duration: 60_000, cost: 0 });
    await ok("ratelimit.setOverride", {
      namespace,
      identifier: `team_${"enterprise-customers-".repeat(4)}*`,
      limit: 5000,
      duration: 3_600_000,
    });
    const deployer = await ok("rootKeys.createRootKey", {
      name: `deploy-pipeline-${LONG}`,
      permissions: ["api.*.create_key", "api.*.read_key", "api.*.update_key"],
    });
    await ok("webhooks.createEndpoint", {
      url: `http://127.0.0.1:9/hooks/${"keyguard-events-".repeat(6)}receiver`,
      events: ["key.created", "key.updated", "key.deleted"],
    });

    await ok("portal.createPortal", {
      name: `Customer portal of ${"the-long-named-provider-".repeat(3)}`,
      apiIds: [apiId],
      returnOrigins: ["https://app.example.com"],
    });

    // A change by a named root key, for the audit log's actor column.
    expect((await c.call("keys.createKey", { apiId, name: "made-by-the-pipeline" }, deployer.key)).status).toBe(200);

    const { page, problems } = await c.open();
    await page.setViewportSize({ width: WIDTH, height: 800 });
    const signInOverflow: number[] = [];
    for (const colorScheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme });
      signInOverflow.push(await overflow(page));
    }
    expect(signInOverflow, "the sign-in page").toEqual([0, 0]);
    await c.signIn(page);

    const pages: Array<[string, string]> = [
      ["#/apis", "main table"],
      [`#/api/${apiId}`, "main form"],
      [`#/keys/${apiId}`, "table.keys"],
      [`#/key/${keyId}`, "[data-testid=latest-events]"],
      ["#/identities", "main table"],
      [`#/identities/${identityId}`, "[data-testid=identity-keys]"],
      ["#/ratelimits", "[data-testid=namespaces]"],
      [`#/ratelimits/${encodeURIComponent(namespace)}`, "[data-testid=namespace-usage] [data-testid=outcome-totals]"],
      ["#/rbac", "main table"],
      ["#/root-keys", "main table"],
      ["#/verifications", "[data-testid=latest-events]"],
      ["#/audit", "table.audit"],
      ["#/webhooks", "main table"],
      ["#/portals", "main table"],
    ];
    const wide: string[] = [];
    for (const [hash, ready] of pages) {
      await page.goto(`${c.service.baseUrl}/${hash}`);
      await page.locator(ready).first().waitFor();
      for (const colorScheme of ["light", "dark"] as const) {
        await page.emulateMedia({ colorScheme });
        const by = await overflow(page);
        if (by > 0) wide.push(`${hash} (${colorScheme}): ${by} px too wide`);
      }
      await c.expectAccessible(page, `${hash} at ${WIDTH} px`);
      if (hash === "#/ratelimits") await c.shot(page, "ratelimit-namespaces");
    }
    expect(wide).toEqual([]);

    // The audit log's actors: a root key by its name (its id under it), one without a name by its id, never "(no name)".
    await page.goto(`${c.service.baseUrl}/#/audit`);
    const byDeployer = page.locator("table.audit tbody tr", { hasText: "made-by-the-pipeline" }).first();
    await expect.poll(() => byDeployer.locator("td").nth(1).innerText()).toContain(`deploy-pipeline-${LONG}`);
    expect(await byDeployer.locator("td").nth(1).innerText()).toContain(deployer.keyId);
    const actors = await page.locator("table.audit tbody tr td:nth-child(2)").allInnerTexts();
    expect(actors.length).toBeGreaterThan(10);
    for (const actor of actors) expect(actor).not.toContain("(no name)");
    await c.shot(page, "audit");
    const unnamed = (await c.call("rootKeys.listRootKeys", {})).body.data as Array<{ keyId: string; name?: string }>;
    for (const rk of unnamed.filter((k) => !k.name)) {
      if (actors.some((a) => a.includes(rk.keyId))) expect(actors.find((a) => a.includes(rk.keyId))).toMatch(/^root key/);
    }

    // The last key's actions menu, open, stays inside the page.
    await page.goto(`${c.service.baseUrl}/#/keys/${apiId}`);
    const actions = page
      .locator("table.keys tbody tr")
      .last()
      .getByRole("button", { name: /^Actions for / });
    await actions.click();
    expect(await actions.getAttribute("aria-expanded")).toBe("true");
    expect(await overflow(page)).toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);
});
