// The console's identities and rate-limit pages in Chromium (Debian's, through playwright-core)
// against the key service in this process: each page's journey, the service's errors with their
// detail, a refusal naming the permission, axe in both colour schemes.
import { describe, expect, it } from "vitest";
import { RUN_BROWSER } from "./browser";
import { alertText, rand, rootKeyWith, useConsole } from "./harness";

describe.runIf(RUN_BROWSER)("console identities and rate limits in Chromium", () => {
  const c = useConsole();

  it("identities: create with meta and two shared rate limits, search, edit, list its keys, delete; errors with their detail", async () => {
    const { page, problems } = await c.open();
    await c.signIn(page);
    await page.getByRole("link", { name: "Identities" }).click();
    await page.getByRole("heading", { name: "Identities" }).waitFor();
    const ext = `user_${rand()}`;
    await page.getByText("Create an identity").click();
    await page.getByLabel("External id").fill(ext);
    await page.getByRole("button", { name: "Add a rate limit" }).click();
    await page.getByRole("button", { name: "Add a rate limit" }).click();
    await page.getByLabel("Rate limit name").nth(0).fill("requests");
    await page.getByLabel("Requests").nth(0).fill("100");
    await page.getByLabel("Window", { exact: true }).nth(0).fill("1");
    await page.getByLabel("Window unit").nth(0).selectOption("minutes");
    await page.getByLabel("Rate limit name").nth(1).fill("tokens");
    await page.getByLabel("Requests").nth(1).fill("5000");
    await page.getByLabel("Window", { exact: true }).nth(1).fill("1.5");
    await page.getByLabel("Window unit").nth(1).selectOption("hours");
    await page.getByLabel("Meta (JSON object)").fill("[1, 2]");
    await page.getByRole("button", { name: "Create identity" }).click();
    await expect.poll(() => alertText(page)).toContain("Meta must be a JSON object");
    await page.getByLabel("Meta (JSON object)").fill('{"plan": "pro"}');
    await page.getByRole("button", { name: "Create identity" }).click();
    const row = page.locator("tr", { hasText: ext });
    await row.waitFor();
    expect(await row.innerText()).toContain("requests: 100 / 1 min");
    expect(await row.innerText()).toContain("tokens: 5000 / 90 min");
    const created = await c.call("identities.getIdentity", { identity: ext });
    expect(created.body.data).toMatchObject({
      externalId: ext,
      meta: { plan: "pro" },
      ratelimits: [
        { name: "requests", limit: 100, duration: 60_000 },
        { name: "tokens", limit: 5000, duration: 5_400_000 },
      ],
    });

    // The same externalId again: the service's 409 with its detail.
    await page.getByLabel("External id").fill(ext);
    await page.getByRole("button", { name: "Create identity" }).click();
    await expect.poll(() => alertText(page)).toMatch(/Could not create an identity: .*\(409\)[\s\S]*already exists/);

    // Searched by the service.
    const other = `org_${rand()}`;
    await c.call("identities.createIdentity", { externalId: other });
    await page.getByLabel("Search", { exact: true }).fill(ext);
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await expect.poll(() => page.locator("tbody tr").count()).toBe(1);
    await c.expectAccessible(page, "identities page");
    await page.getByText("Create an identity", { exact: true }).click();
    await c.shot(page, "identities");

    // Its page: a key of the identity, meta and limits edited.
    const apiId = await c.newApi();
    const key = (await c.call("keys.createKey", { apiId, name: "owned", externalId: ext })).body.data as { keyId: string };
    await row.getByRole("link", { name: ext }).click();
    await page.getByRole("heading", { name: `Identity ${ext}` }).waitFor();
    await page.getByTestId("identity-keys").getByRole("link", { name: "owned" }).waitFor();
    await page.getByLabel("Meta (JSON object)").fill('{"plan": "team"}');
    await page.getByRole("button", { name: "Remove rate limit 2" }).click();
    await page.getByLabel("Requests").nth(0).fill("250");
    await page.getByRole("button", { name: "Save identity" }).click();
    await page.getByText("Saved.", { exact: true }).waitFor();
    const edited = (await c.call("identities.getIdentity", { identity: ext })).body.data as {
      meta: unknown;
      ratelimits: Array<{ name: string; limit: number }>;
    };
    expect(edited.meta).toEqual({ plan: "team" });
    expect(edited.ratelimits.map((r) => [r.name, r.limit])).toEqual([["requests", 250]]);
    await c.expectAccessible(page, "identity page");
    await c.shot(page, "identity");

    await page.getByTestId("identity-keys").getByRole("link", { name: "owned" }).click();
    await page.getByRole("heading", { name: "Key owned" }).waitFor();
    expect(page.url()).toContain(`#/key/${key.keyId}`);
    await page.getByRole("link", { name: ext }).click();
    await page.getByRole("button", { name: "Delete identity" }).click();
    await page.getByRole("dialog", { name: "Delete this identity?" }).getByRole("button", { name: "Cancel" }).click();
    expect((await c.call("identities.getIdentity", { identity: ext })).status).toBe(200);
    await page.getByRole("button", { name: "Delete identity" }).click();
    await page.getByRole("dialog", { name: "Delete this identity?" }).getByRole("button", { name: "Delete identity" }).click();
    await page.getByRole("heading", { name: "Identities" }).waitFor();
    expect((await c.call("identities.getIdentity", { identity: ext })).status).toBe(404);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("identities and rate limits: a root key without the permission sees a refusal naming it", async () => {
    const ns = `ns_${rand()}`;
    await c.call("ratelimit.limit", { namespace: ns, identifier: "x", limit: 1, duration: 1000, cost: 0 });
    const { page, problems } = await c.open();
    await c.signIn(page, await rootKeyWith(c, "api.*.read_api"));
    await page.goto(`${c.service.baseUrl}/#/identities`);
    await expect.poll(() => page.locator(".refusal").innerText()).toContain("identity.*.read_identity");
    expect(await page.locator(".refusal").innerText()).toContain("Not allowed with this root key");
    // No namespace this root key may read: the list says how one gets created.
    await page.goto(`${c.service.baseUrl}/#/ratelimits`);
    await expect.poll(() => page.getByTestId("no-namespaces").innerText()).toContain("No namespace yet.");
    expect(await page.getByTestId("no-namespaces").innerText()).toContain("calls ratelimit.limit with its name");
    await page.goto(`${c.service.baseUrl}/#/ratelimits/${ns}`);
    await expect.poll(() => page.locator(".refusal").innerText()).toContain("read_override");
    await c.expectAccessible(page, "rate-limit refusal");
    expect(problems).toEqual([]);
    await page.close();
  });

  it("rate limits: a namespace's usage, as the service counts it: passed and refused checks in a chart and its totals", async () => {
    const ns = `usage_${rand()}`;
    // 3 pass, 2 are refused (limit 3 per minute for one identifier), 1 passes for another identifier.
    for (let i = 0; i < 5; i++) await c.call("ratelimit.limit", { namespace: ns, identifier: "user_1", limit: 3, duration: 60_000 });
    await c.call("ratelimit.limit", { namespace: ns, identifier: "user_2", limit: 3, duration: 60_000 });
    // The service writes its counts about a second after the calls: wait until it answers them.
    const start = Date.now() - 86_400_000;
    const usage = async () => {
      const res = await c.call("ratelimit.getNamespaceUsage", { namespace: ns, start, end: Date.now() + 3_600_000 });
      const points = res.body.data as Array<{ passed: number; limited: number }>;
      return { passed: points.reduce((a, p) => a + p.passed, 0), limited: points.reduce((a, p) => a + p.limited, 0) };
    };
    await expect.poll(usage, { timeout: 30_000 }).toEqual({ passed: 4, limited: 2 });

    const { page, problems } = await c.open();
    await c.signIn(page);
    await page.goto(`${c.service.baseUrl}/#/ratelimits/${ns}`);
    const section = page.getByTestId("namespace-usage");
    await expect
      .poll(() => section.getByTestId("usage-summary").innerText())
      .toMatch(/^6 checks since .*: 4 passed, 2 refused \(33 %\)\.$/);
    const totals = section.getByTestId("outcome-totals");
    expect(await totals.locator("tr[data-outcome=PASSED] td").nth(1).innerText()).toBe("4");
    expect(await totals.locator("tr[data-outcome=LIMITED] td").nth(1).innerText()).toBe("2");
    expect(await section.locator("rect[data-outcome=PASSED]").count()).toBeGreaterThan(0);
    expect(await section.locator("svg title").first().textContent()).toContain("Rate-limit checks by outcome");
    await c.expectAccessible(page, "a namespace's usage");
    await c.shot(page, "ratelimit-usage", true);

    // By day over 30 days: the same totals; the Refresh button reads again.
    await section.getByLabel("Period").selectOption("30d");
    await expect.poll(() => section.getByTestId("usage-summary").innerText()).toMatch(/^6 checks since .*: 4 passed, 2 refused/);
    await c.call("ratelimit.limit", { namespace: ns, identifier: "user_3", limit: 3, duration: 60_000 });
    await expect.poll(usage, { timeout: 30_000 }).toEqual({ passed: 5, limited: 2 });
    await section.getByRole("button", { name: "Refresh" }).click();
    await expect
      .poll(() => section.getByTestId("usage-summary").innerText())
      .toMatch(/^7 checks since .*: 5 passed, 2 refused \(29 %\)\.$/);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("rate limits: the namespaces listed; a new one says how it is created (no error), then overrides set in minutes and hours, changed, deleted", async () => {
    const ns = `ns_${rand()}`;
    const existing = `listed_${rand()}`;
    await c.call("ratelimit.limit", { namespace: existing, identifier: "x", limit: 1, duration: 1000, cost: 0 });
    const { page, problems } = await c.open();
    await c.signIn(page);
    await page.getByRole("link", { name: "Rate limits" }).click();
    await page.getByRole("heading", { name: "Rate limits", exact: true }).waitFor();
    // The namespaces ratelimit.limit created, each a link.
    const namespaces = (await c.call("ratelimit.listNamespaces", {})).body.data as Array<{ name: string }>;
    expect(namespaces.map((n) => n.name)).toContain(existing);
    for (const { name } of namespaces) await page.getByTestId("namespaces").getByRole("link", { name, exact: true }).waitFor();
    await c.expectAccessible(page, "rate-limit namespaces");

    await page.getByLabel("Namespace", { exact: true }).fill(ns);
    await page.getByRole("button", { name: "Open namespace" }).click();
    await page.getByRole("heading", { name: `Rate limits: ${ns}` }).waitFor();
    // Not created yet: no error, but how it gets created; no override form until it exists.
    await expect.poll(() => page.getByTestId("no-namespace").innerText()).toContain(`The namespace ${ns} does not exist yet.`);
    expect(await page.getByTestId("no-namespace").innerText()).toContain("created the first time ratelimit.limit names it");
    expect(await page.getByRole("alert").count()).toBe(0);
    expect(await page.getByRole("form", { name: "Set an override" }).isVisible()).toBe(false);
    await c.expectAccessible(page, "a namespace not created yet");

    await page.getByLabel("Identifier to check").fill("user_1");
    await page.getByRole("button", { name: "Check (cost 0)" }).click();
    await expect.poll(() => page.getByTestId("probe-result").innerText()).toMatch(/user_1: 10 of 10 left until .*UTC \(no override\)/);
    await page.getByText("No overrides in this namespace.").waitFor();
    expect(await page.getByTestId("no-namespace").count()).toBe(0);

    await page.getByLabel("Identifier or pattern").fill("team_*");
    await page.getByLabel("Limit", { exact: true }).fill("500");
    await page.getByLabel("Window", { exact: true }).fill("2");
    await page.getByLabel("Window unit", { exact: true }).selectOption("hours");
    await page.getByRole("button", { name: "Set override" }).click();
    const row = page.locator("tr", { hasText: "team_*" });
    await row.waitFor();
    expect(await row.innerText()).toContain("500");
    expect(await row.locator("td").nth(2).innerText()).toBe("2 h");
    expect(
      ((await c.call("ratelimit.getOverride", { namespace: ns, identifier: "team_x" })).body.data as { duration: number }).duration,
    ).toBe(7_200_000);
    await row.getByRole("button", { name: "Change override team_*" }).click();
    expect(await page.getByLabel("Identifier or pattern").inputValue()).toBe("team_*");
    expect(await page.getByLabel("Window", { exact: true }).inputValue()).toBe("2");
    expect(await page.getByLabel("Window unit", { exact: true }).inputValue()).toBe("3600000");
    await page.getByLabel("Limit", { exact: true }).fill("0");
    await page.getByRole("button", { name: "Set override" }).click();
    await expect.poll(() => row.locator("td").nth(1).innerText()).toBe("0");
    const listed = (await c.call("ratelimit.listOverrides", { namespace: ns })).body.data as Array<{ identifier: string; limit: number }>;
    expect(listed.map((o) => [o.identifier, o.limit])).toEqual([["team_*", 0]]);

    await page.getByLabel("Identifier to check").fill("team_blue");
    await page.getByRole("button", { name: "Check (cost 0)" }).click();
    await expect.poll(() => page.getByTestId("probe-result").innerText()).toMatch(/team_blue: 0 of 0 left .*\(override rlor_/);
    await c.expectAccessible(page, "rate limits page");
    await c.shot(page, "ratelimits");

    await row.getByRole("button", { name: "Delete override team_*" }).click();
    await page.getByRole("dialog", { name: "Delete this override?" }).getByRole("button", { name: "Delete override" }).click();
    await page.getByText("No overrides in this namespace.").waitFor();
    expect((await c.call("ratelimit.listOverrides", { namespace: ns })).body.data).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });
});
