// The customer portal's operations on a real service (on every backend: a service-level suite),
// as production's OpenAPI document describes its five: portal.createSession's two authorisation
// stages (no portal permission: 404; a scope the root key lacks on any API of the portal: 403 for
// the whole request), the single-use 15-minute code and the 24-hour token, Cache-Control:
// no-store, every session call scoped to the session's identity (another identity's key id:
// 404); and keyguard's own: portals as an operator configures them and the hosted pages' calls.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock, start, type CallResult, type Started } from "../helpers";

const HOUR = 3_600_000;
const RETURN = "https://app.example.com/settings/api-keys";

// One story over one service and one manual clock: the exchange test lets a code expire, the reroll
// test ends a grace and counts the verification the analytics test then finds, the last test lets
// every token expire. Its tests run in the order written, also under --sequence.shuffle (which
// still shuffles this file among the others).
describe("the customer portal", { shuffle: false }, () => {
  const clock = manualClock();
  let s: Started;
  let portalId: string;
  let otherApi: string;

  /** A root key with exactly these permissions. */
  const rootKey = async (permissions: string[]) => (await s.service.createRootKey({ permissions })).rootKey;

  const expectError = (res: CallResult, status: number, kind: string) => {
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(res.body.error.type).toMatch(new RegExp(`/${kind.replace(".", "/")}$`));
    expect(res.body.error.status).toBe(status);
  };

  /** A session for `externalId` with these scopes; answers the access token. */
  async function session(externalId: string, scopes: string[], portal = portalId): Promise<string> {
    const minted = await s.call("portal.createSession", { portal, externalId, scopes, returnUrl: RETURN });
    expect(minted.status, JSON.stringify(minted.body)).toBe(200);
    const code = new URL(minted.body.data.url).searchParams.get("code")!;
    const exchanged = await s.call("portal.exchangeCode", { code }, null);
    expect(exchanged.status, JSON.stringify(exchanged.body)).toBe(200);
    return exchanged.body.data.accessToken as string;
  }

  beforeAll(async () => {
    s = await start({ now: clock.now });
    otherApi = (await s.call("apis.createApi", { name: "elsewhere" })).body.data.apiId;
    const created = await s.call("portal.createPortal", {
      name: "Acme developers",
      apiIds: [s.apiId],
      accentColor: "#0a7cff",
      logoUrl: "https://acme.example.com/logo.svg",
      docs: "# Acme API\n\nSend `Authorization: Bearer <key>`.",
      returnOrigins: ["https://app.example.com"],
      keyTemplate: { prefix: "acme", permissions: ["things.read"], credits: { remaining: 50 }, expiresIn: 30 * 24 * HOUR },
      rerollGraceMs: HOUR,
      actions: { create: true, disable: true, delete: true },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    portalId = created.body.data.portalId;
  });
  afterAll(() => s?.close());

  describe("portals as an operator configures them", () => {
    it("createPortal, getPortal, listPortals, updatePortal and deletePortal, with their permissions", async () => {
      const got = await s.call("portal.getPortal", { portalId });
      expect(got.body.data).toEqual({
        portalId,
        name: "Acme developers",
        apiIds: [s.apiId],
        enabled: true,
        logoUrl: "https://acme.example.com/logo.svg",
        accentColor: "#0a7cff",
        docs: "# Acme API\n\nSend `Authorization: Bearer <key>`.",
        returnOrigins: ["https://app.example.com"],
        keyTemplate: { prefix: "acme", permissions: ["things.read"], credits: { remaining: 50 }, expiresIn: 30 * 24 * HOUR },
        rerollGraceMs: HOUR,
        actions: { create: true, disable: true, delete: true },
        createdAt: clock.t,
      });
      const other = (await s.call("portal.createPortal", { name: "Second", apiIds: [otherApi] })).body.data.portalId as string;
      const listed = (await s.call("portal.listPortals", {})).body.data.map((p: { portalId: string }) => p.portalId);
      expect(listed).toEqual(expect.arrayContaining([portalId, other]));
      const updated = await s.call("portal.updatePortal", { portalId: other, name: "Renamed", docs: "x", accentColor: null });
      expect(updated.body.data).toMatchObject({ portalId: other, name: "Renamed", docs: "x", rerollGraceMs: 24 * HOUR });
      expect(updated.body.data).not.toHaveProperty("accentColor");
      expectError(await s.call("portal.createPortal", { name: "x", apiIds: ["api_missing1"] }), 404, "data.api_not_found");
      expectError(await s.call("portal.updatePortal", { portalId: "portal_missing", name: "x" }), 404, "data.portal_not_found");
      const reader = await rootKey(["portal.*.read_portal"]);
      expect((await s.call("portal.getPortal", { portalId }, reader)).status).toBe(200);
      expectError(await s.call("portal.deletePortal", { portalId: other }, reader), 403, "authorization.insufficient_permissions");
      expect((await s.call("portal.deletePortal", { portalId: other })).status).toBe(200);
      expectError(await s.call("portal.getPortal", { portalId: other }), 404, "data.portal_not_found");
    });

    it("a portal's changes are in the audit log", async () => {
      const events = (await s.call("audit.listEvents", { operation: "portal.createPortal" })).body.data;
      expect(events.some((e: { targets: string[] }) => e.targets.includes(portalId))).toBe(true);
    });
  });

  describe("portal.createSession", () => {
    it("answers an id and a URL carrying a single-use code, never cached", async () => {
      const res = await s.call("portal.createSession", { portal: portalId, externalId: "user_1", scopes: ["keys:read"] });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ id: expect.stringMatching(/^ps_/), url: expect.stringMatching(/\/portal\/\?code=pst_/) });
      expect(Object.keys(res.body.data).sort()).toEqual(["id", "url"]);
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(res.headers.get("pragma")).toBe("no-cache");
      // The code is a credential: kept as a hash only.
      const code = new URL(res.body.data.url).searchParams.get("code")!;
      expect(JSON.stringify(await s.service.exportState())).not.toContain(code.slice(-20));
    });

    it("stage one: without the portal permission the portal is not found (404), whether it exists or not", async () => {
      const none = await rootKey(["api.*.read_key", "api.*.read_api"]);
      const body = { portal: portalId, externalId: "user_1", scopes: ["keys:read"] };
      expectError(await s.call("portal.createSession", body, none), 404, "data.portal_not_found");
      expectError(await s.call("portal.createSession", { ...body, portal: "portal_missing" }), 404, "data.portal_not_found");
      const onThisOne = await rootKey([`portal.${portalId}.create_portal_session`, "api.*.read_key", "api.*.read_api"]);
      expect((await s.call("portal.createSession", body, onThisOne)).status).toBe(200);
      const second = (await s.call("portal.createPortal", { name: "Second", apiIds: [s.apiId] })).body.data.portalId;
      expectError(await s.call("portal.createSession", { ...body, portal: second }, onThisOne), 404, "data.portal_not_found");
    });

    it("stage two: a scope the root key does not hold on every API of the portal is a 403 for the whole request", async () => {
      const both = (await s.call("portal.createPortal", { name: "Both", apiIds: [s.apiId, otherApi] })).body.data.portalId;
      const onOne = await rootKey(["portal.*.create_portal_session", `api.${s.apiId}.read_key`, `api.${s.apiId}.read_api`]);
      const body = { portal: both, externalId: "user_1", scopes: ["keys:read"] };
      const refused = await s.call("portal.createSession", body, onOne);
      expectError(refused, 403, "authorization.insufficient_permissions");
      expect(refused.body.error.detail).toContain(`api.${otherApi}.read_key`);
      const onBoth = await rootKey(["portal.*.create_portal_session", "api.*.read_key", "api.*.read_api"]);
      expect((await s.call("portal.createSession", body, onBoth)).status).toBe(200);
      // keys:read and analytics:read, without read_analytics: nothing is minted.
      const before = (await s.service.exportState()).portalSessions;
      expectError(
        await s.call("portal.createSession", { ...body, scopes: ["keys:read", "analytics:read"] }, onBoth),
        403,
        "authorization.insufficient_permissions",
      );
      expectError(
        await s.call("portal.createSession", { ...body, scopes: ["keys:reroll"] }, onBoth),
        403,
        "authorization.insufficient_permissions",
      );
      expect((await s.service.exportState()).portalSessions).toEqual(before);
    });

    it("a disabled portal is a 403; a returnUrl off the portal's origins is a 400; an unknown scope is a 400", async () => {
      const off = (await s.call("portal.createPortal", { name: "Off", apiIds: [s.apiId], enabled: false })).body.data.portalId;
      expectError(
        await s.call("portal.createSession", { portal: off, externalId: "u", scopes: ["keys:read"] }),
        403,
        "authorization.forbidden",
      );
      const elsewhere = { portal: portalId, externalId: "u", scopes: ["keys:read"], returnUrl: "https://evil.example.net/x" };
      const bad = await s.call("portal.createSession", elsewhere);
      expectError(bad, 400, "application.invalid_input");
      expect(bad.body.error.errors[0].location).toBe("body.returnUrl");
      expect(JSON.stringify(bad.body)).not.toContain("evil.example.net");
      expectError(
        await s.call("portal.createSession", { portal: portalId, externalId: "u", scopes: ["preview"] }),
        400,
        "application.invalid_input",
      );
      expectError(
        await s.call("portal.createSession", { portal: portalId, externalId: "u", scopes: [] }),
        400,
        "application.invalid_input",
      );
    });
  });

  describe("portal.exchangeCode", () => {
    async function code(): Promise<string> {
      const res = await s.call("portal.createSession", { portal: portalId, externalId: "user_x", scopes: ["keys:read"] });
      return new URL(res.body.data.url).searchParams.get("code")!;
    }

    it("exchanges a code once, unauthenticated, for a 24-hour token; a replayed code is a 401", async () => {
      const c = await code();
      const res = await s.call("portal.exchangeCode", { code: c }, null);
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ accessToken: expect.stringMatching(/^pat_/), expiresAt: clock.t + 24 * HOUR });
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(JSON.stringify(await s.service.exportState())).not.toContain(res.body.data.accessToken.slice(-20));
      const replayed = await s.call("portal.exchangeCode", { code: c }, null);
      expectError(replayed, 401, "authentication.portal_session_not_found");
      expect(replayed.headers.get("cache-control")).toBe("no-store");
    });

    it("a code past its 15 minutes, a forged one and another's shape are 401s that never repeat the code", async () => {
      const c = await code();
      clock.advance(15 * 60_000);
      expectError(await s.call("portal.exchangeCode", { code: c }, null), 401, "authentication.portal_session_not_found");
      const fresh = await code();
      const forged = fresh.slice(0, -3) + (fresh.endsWith("aaa") ? "bbb" : "aaa");
      const res = await s.call("portal.exchangeCode", { code: forged }, null);
      expectError(res, 401, "authentication.portal_session_not_found");
      expect(JSON.stringify(res.body)).not.toContain(forged);
      expectError(await s.call("portal.exchangeCode", { code: "nothing" }, null), 401, "authentication.portal_session_not_found");
      expect((await s.call("portal.exchangeCode", { code: fresh }, null)).status).toBe(200);
    });
  });

  describe("a session's own keys", () => {
    let mine: { keyId: string; key: string };
    let theirs: { keyId: string; key: string };
    let token: string;

    beforeAll(async () => {
      mine = await s.createKey({ externalId: "alice", name: "production" });
      await s.createKey({ externalId: "alice", apiId: otherApi, name: "not in the portal" });
      theirs = await s.createKey({ externalId: "bob" });
      token = await session("alice", ["keys:read", "keys:reroll", "keys:create", "analytics:read"]);
    });

    it("portal.listKeys answers the identity's keys in the portal's APIs only, never cached", async () => {
      const res = await s.call("portal.listKeys", {}, token);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data.map((k: { keyId: string }) => k.keyId)).toEqual([mine.keyId]);
      expect(res.body.data[0]).toMatchObject({ keyId: mine.keyId, name: "production", identity: { externalId: "alice" } });
      expect(res.body.pagination).toEqual({ hasMore: false });
      expect(res.headers.get("cache-control")).toBe("no-store");
      // The cookie production's portal keeps the token in works as well.
      const byCookie = await s.call("portal.listKeys", {}, null, {
        headers: { "content-type": "application/json", cookie: `portal_session=${token}` },
      });
      expect(byCookie.body.data.map((k: { keyId: string }) => k.keyId)).toEqual([mine.keyId]);
    });

    it("no token is a 400 (as production answers it), a root key is a 403, a scope not granted is a 403", async () => {
      expectError(await s.call("portal.listKeys", {}, null), 400, "authentication.portal_token_missing");
      expectError(await s.call("portal.listKeys", {}), 403, "authorization.forbidden");
      expectError(await s.call("portal.listKeys", {}, "pat_x_y"), 401, "authentication.portal_session_not_found");
      const readOnly = await session("alice", ["keys:read"]);
      const refused = await s.call("portal.rerollKey", { keyId: mine.keyId, expiration: 0 }, readOnly);
      expectError(refused, 403, "authorization.insufficient_permissions");
      expectError(
        await s.call("portal.getVerifications", { startTime: 0, endTime: HOUR }, readOnly),
        403,
        "authorization.insufficient_permissions",
      );
    });

    it("another identity's key id is a 404, whatever the request says", async () => {
      expectError(await s.call("portal.rerollKey", { keyId: theirs.keyId, expiration: 0 }, token), 404, "data.key_not_found");
      expectError(await s.call("portal.setKeyEnabled", { keyId: theirs.keyId, enabled: false }, token), 404, "data.key_not_found");
      expectError(await s.call("portal.deleteKey", { keyId: theirs.keyId }, token), 404, "data.key_not_found");
      expectError(await s.call("portal.rerollKey", { keyId: "key_missing", expiration: 0 }, token), 404, "data.key_not_found");
      expect((await s.verify(theirs.key)).valid).toBe(true);
    });

    it("portal.rerollKey: the new key shown once, the old one VALID until the portal's grace ends, then EXPIRED; audited as the session", async () => {
      // Asked for 10 hours: the portal's grace (1 hour) is the most an end user gets.
      const res = await s.call("portal.rerollKey", { keyId: mine.keyId, expiration: 10 * HOUR }, token);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data).toEqual({ keyId: expect.stringMatching(/^key_/), key: expect.any(String) });
      expect((await s.verify(res.body.data.key)).valid).toBe(true);
      expect((await s.verify(mine.key)).code).toBe("VALID");
      clock.advance(HOUR + 60_000);
      expect((await s.verify(mine.key)).code).toBe("EXPIRED");
      const audit = (await s.call("audit.listEvents", { operation: "portal.rerollKey" })).body.data[0];
      expect(audit).toMatchObject({
        actorId: expect.stringMatching(/^ps_/),
        actorName: "alice",
        targets: [res.body.data.keyId, mine.keyId],
      });
      mine = res.body.data;
    });

    it("portal.getVerifications: a zero-filled series by outcome, of the identity's verifications only", async () => {
      const t0 = Math.floor(clock.t / 60_000) * 60_000;
      await s.verify(mine.key);
      await s.verify(mine.key);
      await s.verify(theirs.key);
      await s.call("portal.setKeyEnabled", { keyId: mine.keyId, enabled: false }, token);
      expect((await s.verify(mine.key)).code).toBe("DISABLED");
      await s.call("portal.setKeyEnabled", { keyId: mine.keyId, enabled: true }, token);
      await s.service.flushVerifications();
      const res = await s.call("portal.getVerifications", { startTime: t0 - 5 * 60_000, endTime: t0 + 5 * 60_000 }, token);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data).toHaveLength(10);
      const zero = {
        total: 0,
        valid: 0,
        rateLimited: 0,
        insufficientPermissions: 0,
        forbidden: 0,
        disabled: 0,
        expired: 0,
        usageExceeded: 0,
      };
      for (const [i, point] of res.body.data.entries()) {
        expect(point.time).toBe(t0 - 5 * 60_000 + i * 60_000);
        if (point.time !== t0) expect(point).toEqual({ time: point.time, ...zero });
      }
      // The old key's EXPIRED verification of the reroll test fell in this minute too.
      expect(res.body.data[5]).toEqual({ time: t0, ...zero, total: 4, valid: 2, disabled: 1, expired: 1 });
      // One key only; another identity's key gives zeros.
      const byTheirs = await s.call("portal.getVerifications", { startTime: t0, endTime: t0 + 60_000, keyId: theirs.keyId }, token);
      expect(byTheirs.body.data).toEqual([{ time: t0, ...zero }]);
      // Hours for a day's window, days beyond four days.
      const day = await s.call("portal.getVerifications", { startTime: t0, endTime: t0 + 24 * HOUR }, token);
      expect(day.body.data).toHaveLength(24 + (t0 % HOUR === 0 ? 0 : 1));
      expectError(await s.call("portal.getVerifications", { startTime: t0, endTime: t0 }, token), 400, "application.invalid_input");
      expectError(await s.call("portal.getVerifications", { startTime: 0, endTime: t0 }, token), 400, "application.invalid_input");
    });

    it("portal.createKey makes a key from the portal's template, owned by the session's identity", async () => {
      const res = await s.call("portal.createKey", { name: "staging" }, token);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data.key).toMatch(/^acme_/);
      const info = (await s.call("keys.getKey", { keyId: res.body.data.keyId })).body.data;
      expect(info).toMatchObject({
        name: "staging",
        identity: { externalId: "alice" },
        credits: { remaining: 50 },
        permissions: ["things.read"],
        expires: clock.t + 30 * 24 * HOUR,
      });
      const listed = (await s.call("portal.listKeys", {}, token)).body.data.map((k: { keyId: string }) => k.keyId);
      expect(listed).toContain(res.body.data.keyId);
      expect((await s.call("portal.deleteKey", { keyId: res.body.data.keyId }, token)).status).toBe(200);
      expect((await s.verify(res.body.data.key)).code).toBe("NOT_FOUND");
    });

    it("an action the operator did not allow is a 403; portal.getSession answers the branding and scopes", async () => {
      const info = await s.call("portal.getSession", {}, token);
      expect(info.body.data).toMatchObject({
        portalId,
        externalId: "alice",
        scopes: ["keys:read", "keys:create", "keys:reroll", "analytics:read"],
        preview: false,
        returnUrl: RETURN,
        name: "Acme developers",
        accentColor: "#0a7cff",
        actions: { create: true, disable: true, delete: true },
      });
      await s.call("portal.updatePortal", { portalId, actions: { create: false, disable: false, delete: false } });
      expectError(await s.call("portal.createKey", {}, token), 403, "authorization.forbidden");
      expectError(await s.call("portal.deleteKey", { keyId: mine.keyId }, token), 403, "authorization.forbidden");
      await s.call("portal.updatePortal", { portalId, actions: { create: true, disable: true, delete: true } });
    });

    it("a token past its 24 hours, or of a disabled portal, is a 401", async () => {
      const fresh = await session("alice", ["keys:read"]);
      await s.call("portal.updatePortal", { portalId, enabled: false });
      expectError(await s.call("portal.listKeys", {}, fresh), 401, "authentication.portal_session_not_found");
      await s.call("portal.updatePortal", { portalId, enabled: true });
      expect((await s.call("portal.listKeys", {}, fresh)).status).toBe(200);
      clock.advance(24 * HOUR);
      const expired = await s.call("portal.listKeys", {}, fresh);
      expectError(expired, 401, "authentication.portal_session_not_found");
      expect(expired.body.error.detail).toBe("The portal session is invalid or has expired.");
    });
  });
});
