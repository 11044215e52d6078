// What receivers of Standard Webhooks (Svix-style) expect beside delivery itself, end to end with a
// receiver in a process of its own: a rotated secret signs beside the old one for the overlap (both
// checked with the `standardwebhooks` reference library), an endpoint changed, paused and resumed
// (its events kept meanwhile), the catalogue of event types whose schemas every message sent
// matches, one message with its attempts, every failed message since a time sent again (once), the
// deliveries a page at a time and by status, a test event, and the events of APIs, permissions,
// roles, identities, rate-limit overrides and portals, and of what a portal session does to its
// keys (the session as the actor).
import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { memoryStorage } from "keyguard/server";
import { Value } from "typebox/value";
import { afterEach, describe, expect, it } from "vitest";
import { refusedUrl } from "../../support/loopback-ports";
import { receiver, stopReceivers, type Received } from "../../support/webhook-receiver-process";
import { manualClock, start, type Started } from "../helpers";

const services: Started[] = [];
afterEach(async () => {
  stopReceivers();
  for (const s of services.splice(0)) await s.close();
});

async function service(options: Parameters<typeof start>[0] = {}): Promise<Started> {
  const s = await start({ webhooksAllowPrivate: true, ...options });
  services.push(s);
  return s;
}

async function ok(s: Started, op: string, body: unknown) {
  const res = await s.call(op, body);
  expect(res.status, `${op}: ${JSON.stringify(res.body)}`).toBe(200);
  return res.body.data;
}

const headers = (got: Received) => ({ "webhook-id": got.id, "webhook-timestamp": got.timestamp, "webhook-signature": got.signature });
const verifies = (secret: string, got: Received): boolean => {
  try {
    new Webhook(secret).verify(got.body, headers(got));
    return true;
  } catch {
    return false;
  }
};
const typeOf = (got: Received) => (JSON.parse(got.body) as { type: string }).type;
const deliveries = async (s: Started, body: Record<string, unknown> = {}) =>
  (await s.call("webhooks.listDeliveries", body)).body.data as Array<Record<string, unknown>>;

describe("webhooks as receivers expect them", () => {
  it("signs with the old and the new secret during a rotation's overlap, with the new one only after it", async () => {
    const clock = manualClock();
    const r = await receiver();
    const s = await service({ now: clock.now });
    const { endpointId, secret: old } = await ok(s, "webhooks.createEndpoint", { url: r.url, events: ["root_key.created"] });
    const rotated = await ok(s, "webhooks.rotateSecret", { endpointId, overlapHours: 2 });
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(old);
    expect(rotated.previousSecretExpiresAt).toBe(clock.now() + 2 * 3_600_000);
    expect((await ok(s, "webhooks.listEndpoints", {}))[0]).toMatchObject({ previousSecretExpiresAt: rotated.previousSecretExpiresAt });

    await ok(s, "rootKeys.createRootKey", { permissions: ["api.*.read_api"] });
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(1);
    const during = r.received[0]!;
    expect(during.signature.split(" ")).toHaveLength(2);
    expect(verifies(old, during)).toBe(true);
    expect(verifies(rotated.secret, during)).toBe(true);

    clock.advance(2 * 3_600_000);
    await ok(s, "rootKeys.createRootKey", { permissions: ["api.*.read_api"] });
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(2);
    const after = r.received[1]!;
    expect(after.signature.split(" ")).toHaveLength(1);
    expect(verifies(rotated.secret, after)).toBe(true);
    expect(verifies(old, after)).toBe(false);
    expect((await ok(s, "webhooks.listEndpoints", {}))[0].previousSecretExpiresAt).toBeUndefined();

    // Neither secret is in the audit log.
    const audit = JSON.stringify((await s.call("audit.listEvents", { operation: "webhooks.rotateSecret" })).body.data);
    expect(audit).toContain(endpointId);
    expect(audit).not.toContain(rotated.secret.slice("whsec_".length));
    expect(audit).not.toContain(old.slice("whsec_".length));
  });

  it("keeps both secrets of a rotation sealed with the service's encryption key", async () => {
    const r = await receiver();
    const storage = memoryStorage();
    const s = await service({ storage, encryptionKey: randomBytes(32).toString("base64") });
    const { endpointId, secret: old } = await ok(s, "webhooks.createEndpoint", { url: r.url, events: ["key.created"] });
    const { secret } = await ok(s, "webhooks.rotateSecret", { endpointId });
    const stored = (await storage.direct.getMeta(`webhooks.${s.workspaceId}`))!;
    for (const plain of [old, secret]) expect(stored).not.toContain(plain.slice("whsec_".length));
    await s.createKey();
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(1);
    expect(verifies(old, r.received[0]!)).toBe(true);
    expect(verifies(secret, r.received[0]!)).toBe(true);
  });

  it("changes an endpoint's URL and events; a refused change names the field and changes nothing", async () => {
    const first = await receiver();
    const second = await receiver();
    const s = await service();
    const { endpointId } = await ok(s, "webhooks.createEndpoint", { url: first.url, events: ["key.created"] });
    const refused = await s.call("webhooks.updateEndpoint", { endpointId, events: ["key.nope"] });
    expect(refused.status).toBe(400);
    expect(refused.body.error.errors[0]).toMatchObject({ location: "body.events[0]", message: "is not an event type" });
    expect(JSON.stringify(refused.body)).not.toContain("key.nope");
    const updated = await ok(s, "webhooks.updateEndpoint", { endpointId, url: second.url, events: ["api.created"], description: "ops" });
    expect(updated).toMatchObject({ endpointId, url: second.url, events: ["api.created"], description: "ops" });
    await s.createKey();
    const { apiId } = await ok(s, "apis.createApi", { name: "changed" });
    await expect.poll(() => second.received.map(typeOf), { timeout: 10_000 }).toEqual(["api.created"]);
    expect(JSON.parse(second.received[0]!.body).data.apiId).toBe(apiId);
    expect(first.received).toHaveLength(0);
    const missing = await s.call("webhooks.updateEndpoint", { endpointId: "whep_notThere", events: ["*"] });
    expect(missing.status).toBe(404);
  });

  it("keeps a paused endpoint's events and delivers them once it is resumed", async () => {
    const r = await receiver();
    const s = await service();
    const { endpointId } = await ok(s, "webhooks.createEndpoint", { url: r.url, events: ["key.created"] });
    expect(await ok(s, "webhooks.pauseEndpoint", { endpointId })).toMatchObject({ endpointId, pausedAt: expect.any(Number) });
    await s.createKey();
    await s.createKey();
    // Taken by the dispatcher and held (due again in an hour), not tried.
    const held = Date.now() + 30 * 60_000;
    await expect
      .poll(async () => (await deliveries(s)).map((d) => (d.nextAttemptAt as number) > held), { timeout: 10_000 })
      .toEqual([true, true]);
    expect(r.received).toHaveLength(0);
    expect((await deliveries(s)).map((d) => [d.status, d.attempts])).toEqual([
      ["pending", 0],
      ["pending", 0],
    ]);
    const resumed = await ok(s, "webhooks.resumeEndpoint", { endpointId });
    expect(resumed.pausedAt).toBeUndefined();
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(2);
    await expect.poll(async () => (await deliveries(s)).map((d) => d.status), { timeout: 10_000 }).toEqual(["delivered", "delivered"]);
  });

  it("gives the messages kept during a pause longer than the retry window a whole window from the resume", async () => {
    const clock = manualClock();
    const r = await receiver({ RECEIVER_FAIL_FIRST: "1" });
    const s = await service({ now: clock.now, webhookRetryHours: 1 });
    const { endpointId } = await ok(s, "webhooks.createEndpoint", { url: r.url, events: ["key.created"] });
    await ok(s, "webhooks.pauseEndpoint", { endpointId });
    await s.createKey();
    clock.advance(3 * 3_600_000);
    await ok(s, "webhooks.resumeEndpoint", { endpointId });
    // The first attempt fails: retried (the window counts from the resume), not failed.
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(1);
    await expect.poll(async () => (await deliveries(s))[0], { timeout: 10_000 }).toMatchObject({ status: "pending", attempts: 1 });
    clock.advance(5_000);
    await expect.poll(async () => (await deliveries(s))[0], { timeout: 10_000 }).toMatchObject({ status: "delivered", attempts: 2 });
  });

  it("lists every event type with a JSON Schema, and every event sent matches its type's schema", async () => {
    const r = await receiver();
    const s = await service();
    const catalogue = (await ok(s, "webhooks.listEventTypes", {})) as Array<{ type: string; description: string; schema: object }>;
    const schemaOf = new Map(catalogue.map((c) => [c.type, c.schema]));
    for (const c of catalogue) expect(c.description.length, c.type).toBeGreaterThan(0);
    const { endpointId } = await ok(s, "webhooks.createEndpoint", { url: r.url, events: ["*"] });

    const { apiId } = await ok(s, "apis.createApi", { name: "events" });
    await ok(s, "apis.deleteApi", { apiId });
    const { permissionId } = await ok(s, "permissions.createPermission", { name: "docs.read", slug: "docs.read" });
    await ok(s, "permissions.deletePermission", { permission: permissionId });
    const { roleId } = await ok(s, "permissions.createRole", { name: "reader" });
    await ok(s, "permissions.deleteRole", { role: roleId });
    const { identityId } = await ok(s, "identities.createIdentity", { externalId: "user-1" });
    await ok(s, "identities.updateIdentity", { identity: "user-1", meta: { plan: "pro" } });
    await ok(s, "identities.deleteIdentity", { identity: "user-1" });
    // A namespace exists once used.
    await ok(s, "ratelimit.limit", { namespace: "api.calls", identifier: "user-2", limit: 5, duration: 60_000 });
    const { overrideId } = await ok(s, "ratelimit.setOverride", {
      namespace: "api.calls",
      identifier: "user-1",
      limit: 5,
      duration: 60_000,
    });
    await ok(s, "ratelimit.deleteOverride", { namespace: "api.calls", identifier: "user-1" });
    const { portalId } = await ok(s, "portal.createPortal", {
      name: "Customers",
      apiIds: [s.apiId],
      returnOrigins: ["https://app.example.com"],
    });
    await ok(s, "portal.updatePortal", { portalId, accentColor: "#123456" });
    await ok(s, "portal.deletePortal", { portalId });
    const { keyId } = await s.createKey({ name: "k" });
    await ok(s, "keys.updateKey", { keyId, name: "renamed" });
    await ok(s, "rootKeys.createRootKey", { permissions: ["api.*.read_api"] });
    await ok(s, "webhooks.sendTestEvent", { endpointId, message: "hello" });

    const expected: Array<[string, string, string]> = [
      ["api.created", "apiId", apiId],
      ["api.deleted", "apiId", apiId],
      ["permission.created", "permissionId", permissionId],
      ["permission.deleted", "permissionId", permissionId],
      ["role.created", "roleId", roleId],
      ["role.deleted", "roleId", roleId],
      ["identity.created", "identityId", identityId],
      ["identity.updated", "identityId", identityId],
      ["identity.deleted", "identityId", identityId],
      ["ratelimit_override.set", "overrideId", overrideId],
      ["ratelimit_override.deleted", "overrideId", overrideId],
      ["portal.created", "portalId", portalId],
      ["portal.updated", "portalId", portalId],
      ["portal.deleted", "portalId", portalId],
      ["key.created", "keyId", keyId],
      ["key.updated", "keyId", keyId],
    ];
    await expect.poll(() => r.received.length, { timeout: 20_000 }).toBe(expected.length + 2);
    const got = new Map(r.received.map((x) => [typeOf(x), JSON.parse(x.body) as { data: Record<string, unknown> }]));
    for (const [type, field, id] of expected) expect(got.get(type)?.data[field], type).toBe(id);
    expect(got.get("webhook.test")?.data).toMatchObject({ endpointId, message: "hello", workspaceId: s.workspaceId });
    expect(got.has("root_key.created")).toBe(true);
    for (const x of r.received) {
      const schema = schemaOf.get(typeOf(x));
      expect(schema, typeOf(x)).toBeDefined();
      expect(Value.Check(schema!, JSON.parse(x.body)), `${typeOf(x)}: ${x.body}`).toBe(true);
    }
    // The schemas are not trivially true: a payload of one type does not match another's.
    expect(Value.Check(schemaOf.get("api.created")!, JSON.parse(r.received.find((x) => typeOf(x) === "key.created")!.body))).toBe(false);
  });

  it("sends what a portal session does to its keys, the session as the actor, with no secret in them", async () => {
    const r = await receiver();
    const s = await service();
    await ok(s, "webhooks.createEndpoint", { url: r.url, events: ["key.created", "key.rerolled", "key.updated", "key.deleted"] });
    const { portalId } = await ok(s, "portal.createPortal", {
      name: "Customers",
      apiIds: [s.apiId],
      returnOrigins: ["https://app.example.com"],
      actions: { create: true, disable: true, delete: true },
    });
    const minted = await ok(s, "portal.createSession", {
      portal: portalId,
      externalId: "cust-7",
      scopes: ["keys:read", "keys:create", "keys:reroll"],
    });
    const code = new URL(minted.url as string).searchParams.get("code");
    const exchanged = await s.call("portal.exchangeCode", { code }, null);
    expect(exchanged.status).toBe(200);
    const token = exchanged.body.data.accessToken as string;
    const asSession = async (op: string, body: unknown) => {
      const res = await s.call(op, body, token);
      expect(res.status, `${op}: ${JSON.stringify(res.body)}`).toBe(200);
      return res.body.data;
    };
    const made = await asSession("portal.createKey", { name: "staging" });
    const rolled = await asSession("portal.rerollKey", { keyId: made.keyId, expiration: 60_000 });
    await asSession("portal.setKeyEnabled", { keyId: rolled.keyId, enabled: false });
    await asSession("portal.deleteKey", { keyId: rolled.keyId });

    await expect.poll(() => r.received.length, { timeout: 20_000 }).toBe(4);
    const got = new Map(r.received.map((x) => [typeOf(x), JSON.parse(x.body) as { data: Record<string, unknown> }]));
    const catalogue = (await ok(s, "webhooks.listEventTypes", {})) as Array<{ type: string; schema: object }>;
    const schemaOf = new Map(catalogue.map((c) => [c.type, c.schema]));
    const actor = { rootKeyId: minted.id, name: "cust-7" };
    expect(minted.id).toMatch(/^ps_/);
    expect(got.get("key.created")?.data).toMatchObject({ keyId: made.keyId, actor });
    // A reroll's subject is the new key; the old one is among its targets.
    expect(got.get("key.rerolled")?.data).toMatchObject({ keyId: rolled.keyId, targets: expect.arrayContaining([made.keyId]), actor });
    expect(got.get("key.updated")?.data).toMatchObject({ keyId: rolled.keyId, actor });
    expect(got.get("key.deleted")?.data).toMatchObject({ keyId: rolled.keyId, actor });
    for (const x of r.received) {
      expect(Value.Check(schemaOf.get(typeOf(x))!, JSON.parse(x.body)), `${typeOf(x)}: ${x.body}`).toBe(true);
      for (const secret of [token, code!, made.key as string, rolled.key as string]) expect(x.body).not.toContain(secret);
    }
  });

  it("answers one message with its attempts: time, status or error, duration", async () => {
    const clock = manualClock();
    const r = await receiver({ RECEIVER_FAIL_FIRST: "1" });
    const s = await service({ now: clock.now });
    await ok(s, "webhooks.createEndpoint", { url: r.url, events: ["key.created"] });
    const createdAt = clock.now();
    await s.createKey();
    await expect.poll(async () => (await deliveries(s))[0]?.attempts, { timeout: 10_000 }).toBe(1);
    clock.advance(5_000);
    await expect.poll(async () => (await deliveries(s))[0]?.status, { timeout: 10_000 }).toBe("delivered");
    const [listed] = await deliveries(s);
    const detail = await ok(s, "webhooks.getDelivery", { messageId: listed!.messageId });
    expect(detail).toMatchObject({ ...listed, payload: { type: "key.created" } });
    expect(detail.attemptHistory).toEqual([
      { time: createdAt, status: 500, error: "answered 500", durationMs: expect.any(Number) },
      { time: createdAt + 5_000, status: 204, durationMs: expect.any(Number) },
    ]);
    expect((await s.call("webhooks.getDelivery", { messageId: "msg_notThere1" })).status).toBe(404);
  });

  it("sends every failed message since a time again, each once however often it is asked in turn", async () => {
    const clock = manualClock();
    const s = await service({ now: clock.now, webhookRetryHours: 1 });
    const { endpointId } = await ok(s, "webhooks.createEndpoint", { url: await refusedUrl("/gone"), events: ["root_key.created"] });
    const t0 = clock.now();
    await ok(s, "rootKeys.createRootKey", { permissions: ["api.*.read_api"] });
    await ok(s, "rootKeys.createRootKey", { permissions: ["api.*.read_api"] });
    clock.advance(30 * 60_000);
    const t1 = clock.now();
    await ok(s, "rootKeys.createRootKey", { permissions: ["api.*.read_api"] });
    // Each tried at least once (the first two twice, their backoff being over by then).
    await expect
      .poll(async () => (await deliveries(s)).map((d) => (d.attempts as number) >= 1), { timeout: 10_000 })
      .toEqual([true, true, true]);
    clock.advance(2 * 3_600_000);
    await expect.poll(async () => (await deliveries(s, { status: "failed" })).length, { timeout: 10_000 }).toBe(3);
    const failed = await deliveries(s, { status: "failed" });

    // Disabled by the failures: refused until enabled; then pointed at a receiver that answers.
    expect((await s.call("webhooks.resendFailed", { endpointId, since: t0 })).status).toBe(412);
    await ok(s, "webhooks.enableEndpoint", { endpointId });
    const r = await receiver();
    await ok(s, "webhooks.updateEndpoint", { endpointId, url: r.url });

    const recent = await ok(s, "webhooks.resendFailed", { endpointId, since: t1 });
    expect(recent).toEqual({ resent: 1, messageIds: [failed[0]!.messageId], hasMore: false });
    const rest = await ok(s, "webhooks.resendFailed", { endpointId, since: t0 });
    expect([...rest.messageIds].sort()).toEqual([failed[1]!.messageId, failed[2]!.messageId].sort());
    await expect.poll(async () => (await deliveries(s, { status: "delivered" })).length, { timeout: 10_000 }).toBe(3);
    expect(r.received.map((x) => x.id).sort()).toEqual(failed.map((d) => d.messageId).sort());
    expect(await ok(s, "webhooks.resendFailed", { endpointId, since: t0 })).toEqual({ resent: 0, messageIds: [], hasMore: false });
  });

  it("lists deliveries a page at a time, newest first, and by status", async () => {
    const r = await receiver();
    const s = await service();
    const { endpointId } = await ok(s, "webhooks.createEndpoint", { url: r.url, events: ["key.created"] });
    await ok(s, "webhooks.createEndpoint", { url: await refusedUrl("/x"), events: ["key.created"] });
    for (let i = 0; i < 3; i++) await s.createKey();
    await expect.poll(async () => (await deliveries(s, { status: "delivered" })).length, { timeout: 10_000 }).toBe(3);
    const all = await deliveries(s);
    expect(all).toHaveLength(6);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const res = await s.call("webhooks.listDeliveries", { limit: 4, ...(cursor === undefined ? {} : { cursor }) });
      seen.push(...(res.body.data as Array<{ messageId: string }>).map((d) => d.messageId));
      if (!res.body.pagination.hasMore) break;
      cursor = res.body.pagination.cursor as string;
    }
    expect(seen).toEqual(all.map((d) => d.messageId));
    expect((await deliveries(s, { status: "delivered" })).every((d) => d.endpointId === endpointId)).toBe(true);
    expect((await deliveries(s, { status: "pending" })).every((d) => d.endpointId !== endpointId)).toBe(true);
    expect((await s.call("webhooks.listDeliveries", { status: "lost" })).status).toBe(400);
  });

  it("sends a test event to one endpoint, whatever it asked for, signed like any message", async () => {
    const r = await receiver();
    const other = await receiver();
    const s = await service();
    const { endpointId, secret } = await ok(s, "webhooks.createEndpoint", { url: r.url, events: ["key.deleted"] });
    await ok(s, "webhooks.createEndpoint", { url: other.url, events: ["*"] });
    const sent = await ok(s, "webhooks.sendTestEvent", { endpointId });
    expect(sent).toMatchObject({ endpointId, type: "webhook.test", status: "pending" });
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(1);
    expect(verifies(secret, r.received[0]!)).toBe(true);
    expect(JSON.parse(r.received[0]!.body)).toMatchObject({
      type: "webhook.test",
      data: { endpointId, message: "A test event from keyguard." },
    });
    expect(r.received[0]!.id).toBe(sent.messageId);
    // No message was made for the other endpoint ("*" is every event type, not the tests of others).
    expect((await deliveries(s)).map((d) => d.messageId)).toEqual([sent.messageId]);
  });
});
