// Interop: the official SDK (@unkey/api 2.x) has production's five portal operations. Driven
// unchanged against the local key service: createSession with the root key, exchangeCode
// unauthenticated, then listKeys, rerollKey and getVerifications with the session in the
// `portal_session` cookie, as the SDK sends it. Every answer passes the SDK's validation; a
// replayed code and another identity's key map to its typed errors.
import { Unkey } from "@unkey/api";
import * as errors from "@unkey/api/models/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "keyguard/client";
import { silentLogger } from "keyguard";
import type { RunningLocalKeyService } from "keyguard/server";
import { startLocalUnderTest } from "../support/store-under-test";

let local: RunningLocalKeyService;
let unkey: Unkey;
let portalId: string;

beforeAll(async () => {
  local = await startLocalUnderTest({ logger: silentLogger });
  unkey = new Unkey({ rootKey: local.rootKey, serverURL: local.baseUrl, retryConfig: { strategy: "none" } });
  const client = createClient({ rootKey: local.rootKey, baseUrl: local.baseUrl, logger: silentLogger, retry: false });
  ({ portalId } = await client.portal.createPortal({ name: "SDK", apiIds: [local.apiId], returnOrigins: ["https://app.example.com"] }));
});
afterAll(() => local?.close());

describe("@unkey/api's portal operations against the local service", () => {
  it("createSession, exchangeCode, listKeys, rerollKey and getVerifications", async () => {
    const own = await unkey.keys.createKey({ apiId: local.apiId, externalId: "sdk_user", name: "own" });
    const other = await unkey.keys.createKey({ apiId: local.apiId, externalId: "someone_else" });
    const session = await unkey.portal.createSession({
      portal: portalId,
      externalId: "sdk_user",
      scopes: ["keys:read", "keys:reroll", "analytics:read"],
      returnUrl: "https://app.example.com/settings",
    });
    expect(session.result.data.id).toMatch(/^ps_/);
    // The SDK hands the answer's headers over: production's no-store and no-cache.
    expect(session.headers["cache-control"]).toEqual(["no-store"]);
    expect(session.headers["pragma"]).toEqual(["no-cache"]);
    const code = new URL(session.result.data.url).searchParams.get("code")!;
    const exchanged = await unkey.portal.exchangeCode({ code });
    expect(exchanged.headers["cache-control"]).toEqual(["no-store"]);
    const portalSession = exchanged.result.data.accessToken;
    await expect(unkey.portal.exchangeCode({ code })).rejects.toBeInstanceOf(errors.UnauthorizedErrorResponse);

    const listed = await unkey.portal.listKeys({ portalSession }, {});
    expect(listed.result.data.map((k) => k.keyId)).toEqual([own.data.keyId]);

    const rerolled = await unkey.portal.rerollKey({ portalSession }, { keyId: own.data.keyId, expiration: 60_000 });
    expect(rerolled.data.keyId).toMatch(/^key_/);
    await expect(unkey.portal.rerollKey({ portalSession }, { keyId: other.data.keyId, expiration: 0 })).rejects.toBeInstanceOf(
      errors.NotFoundErrorResponse,
    );

    const now = Date.now();
    const series = await unkey.portal.getVerifications({ portalSession }, { startTime: now - 3_600_000, endTime: now });
    expect(series.data.length).toBeGreaterThanOrEqual(60);
    expect(series.data[0]).toEqual(expect.objectContaining({ total: 0, valid: 0, usageExceeded: 0 }));
  });
});
