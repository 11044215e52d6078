// The client's webhooks namespace against the real local key service on 127.0.0.1:0: every
// operation typed, a page of deliveries with its cursor, a refusal as a KeyServiceError.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, KeyServiceHttpError, type KeyServiceClient } from "keyguard/client";
import { startLocalUnderTest } from "../support/store-under-test";
import { refusedUrl } from "../support/loopback-ports";
import { silentLogger } from "../../src/logger";

let svc: Awaited<ReturnType<typeof startLocalUnderTest>>;
let client: KeyServiceClient;

beforeAll(async () => {
  svc = await startLocalUnderTest({ webhooksAllowPrivate: true });
  client = createClient({ rootKey: svc.rootKey, baseUrl: svc.baseUrl, logger: silentLogger, retry: false });
});
afterAll(async () => {
  await svc.close();
});

describe("client.webhooks", () => {
  it("manages an endpoint, lists the catalogue and the deliveries a page at a time", async () => {
    const { endpointId, secret } = await client.webhooks.createEndpoint({ url: await refusedUrl("/hook"), events: ["key.created"] });
    expect(secret).toMatch(/^whsec_/);
    const updated = await client.webhooks.updateEndpoint({ endpointId, events: ["*"], description: "all" });
    expect(updated).toMatchObject({ endpointId, events: ["*"], description: "all" });
    expect((await client.webhooks.pauseEndpoint({ endpointId })).pausedAt).toEqual(expect.any(Number));
    const rotated = await client.webhooks.rotateSecret({ endpointId, overlapHours: 1 });
    expect(rotated.secret).not.toBe(secret);
    const types = await client.webhooks.listEventTypes({});
    expect(types.map((t) => t.type)).toContain("identity.updated");

    for (let i = 0; i < 3; i++) await client.webhooks.sendTestEvent({ endpointId, message: `n${i}` });
    const first = await client.webhooks.listDeliveries({ endpointId, limit: 2 });
    expect(first).toHaveLength(2);
    expect(first.pagination.hasMore).toBe(true);
    const second = await client.webhooks.listDeliveries({ endpointId, limit: 2, cursor: first.pagination.cursor! });
    expect(second.map((d) => d.messageId)).not.toContain(first[0]!.messageId);
    expect(second.pagination.hasMore).toBe(false);
    const detail = await client.webhooks.getDelivery({ messageId: first[0]!.messageId });
    expect(detail).toMatchObject({ type: "webhook.test", status: "pending", attemptHistory: [], payload: { data: { message: "n2" } } });
    expect((await client.webhooks.resumeEndpoint({ endpointId })).pausedAt).toBeUndefined();
    expect((await client.webhooks.listEndpoints({}))[0]).toMatchObject({ endpointId, previousSecretExpiresAt: expect.any(Number) });

    const refused = await client.webhooks.updateEndpoint({ endpointId, events: ["nope"] }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(KeyServiceHttpError);
    expect((refused as KeyServiceHttpError).status).toBe(400);
    await client.webhooks.deleteEndpoint({ endpointId });
  });
});
