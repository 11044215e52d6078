// Webhooks end to end, with a real receiver in a process of its own: a change's event is signed
// per Standard Webhooks (checked with the `standardwebhooks` reference library), retried with the
// same id after a failure, marked failed once the retry window is over; a change rolled back sends
// nothing; endpoints on non-public addresses are refused unless allowed. The events the service
// notices itself: credits low (once per crossing of the API's or the key's threshold) and
// exhausted, and a key expiring within the notice (once per key and expiry), each payload as the
// catalogue's schema of its type says.
import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { Value } from "typebox/value";
import { WEBHOOK_EVENT_CATALOGUE } from "../../../src/protocol/contract/webhook-payloads";
import { memoryStorage, StoreUnavailableError, type StorageTx } from "keyguard/server";
import { afterEach, describe, expect, it } from "vitest";
import { isPrivateAddress } from "../../../src/server/webhooks/address-guard";
import { receiver, stopReceivers } from "../../support/webhook-receiver-process";
import { manualClock, start, type Started } from "../helpers";
import { overriding } from "../../support/storage-wrapper";
import { storeUnderTest } from "../../support/store-under-test";

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

async function endpoint(s: Started, url: string, events: string[]): Promise<{ endpointId: string; secret: string }> {
  const res = await s.call("webhooks.createEndpoint", { url, events });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

const deliveries = async (s: Started) => (await s.call("webhooks.listDeliveries", {})).body.data as Array<Record<string, unknown>>;

describe("webhooks", () => {
  it("delivers a key's creation, signed per Standard Webhooks, without the key", async () => {
    const r = await receiver();
    const s = await service();
    const { secret } = await endpoint(s, r.url, ["key.created", "key.deleted"]);
    expect(secret).toMatch(/^whsec_/);
    const { keyId, key } = await s.createKey({ name: "hooked" });
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(1);
    const got = r.received[0]!;
    const payload = new Webhook(secret).verify(got.body, {
      "webhook-id": got.id,
      "webhook-timestamp": got.timestamp,
      "webhook-signature": got.signature,
    }) as { type: string; timestamp: string; data: Record<string, unknown> };
    expect(payload).toMatchObject({ type: "key.created", data: { keyId, workspaceId: s.workspaceId, change: { name: "hooked" } } });
    expect(got.body).not.toContain(key);
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(24, 1).toString("base64")}`).verify(got.body, {
        "webhook-id": got.id,
        "webhook-timestamp": got.timestamp,
        "webhook-signature": got.signature,
      }),
    ).toThrow();
    // Not subscribed: key.updated. Subscribed: key.deleted.
    await s.call("keys.updateKey", { keyId, name: "renamed" });
    await s.call("keys.deleteKey", { keyId });
    await expect
      .poll(() => r.received.map((x) => (JSON.parse(x.body) as { type: string }).type), { timeout: 10_000 })
      .toEqual(["key.created", "key.deleted"]);
    await expect.poll(async () => (await deliveries(s)).map((d) => d.status), { timeout: 10_000 }).toEqual(["delivered", "delivered"]);
  });

  it("retries a failed delivery with the same id after a backoff, then delivers", async () => {
    const clock = manualClock();
    const r = await receiver({ RECEIVER_FAIL_FIRST: "1" });
    const s = await service({ now: clock.now });
    const { secret } = await endpoint(s, r.url, ["root_key.created"]);
    await s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"] });
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(1);
    await expect
      .poll(async () => (await deliveries(s))[0], { timeout: 10_000 })
      .toMatchObject({ status: "pending", attempts: 1, lastStatus: 500 });
    // Not due before the backoff.
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(r.received).toHaveLength(1);
    clock.advance(5_000);
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(2);
    expect(r.received[1]!.id).toBe(r.received[0]!.id);
    for (const got of r.received) {
      expect(() =>
        new Webhook(secret).verify(got.body, {
          "webhook-id": got.id,
          "webhook-timestamp": got.timestamp,
          "webhook-signature": got.signature,
        }),
      ).not.toThrow();
    }
    await expect
      .poll(async () => (await deliveries(s))[0], { timeout: 10_000 })
      .toMatchObject({ status: "delivered", attempts: 2, lastStatus: 204 });
  });

  it("marks a message failed once its retry window is over (a redirect is a failure), and disables its endpoint", async () => {
    const clock = manualClock();
    const r = await receiver({ RECEIVER_STATUS: "302" });
    const s = await service({ now: clock.now, webhookRetryHours: 1 });
    await endpoint(s, r.url, ["root_key.created"]);
    await s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"] });
    await expect.poll(async () => (await deliveries(s))[0]?.attempts, { timeout: 10_000 }).toBe(1);
    for (let i = 0; i < 20 && (await deliveries(s))[0]!.status === "pending"; i++) {
      const before = r.received.length;
      clock.advance(20 * 60_000);
      await expect.poll(() => r.received.length, { timeout: 10_000 }).toBeGreaterThan(before);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await expect.poll(async () => (await deliveries(s))[0], { timeout: 10_000 }).toMatchObject({ status: "failed", lastStatus: 302 });
    expect(new Set(r.received.map((x) => x.id)).size).toBe(1);
    // An endpoint that failed a message for the whole window is disabled, and the audit log says so.
    const [listed] = (await s.call("webhooks.listEndpoints", {})).body.data;
    expect(listed.disabledAt).toEqual(expect.any(Number));
    const audit = await s.call("audit.listEvents", { operation: "webhooks.disableEndpoint" });
    expect(audit.body.data).toEqual([
      expect.objectContaining({ actorId: "keyguard-webhooks", targets: [listed.endpointId, r.received[0]!.id] }),
    ]);
    const sent = r.received.length;
    await s.call("rootKeys.createRootKey", { permissions: ["api.*.read_api"] });
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(r.received).toHaveLength(sent);

    // Sent again: refused while its endpoint is disabled; once enabled, due at once with the same
    // id, and retried for a whole window from the resend (not failed at its first new failure).
    const messageId = r.received[0]!.id;
    const refused = await s.call("webhooks.resendDelivery", { messageId });
    expect(refused.status).toBe(412);
    expect(refused.body.error.detail).toContain("webhooks.enableEndpoint");
    expect((await s.call("webhooks.enableEndpoint", { endpointId: listed.endpointId })).status).toBe(200);
    expect((await s.call("webhooks.listEndpoints", {})).body.data[0].disabledAt).toBeUndefined();
    const attempts = (await deliveries(s)).find((d) => d.messageId === messageId)!.attempts as number;
    const resent = await s.call("webhooks.resendDelivery", { messageId });
    expect(resent.status, JSON.stringify(resent.body)).toBe(200);
    expect(resent.body.data).toMatchObject({ messageId, status: "pending", endpointId: listed.endpointId });
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(sent + 1);
    expect(r.received[sent]!.id).toBe(messageId);
    await expect
      .poll(async () => (await deliveries(s)).find((d) => d.messageId === messageId), { timeout: 10_000 })
      .toMatchObject({ status: "pending", attempts: attempts + 1, lastStatus: 302 });
    expect((await s.call("webhooks.listEndpoints", {})).body.data[0].disabledAt).toBeUndefined();
    const audited = await s.call("audit.listEvents", { targetId: messageId });
    expect((audited.body.data as Array<{ operation: string }>).map((e) => e.operation)).toContain("webhooks.resendDelivery");
  });

  it("sends a delivered message again with the same id; an unknown message is 404", async () => {
    const r = await receiver();
    const s = await service();
    await endpoint(s, r.url, ["key.created"]);
    await s.createKey();
    await expect.poll(async () => (await deliveries(s))[0]?.status, { timeout: 10_000 }).toBe("delivered");
    const [first] = await deliveries(s);
    const resent = await s.call("webhooks.resendDelivery", { messageId: first!.messageId });
    expect(resent.status).toBe(200);
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(2);
    expect(r.received[1]!.id).toBe(r.received[0]!.id);
    expect(r.received[1]!.body).toBe(r.received[0]!.body);
    await expect
      .poll(async () => (await deliveries(s))[0], { timeout: 10_000 })
      .toMatchObject({ messageId: first!.messageId, status: "delivered", attempts: 2 });
    const unknown = await s.call("webhooks.resendDelivery", { messageId: "msg_doesNotExist1" });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.detail).toContain("body.messageId (a string of 17 characters)");
    expect(unknown.body.error.detail).not.toContain("msg_doesNotExist1");
  });

  it("seals the signing secret with the service's encryption key; another key cannot sign with it", async () => {
    const r = await receiver();
    const storage = memoryStorage();
    const rootKey = `root_${randomBytes(24).toString("hex")}`;
    const first = await service({ storage, rootKey, encryptionKey: randomBytes(32).toString("base64") });
    const { secret } = await endpoint(first, r.url, ["key.created"]);
    const stored = (await storage.direct.getMeta(`webhooks.${first.workspaceId}`))!;
    expect(stored).not.toContain(secret);
    expect(stored).not.toContain(secret.slice("whsec_".length));
    await first.createKey();
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(1);
    const got = r.received[0]!;
    expect(() =>
      new Webhook(secret).verify(got.body, {
        "webhook-id": got.id,
        "webhook-timestamp": got.timestamp,
        "webhook-signature": got.signature,
      }),
    ).not.toThrow();
    await first.close();

    // The same store under another encryption key: nothing is sent, and the delivery says why.
    const second = await service({ storage, rootKey, encryptionKey: randomBytes(32).toString("base64") });
    await second.createKey();
    await expect
      .poll(async () => (await deliveries(second))[0], { timeout: 10_000 })
      .toMatchObject({
        status: "pending",
        attempts: 1,
        lastStatus: 0,
        lastError: expect.stringContaining("signing secret cannot be opened"),
      });
    expect(r.received).toHaveLength(1);
  });

  it("sends nothing for a change rolled back, nor for a read", async () => {
    const r = await receiver();
    const s = await service();
    await endpoint(s, r.url, ["key.updated"]);
    const { keyId } = await s.createKey();
    const rolledBack = await s.call("keys.updateKey", { keyId, credits: { refill: { interval: "daily", amount: 5 } } });
    expect(rolledBack.status).toBe(400);
    await s.call("keys.getKey", { keyId });
    await s.call("keys.updateKey", { keyId, name: "the one" });
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(1);
    expect(JSON.parse(r.received[0]!.body)).toMatchObject({ type: "key.updated", data: { keyId, change: { name: "the one" } } });
    expect(await deliveries(s)).toHaveLength(1);
  });
});

/** The types and data of the events received, in order, each checked against its type's schema in the catalogue. */
const events = (r: { received: ReadonlyArray<{ body: string }> }) =>
  r.received.map((x) => {
    const body = JSON.parse(x.body) as { type: string; data: Record<string, unknown> };
    const schema = WEBHOOK_EVENT_CATALOGUE.find((c) => c.type === body.type)?.schema;
    if (schema === undefined || !Value.Check(schema, body)) throw new Error(`not as the catalogue says: ${x.body}`);
    return body;
  });
const settle = () => new Promise((resolve) => setTimeout(resolve, 1200));

describe("events the service notices", () => {
  it("sends key.credits_low once for the charge that crosses the API's threshold, and again after a top-up", async () => {
    const r = await receiver();
    const s = await service();
    await endpoint(s, r.url, ["key.credits_low"]);
    expect((await s.call("apis.updateApi", { apiId: s.apiId, creditsLowThreshold: 3 })).status).toBe(200);
    const { keyId, key } = await s.createKey({ credits: { remaining: 5 } });
    // 5 → 4 → 3 (crosses) → 2 → 1.
    for (let i = 0; i < 4; i++) expect((await s.verify(key)).valid).toBe(true);
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(1);
    expect(events(r)[0]).toEqual({
      type: "key.credits_low",
      timestamp: expect.any(String),
      data: { workspaceId: s.workspaceId, keyId, apiId: s.apiId, remaining: 3, threshold: 3 },
    });
    // At or below the threshold already: no crossing, however many charges.
    await s.call("keys.updateCredits", { keyId, operation: "set", value: 2 });
    await s.verify(key);
    // Topped up above the threshold: the next crossing (a charge of 4, from 6 to 2) sends it again.
    await s.call("keys.updateCredits", { keyId, operation: "set", value: 6 });
    await s.verify(key, { credits: { cost: 4 } });
    await s.verify(key);
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(2);
    await settle();
    expect(events(r).map((e) => [e.type, e.data.remaining])).toEqual([
      ["key.credits_low", 3],
      ["key.credits_low", 2],
    ]);
  });

  it("takes a key's own threshold instead of its API's, and the API's again once the key's is removed", async () => {
    const r = await receiver();
    const s = await service();
    await endpoint(s, r.url, ["key.credits_low"]);
    await s.call("apis.updateApi", { apiId: s.apiId, creditsLowThreshold: 2 });
    const { keyId, key } = await s.createKey({ credits: { remaining: 6 }, creditsLowThreshold: 5 });
    expect((await s.call("keys.getKeySettings", { keyIds: [keyId] })).body.data[0].creditsLowThreshold).toBe(5);
    // 6 → 5 (the key's threshold) → 4.
    await s.verify(key);
    await s.verify(key);
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(1);
    const removed = await s.call("keys.updateKey", { keyId, creditsLowThreshold: null });
    expect(removed.status).toBe(200);
    expect((await s.call("keys.getKeySettings", { keyIds: [keyId] })).body.data[0]).not.toHaveProperty("creditsLowThreshold");
    // 4 → 3 → 2 (the API's threshold).
    await s.verify(key);
    await s.verify(key);
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(2);
    await settle();
    expect(events(r).map((e) => [e.data.remaining, e.data.threshold])).toEqual([
      [5, 5],
      [2, 2],
    ]);
  });

  it("sends key.credits_exhausted once, for the charge that takes the credits to 0", async () => {
    const r = await receiver();
    const s = await service();
    await endpoint(s, r.url, ["key.credits_exhausted", "key.credits_low"]);
    const { keyId, key } = await s.createKey({ credits: { remaining: 2 } });
    const codes = [];
    for (let i = 0; i < 4; i++) codes.push((await s.verify(key)).code);
    expect(codes).toEqual(["VALID", "VALID", "USAGE_EXCEEDED", "USAGE_EXCEEDED"]);
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(1);
    await settle();
    // No threshold on the API: no key.credits_low.
    expect(events(r)).toEqual([
      {
        type: "key.credits_exhausted",
        timestamp: expect.any(String),
        data: { workspaceId: s.workspaceId, keyId, apiId: s.apiId, remaining: 0, threshold: null },
      },
    ]);
  });

  it("makes a crossing charge and its events' messages in one transaction: when the outbox write fails, the charge is undone", async () => {
    const inner = (await storeUnderTest()) ?? memoryStorage();
    let failing = false;
    const outboxDown = (tx: StorageTx): StorageTx =>
      new Proxy(tx, {
        get(target, name) {
          if (name === "enqueueWebhooks") return () => Promise.reject(new StoreUnavailableError("the outbox is unavailable"));
          const value: unknown = Reflect.get(target, name);
          return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
    const storage = overriding(inner, {
      transaction: (fn, options) => inner.transaction((tx) => fn(failing ? outboxDown(tx) : tx), options),
    });
    let s: Started | undefined;
    try {
      const r = await receiver();
      s = await service({ storage });
      await endpoint(s, r.url, ["key.credits_exhausted", "key.credits_low"]);
      const { keyId, key } = await s.createKey({ credits: { remaining: 3 }, creditsLowThreshold: 2 });
      expect((await s.verify(key)).credits).toBe(2); // 3 → 2 crosses 2
      await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(1);

      failing = true;
      // 2 → 1 crosses nothing: charged without a transaction, the outbox untouched.
      expect(await s.verify(key)).toMatchObject({ code: "VALID", credits: 1 });
      // 1 → 0 is exhausted: its message cannot be written, so neither is the charge.
      expect((await s.call("keys.verifyKey", { key })).status).toBe(503);
      expect((await s.call("keys.getKey", { keyId })).body.data.credits.remaining).toBe(1);

      failing = false;
      expect(await s.verify(key)).toMatchObject({ code: "VALID", credits: 0 });
      await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(2);
      await settle();
      expect(events(r).map((e) => [e.type, e.data.remaining])).toEqual([
        ["key.credits_low", 2],
        ["key.credits_exhausted", 0],
      ]);
    } finally {
      await s?.close(); // before its store
      await inner.close();
    }
  });

  it("concurrent charges: exactly the balance is charged, each crossing sent once", async () => {
    const r = await receiver();
    const s = await service();
    await endpoint(s, r.url, ["key.credits_exhausted", "key.credits_low"]);
    const { key } = await s.createKey({ credits: { remaining: 10 }, creditsLowThreshold: 4 });
    const results = await Promise.all(Array.from({ length: 30 }, () => s.verify(key)));
    expect(results.filter((v) => v.code === "VALID")).toHaveLength(10);
    expect(results.filter((v) => v.code === "USAGE_EXCEEDED")).toHaveLength(20);
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(2);
    await settle();
    // Two concurrent charges crossed: order between messages is not guaranteed (docs/events.md).
    expect(
      events(r)
        .map((e) => [e.type, e.data.remaining])
        .sort(),
    ).toEqual([
      ["key.credits_exhausted", 0],
      ["key.credits_low", 4],
    ]);
  });

  it("sends key.expiring once per key expiring within the notice, not for others, and again for a changed expiry", async () => {
    const clock = manualClock();
    const hour = 3_600_000;
    const r = await receiver();
    const s = await service({ now: clock.now, webhookExpiryNoticeHours: 24 });
    await endpoint(s, r.url, ["key.expiring"]);
    const soon = await s.createKey({ expires: clock.now() + hour });
    const far = await s.createKey({ expires: clock.now() + 48 * hour });
    await s.createKey();
    // The scan runs once a minute of service time.
    clock.advance(60_000);
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(1);
    expect(events(r)[0]).toEqual({
      type: "key.expiring",
      timestamp: expect.any(String),
      data: { workspaceId: s.workspaceId, keyId: soon.keyId, apiId: s.apiId, expires: clock.now() - 60_000 + hour },
    });
    clock.advance(60_000);
    await settle();
    expect(r.received).toHaveLength(1);
    // A changed expiry arms the notice again: the far key moved into the notice, the near one moved.
    await s.call("keys.updateKey", { keyId: far.keyId, expires: clock.now() + 2 * hour });
    await s.call("keys.updateKey", { keyId: soon.keyId, expires: clock.now() + 5 * hour });
    clock.advance(60_000);
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(3);
    // Another change of the key keeps its notice.
    await s.call("keys.updateKey", { keyId: soon.keyId, name: "renamed" });
    clock.advance(60_000);
    await settle();
    expect(r.received).toHaveLength(3);
    expect(
      events(r)
        .slice(1)
        .map((e) => e.data.keyId)
        .sort(),
    ).toEqual([far.keyId, soon.keyId].sort());
  });
});

describe("the address guard", () => {
  it("refuses an endpoint on a loopback or private address unless allowed", async () => {
    const s = await start({});
    services.push(s);
    for (const url of [
      "http://127.0.0.1:9/x",
      "http://localhost/x",
      "http://10.1.2.3/x",
      "http://[::1]/x",
      "http://169.254.169.254/latest",
    ]) {
      const res = await s.call("webhooks.createEndpoint", { url, events: ["key.created"] });
      expect(res.status, url).toBe(400);
      expect(res.body.error.errors[0].fix).toContain("--webhooks-allow-private");
    }
    expect((await s.call("webhooks.createEndpoint", { url: "ftp://example.com/x", events: ["key.created"] })).status).toBe(400);
    expect((await s.call("webhooks.createEndpoint", { url: "https://example.com/x", events: ["key.nothing"] })).status).toBe(400);
  });

  it("knows the non-public ranges", () => {
    for (const a of [
      "127.0.0.1",
      "10.0.0.1",
      "172.16.5.4",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "::1",
      "fe80::1",
      "fd00::1",
      "::ffff:127.0.0.1",
    ]) {
      expect(isPrivateAddress(a), a).toBe(true);
    }
    for (const a of ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"]) expect(isPrivateAddress(a), a).toBe(false);
  });
});
