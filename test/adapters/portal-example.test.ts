// examples/portal.ts against the local key service: a signed-in user's "Settings → API keys" is a
// 303 to a portal URL whose code exchanges for a session of that user; no user, to the login.
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type KeyServiceClient } from "keyguard/client";
import { startLocalKeyService, type RunningLocalKeyService } from "keyguard/server";
import { silentLogger } from "keyguard";
import { portalApp } from "../../examples/portal";

let svc: RunningLocalKeyService;
let client: KeyServiceClient;
let server: Server;
let base: string;

beforeAll(async () => {
  svc = await startLocalKeyService({ logger: silentLogger });
  client = createClient({ rootKey: svc.rootKey, baseUrl: svc.baseUrl, logger: silentLogger, retry: false });
  const { portalId } = await client.portal.createPortal({ name: "Example", apiIds: [svc.apiId], returnOrigins: ["http://127.0.0.1:3000"] });
  server = portalApp(client, portalId, "http://127.0.0.1:3000/settings").listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await svc?.close();
});

describe("examples/portal.ts", () => {
  it("redirects a signed-in user to their portal session, and nobody else", async () => {
    await client.keys.createKey({ apiId: svc.apiId, externalId: "user_7", name: "theirs" });
    const res = await fetch(`${base}/settings/api-keys`, { headers: { "x-user-id": "user_7" }, redirect: "manual" });
    expect(res.status).toBe(303);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const url = new URL(res.headers.get("location")!);
    expect(url.origin).toBe(svc.baseUrl);
    expect(url.pathname).toBe("/portal/");
    const { accessToken } = await client.portal.exchangeCode({ code: url.searchParams.get("code")! });
    const keys = await client.portal.session(accessToken).listKeys();
    expect(keys.map((k) => k.name)).toEqual(["theirs"]);

    const anonymous = await fetch(`${base}/settings/api-keys`, { redirect: "manual" });
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get("location")).toBe("/login");
  });
});
