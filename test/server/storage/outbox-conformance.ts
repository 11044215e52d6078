// The webhook outbox's part of the store conformance suite: messages enqueued in a transaction are
// kept only when it commits; a claim takes the due messages once per lease (two claims at the same
// time never take the same message); a settled message is written back. Called by
// describeStoreConformance with its store; every test uses a workspace and times of its own.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { newId } from "../../../src/server/domain/ids";
import type { Storage } from "../../../src/server/storage/seam";
import type { WebhookMessage } from "../../../src/server/records";

const uid = (): string => randomBytes(6).toString("hex");

export function describeWebhookOutbox(store: () => Storage): void {
  describe("webhook outbox", () => {
    const message = (workspaceId: string, at: number, over: Partial<WebhookMessage> = {}): WebhookMessage => ({
      id: newId("msg"),
      workspaceId,
      endpointId: "whep_1",
      type: "key.created",
      payload: '{"type":"key.created"}',
      createdAt: at,
      status: "pending",
      attempts: 0,
      nextAttemptAt: at,
      ...over,
    });
    // Claims take due messages of every workspace: each test's messages are due at a time of its
    // own, far in the past of the others' claims, and claimed "now" = that time.
    const base = () => 10_000_000 + Math.floor(Math.random() * 1e9) * 1000;

    it("keeps messages enqueued in a transaction only when it commits", async () => {
      const w = `ws_${uid()}`;
      const kept = message(w, 1);
      await store().transaction((tx) => tx.enqueueWebhooks([kept]));
      await expect(
        store().transaction(async (tx) => {
          await tx.enqueueWebhooks([message(w, 1)]);
          throw new Error("boom");
        }),
      ).rejects.toThrow("boom");
      expect(await store().listWebhooks({ workspaceId: w, limit: 10 })).toEqual([kept]);
    });

    it("claims each due message once per lease, and again once the lease is over", async () => {
      const w = `ws_${uid()}`;
      const t = base();
      const due = [message(w, t), message(w, t), message(w, t)];
      await store().transaction((tx) => tx.enqueueWebhooks([...due, message(w, t + 5_000)]));
      const [a, b] = await Promise.all([store().claimWebhooks(t, 2, 1_000), store().claimWebhooks(t, 2, 1_000)]);
      const mine = (ms: WebhookMessage[]) => ms.filter((m) => m.workspaceId === w).map((m) => m.id);
      const taken = [...mine(a!), ...mine(b!)];
      expect(new Set(taken).size).toBe(taken.length);
      expect([...taken].sort()).toEqual(due.map((m) => m.id).sort());
      expect(mine(await store().claimWebhooks(t + 999, 10, 1_000))).toEqual([]);
      expect(mine(await store().claimWebhooks(t + 1_000, 10, 1_000)).sort()).toEqual(due.map((m) => m.id).sort());
    });

    it("writes back a settled message: a delivered one is never claimed again", async () => {
      const w = `ws_${uid()}`;
      const t = base();
      const m = message(w, t, { endpointId: "whep_2" });
      await store().direct.enqueueWebhooks([m]);
      const [claimed] = (await store().claimWebhooks(t, 50, 1_000)).filter((x) => x.id === m.id);
      expect(claimed).toMatchObject({ id: m.id, payload: m.payload });
      const delivered: WebhookMessage = { ...claimed!, status: "delivered", attempts: 1, lastStatus: 204, deliveredAt: t + 10 };
      await store().settleWebhook(delivered);
      expect((await store().claimWebhooks(t + 10_000, 50, 1_000)).filter((x) => x.id === m.id)).toEqual([]);
      expect(await store().listWebhooks({ workspaceId: w, endpointId: "whep_2", limit: 10 })).toEqual([delivered]);
      expect(await store().listWebhooks({ workspaceId: w, endpointId: "whep_other", limit: 10 })).toEqual([]);
      expect(await store().getWebhook(m.id)).toEqual(delivered);
      expect(await store().getWebhook("msg_notThere")).toBeUndefined();
      // Sent again by an operator: pending and due again, its resend time kept.
      const again: WebhookMessage = { ...delivered, status: "pending", nextAttemptAt: t + 20_000, resentAt: t + 20_000 };
      await store().settleWebhook(again);
      const reclaimed = (await store().claimWebhooks(t + 20_000, 50, 1_000)).filter((x) => x.id === m.id);
      expect(reclaimed).toEqual([expect.objectContaining({ id: m.id, status: "pending", attempts: 1, resentAt: t + 20_000 })]);
      expect((await store().getWebhook(m.id))?.resentAt).toBe(t + 20_000);
      // Delivered again: nothing of this test stays pending for the claims of the others.
      await store().settleWebhook({ ...again, status: "delivered", attempts: 2 });
    });

    it("lists by status and endpoint, newest first, from a cursor on", async () => {
      const w = `ws_${uid()}`;
      const t = base();
      const made: WebhookMessage[] = [];
      for (let i = 0; i < 6; i++) {
        made.push(message(w, t + i, { endpointId: i % 2 ? "whep_a" : "whep_b", status: i % 3 === 0 ? "failed" : "delivered" }));
      }
      await store().transaction((tx) => tx.enqueueWebhooks(made));
      const newest = [...made].reverse();
      const ids = (ms: WebhookMessage[]) => ms.map((m) => m.id);
      expect(ids(await store().listWebhooks({ workspaceId: w, limit: 10 }))).toEqual(ids(newest));
      expect(ids(await store().listWebhooks({ workspaceId: w, status: "failed", limit: 10 }))).toEqual(
        ids(newest.filter((m) => m.status === "failed")),
      );
      expect(ids(await store().listWebhooks({ workspaceId: w, endpointId: "whep_a", status: "delivered", limit: 10 }))).toEqual(
        ids(newest.filter((m) => m.endpointId === "whep_a" && m.status === "delivered")),
      );
      // A page of 2, then the rest from the third on (the cursor is inclusive).
      const first = await store().listWebhooks({ workspaceId: w, limit: 3 });
      expect(ids(await store().listWebhooks({ workspaceId: w, from: first[2]!.id, limit: 10 }))).toEqual(ids(newest.slice(2)));
    });

    it("makes an endpoint's pending messages due at a time, kept or dropped with the transaction", async () => {
      const w = `ws_${uid()}`;
      const t = base();
      const held = [
        message(w, t, { endpointId: "whep_p", nextAttemptAt: t + 3_600_000 }),
        message(w, t, { endpointId: "whep_p", nextAttemptAt: t + 3_600_000 }),
      ];
      const other = message(w, t, { endpointId: "whep_q", nextAttemptAt: t + 3_600_000 });
      const done = message(w, t, { endpointId: "whep_p", status: "delivered" });
      await store().transaction((tx) => tx.enqueueWebhooks([...held, other, done]));
      await expect(
        store().transaction(async (tx) => {
          expect(await tx.rescheduleWebhooks(w, "whep_p", t + 10)).toBe(2);
          throw new Error("boom");
        }),
      ).rejects.toThrow("boom");
      const mine = async (at: number) =>
        (await store().claimWebhooks(at, 50, 1_000))
          .filter((m) => m.workspaceId === w)
          .map((m) => m.id)
          .sort();
      expect(await mine(t + 10)).toEqual([]);
      expect(await store().transaction((tx) => tx.rescheduleWebhooks(w, "whep_p", t + 10))).toBe(2);
      expect(await mine(t + 10)).toEqual(held.map((m) => m.id).sort());
      // Nothing of this test stays pending for the claims of the others.
      for (const m of [...held, other]) await store().settleWebhook({ ...m, status: "delivered" });
    });
  });
}
