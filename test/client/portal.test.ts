// The client's portal namespace against the real local key service on 127.0.0.1:0: an operator's
// portal, a session minted with the root key and exchanged, then the end user's own calls sent
// with the access token instead of the root key; a refusal as a KeyServiceError that never
// repeats the token.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, KeyServiceConfigError, KeyServiceHttpError, type KeyServiceClient } from "keyguard/client";
import { startLocalUnderTest } from "../support/store-under-test";
import { silentLogger } from "../../src/logger";

let svc: Awaited<ReturnType<typeof startLocalUnderTest>>;
let client: KeyServiceClient;

beforeAll(async () => {
  svc = await startLocalUnderTest({});
  client = createClient({ rootKey: svc.rootKey, baseUrl: svc.baseUrl, logger: silentLogger, retry: false });
});
afterAll(async () => {
  await svc.close();
});

describe("client.portal", () => {
  it("configures a portal, mints and exchanges a session, and calls as the end user", async () => {
    const { portalId } = await client.portal.createPortal({
      name: "Acme",
      apiIds: [svc.apiId],
      returnOrigins: ["https://app.example.com"],
      actions: { create: true, disable: true, delete: true },
    });
    expect((await client.portal.listPortals({})).map((p) => p.portalId)).toContain(portalId);
    const own = await client.keys.createKey({ apiId: svc.apiId, externalId: "user_42" });
    await client.keys.createKey({ apiId: svc.apiId, externalId: "someone_else" });

    const minted = await client.portal.createSession({
      portal: portalId,
      externalId: "user_42",
      scopes: ["keys:read", "keys:reroll", "keys:create", "analytics:read"],
      returnUrl: "https://app.example.com/settings/api-keys",
    });
    expect(minted.id).toMatch(/^ps_/);
    const code = new URL(minted.url).searchParams.get("code")!;
    const { accessToken, expiresAt } = await client.portal.exchangeCode({ code });
    expect(expiresAt).toBeGreaterThan(Date.now() + 23 * 3_600_000);

    const me = client.portal.session(accessToken);
    const page = await me.listKeys();
    expect(page.map((k) => k.keyId)).toEqual([own.keyId]);
    expect(page.pagination.hasMore).toBe(false);
    expect((await me.getSession({})).externalId).toBe("user_42");
    const rerolled = await me.rerollKey({ keyId: own.keyId, expiration: 60_000 });
    expect(rerolled.keyId).not.toBe(own.keyId);
    const made = await me.createKey({ name: "staging" });
    await me.setKeyEnabled({ keyId: made.keyId, enabled: false });
    await me.deleteKey({ keyId: made.keyId });
    const series = await me.getVerifications({ startTime: Date.now() - 3_600_000, endTime: Date.now() });
    expect(series.length).toBeGreaterThanOrEqual(60);

    const replayed = await client.portal.exchangeCode({ code }).catch((e: unknown) => e);
    expect(replayed).toBeInstanceOf(KeyServiceHttpError);
    expect((replayed as KeyServiceHttpError).status).toBe(401);
    expect(JSON.stringify(replayed) + String(replayed)).not.toContain(code);
    const forged = await client.portal
      .session(`${accessToken.slice(0, -4)}zzzz`)
      .listKeys()
      .catch((e: unknown) => e);
    expect((forged as KeyServiceHttpError).status).toBe(401);
    expect(String((forged as Error).message)).not.toContain(accessToken.slice(-20));
  });

  it("refuses a session without an access token at once", () => {
    expect(() => client.portal.session("root_key_by_mistake")).toThrow(KeyServiceConfigError);
  });
});
