// Someone else's portal link in Chromium (login CSRF, docs/portal-pages.md): a page of another site
// that loads a session's link as an image or a frame spends the code but plants no session (the
// cookie is SameSite=Strict, kept from a top-level navigation only); the same page navigating the
// tab to a link does sign the browser in (the limit the docs state), and the page names that account.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RUN_BROWSER } from "./browser";
import { rand, useConsole, type Harness } from "./harness";

/** The other site: `localhost` on its own port, while the service is at 127.0.0.1 (another site). */
let other: Server;
let otherOrigin = "";
/** The page the other site serves next. */
let otherPage = "";

async function link(c: Harness, portal: string, externalId = `someone-${rand()}`): Promise<string> {
  const res = await c.call("portal.createSession", { portal, externalId, scopes: ["keys:read"] });
  expect(res.status).toBe(200);
  return (res.body.data as { url: string }).url;
}

/** Whether the code of `url` can still be exchanged (spends it when it can). */
async function unspent(c: Harness, url: string): Promise<boolean> {
  const code = new URL(url).searchParams.get("code");
  return (await c.call("portal.exchangeCode", { code }, "")).status === 200;
}

describe.runIf(RUN_BROWSER)("someone else's portal link", () => {
  const c = useConsole();
  let portalId = "";

  beforeAll(async () => {
    other = createServer((_req, res) => {
      res.setHeader("content-type", "text/html");
      res.end(otherPage);
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    otherOrigin = `http://localhost:${(other.address() as AddressInfo).port}`;
    const created = await c.call("portal.createPortal", { name: "Acme API", apiIds: [await c.newApi()] });
    expect(created.status).toBe(200);
    portalId = (created.body.data as { portalId: string }).portalId;
  });
  afterAll(async () => {
    other?.closeAllConnections();
    await new Promise<void>((resolve) => (other ? other.close(() => resolve()) : resolve()));
  });

  /** The session cookie the browser would send to the portal's pages (its Path is /portal). */
  const sessionCookie = async () =>
    (await c.browser.context.cookies(`${c.service.baseUrl}/portal/`)).find((cookie) => cookie.name === "portal_session") ?? null;

  it("an image or a frame of another site spends the code and plants no session", async () => {
    await c.browser.context.clearCookies();
    const asImage = await link(c, portalId);
    const asFrame = await link(c, portalId);
    otherPage = `<!doctype html><title>elsewhere</title><img src="${asImage}" alt=""><iframe src="${asFrame}"></iframe>`;
    const page = await c.browser.context.newPage();
    const answered = (url: string) => page.waitForResponse((r) => r.url() === url, { timeout: 30_000 });
    const both = Promise.all([answered(asImage), answered(asFrame)]);
    await page.goto(`${otherOrigin}/`);
    const responses = await both;
    expect(responses.map((r) => r.status())).toEqual([303, 303]);
    // The service exchanged both codes (they are spent), yet the browser kept no session.
    expect(await unspent(c, asImage)).toBe(false);
    expect(await unspent(c, asFrame)).toBe(false);
    expect(await sessionCookie()).toBeNull();
    await page.close();
  });

  it("a navigation of the tab to the link does sign in (what the docs say cannot be told apart)", async () => {
    await c.browser.context.clearCookies();
    const planted = await link(c, portalId, "the-other-account");
    otherPage = `<!doctype html><title>elsewhere</title><a href="${planted}">open</a>`;
    const page = await c.browser.context.newPage();
    await page.goto(`${otherOrigin}/`);
    await Promise.all([page.waitForURL(`${c.service.baseUrl}/portal/`), page.getByRole("link", { name: "open" }).click()]);
    await expect.poll(sessionCookie, { timeout: 30_000 }).toMatchObject({ httpOnly: true, sameSite: "Strict" });
    // The page says whose account this is.
    expect(await page.getByTestId("signed-in-as").innerText()).toBe("Signed in as the-other-account");
    await page.close();
  });
});
