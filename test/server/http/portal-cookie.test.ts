// The hosted portal's session cookie behind a proxy that ends TLS (test/server/http/tls.test.ts has
// the service's own TLS): a service that trusts its proxy (`trustProxy`) sets the cookies `Secure`
// when the proxy says `X-Forwarded-Proto: https`; a service that trusts none ignores the header.
import { request } from "node:http";
import { afterAll, describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import { createClient } from "keyguard/client";
import { startLocalKeyService, type RunningLocalKeyService } from "keyguard/server";
import { GENEROUS } from "../../support/time-limits";

const started: RunningLocalKeyService[] = [];
afterAll(() => Promise.all(started.map((s) => s.close())));

async function start(trustProxy: boolean): Promise<RunningLocalKeyService> {
  const running = await startLocalKeyService({ console: true, trustProxy, logger: silentLogger });
  started.push(running);
  return running;
}

/** A fresh session's link (`…/portal/?code=pst_…`) on `running`'s service. */
async function sessionLink(running: RunningLocalKeyService): Promise<string> {
  const client = createClient({ rootKey: running.rootKey, baseUrl: running.baseUrl, ...GENEROUS });
  const { portalId } = await client.portal.createPortal({ name: "Acme developers", apiIds: [running.apiId] });
  const { url } = await client.portal.createSession({ portal: portalId, externalId: "user_1", scopes: ["keys:read"] });
  await client.close();
  return url;
}

/** Follows a link as a proxy would pass it on, without following the redirect: the status and the cookies set. */
function exchange(url: string, forwardedProto: string): Promise<{ status: number; cookies: string[] }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { "X-Forwarded-Proto": forwardedProto }, agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, cookies: res.headers["set-cookie"] ?? [] }));
    });
    req.on("error", reject);
    req.end();
  });
}

const secure = (cookie: string) => /;\s*Secure(;|$)/.test(cookie);

describe("the portal session cookie behind a proxy", () => {
  it("is Secure when a trusted proxy says https, and not when it says http", async () => {
    const running = await start(true);
    const viaHttps = await exchange(await sessionLink(running), "https");
    expect(viaHttps.status).toBe(303);
    expect(viaHttps.cookies.map((c) => [c.slice(0, c.indexOf("=")), secure(c)])).toEqual([
      ["portal_session", true],
      ["portal_return", true],
    ]);
    const viaHttp = await exchange(await sessionLink(running), "http");
    expect(viaHttp.status).toBe(303);
    expect(viaHttp.cookies.map(secure)).toEqual([false, false]);
  });

  it("is not Secure when a service that trusts no proxy is told https", async () => {
    const running = await start(false);
    const told = await exchange(await sessionLink(running), "https");
    expect(told.status).toBe(303);
    expect(told.cookies.map(secure)).toEqual([false, false]);
  });
});
