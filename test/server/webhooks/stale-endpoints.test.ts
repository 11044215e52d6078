// The dispatcher over a PostgreSQL store whose record cache has not yet heard of a change to the
// workspace's endpoints (another instance's announcement is a moment behind its answer): the
// audited calls' read of the endpoints may use that cache, deliveries never do. A message goes to
// an endpoint created or enabled again elsewhere, and not to one deleted elsewhere. The cache is
// made stale for real: the change goes through a store announcing on another channel.
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import { postgresStorage } from "../../../src/server/storage/postgres/store";
import type { Storage } from "../../../src/server/storage/seam";
import type { WebhookEndpointRecord } from "../../../src/server/records";
import { StoreFailureLog } from "../../../src/server/storage/store-failures";
import { WebhookDispatcher } from "../../../src/server/webhooks/dispatcher";
import { readEndpoints, writeEndpoints } from "../../../src/server/webhooks/endpoints";
import { eventMessages } from "../../../src/server/webhooks/events";
import { listenOnSparePort } from "../../support/loopback-ports";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";

const skip = await postgresRedisSkipReason("the webhook dispatcher over a stale record cache");
const WS = "ws_stale";
/** How the audited calls read the endpoints: the cache may answer. */
const CACHED = { cached: true };

describe.skipIf(skip !== undefined)("the webhook dispatcher over a record cache that has not heard of a change yet", () => {
  const ns = isolatedNamespace();
  /** The dispatching instance's store (its cache announces and listens on the schema's channel). */
  let cached: Storage;
  /** Another instance whose announcements the first never hears. */
  let unheard: Storage;
  let receiver: Server;
  let url: string;
  const received: string[] = [];

  beforeAll(async () => {
    cached = await postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema });
    unheard = await postgresStorage({
      postgres: POSTGRES_URL,
      redis: REDIS_URL,
      schema: ns.schema,
      redisPrefix: `${ns.redisPrefix}elsewhere:`,
    });
    receiver = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        received.push(String(req.headers["webhook-id"]));
        res.writeHead(204).end();
      });
    });
    url = `http://127.0.0.1:${await listenOnSparePort(receiver)}/hooks`;
  });
  afterAll(async () => {
    await new Promise((resolve) => receiver?.close(resolve));
    await Promise.all([cached, unheard].map((s) => s?.close()));
    await ns.drop();
  });

  /** Writes the workspace's endpoints through the other instance and queues one message for `endpoint`. */
  async function changeElsewhere(endpoints: WebhookEndpointRecord[], endpoint: WebhookEndpointRecord): Promise<string> {
    const [message] = eventMessages({ type: "key.created", workspaceId: WS, time: Date.now(), data: { keyId: "key_x" } }, [
      { ...endpoint, disabledAt: undefined },
    ]);
    await unheard.transaction(async (tx) => {
      await writeEndpoints(tx, WS, endpoints);
      await tx.enqueueWebhooks([message!]);
    });
    return message!.id;
  }

  it("delivers as the endpoints are stored, whatever the cache kept: created or enabled again elsewhere, or deleted", async () => {
    const endpoint: WebhookEndpointRecord = {
      id: "whep_stale",
      workspaceId: WS,
      url,
      events: ["key.created"],
      secret: `whsec_${Buffer.alloc(24, 7).toString("base64")}`,
      createdAt: Date.now(),
    };
    const dispatcher = new WebhookDispatcher(cached, {
      allowPrivate: true,
      vault: undefined,
      retryWindowMs: 3_600_000,
      leaseMs: 60_000,
      now: () => Date.now(),
      logger: silentLogger,
      failures: new StoreFailureLog(silentLogger, cached.kind),
    });
    try {
      // Kept: none.
      expect(await readEndpoints(cached.direct, WS, CACHED)).toEqual([]);
      const created = await changeElsewhere([endpoint], endpoint);
      expect(await readEndpoints(cached.direct, WS, CACHED)).toEqual([]);
      await dispatcher.tick();
      expect(received).toEqual([created]);

      // Kept: disabled. Enabled again elsewhere.
      await unheard.transaction((tx) => writeEndpoints(tx, WS, [{ ...endpoint, disabledAt: 1 }]));
      await cached.transaction((tx) => writeEndpoints(tx, WS, [{ ...endpoint, disabledAt: 1 }]));
      expect((await readEndpoints(cached.direct, WS, CACHED))[0]?.disabledAt).toBe(1);
      const enabled = await changeElsewhere([endpoint], endpoint);
      expect((await readEndpoints(cached.direct, WS, CACHED))[0]?.disabledAt).toBe(1);
      await dispatcher.tick();
      expect(received).toEqual([created, enabled]);

      // Kept: enabled. Deleted elsewhere, with a message still queued for it.
      await cached.transaction((tx) => writeEndpoints(tx, WS, [endpoint]));
      expect((await readEndpoints(cached.direct, WS, CACHED))[0]?.disabledAt).toBeUndefined();
      const orphan = await changeElsewhere([], endpoint);
      expect(await readEndpoints(cached.direct, WS, CACHED)).toHaveLength(1);
      await dispatcher.tick();
      expect(received).toEqual([created, enabled]);
      const statuses = new Map((await cached.listWebhooks({ workspaceId: WS, limit: 10 })).map((m) => [m.id, [m.status, m.lastError]]));
      expect(statuses).toEqual(
        new Map([
          [created, ["delivered", undefined]],
          [enabled, ["delivered", undefined]],
          [orphan, ["failed", "the endpoint was deleted"]],
        ]),
      );
    } finally {
      await dispatcher.close();
    }
  });
});
