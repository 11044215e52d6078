// The audit log's part of the store conformance suite: what every backend's `appendAudit`,
// `listAudit` and `deleteAuditBefore` must do (filters, order, the transaction's fate, retention).
// Called by describeStoreConformance with its store; every test works in a workspace of its own.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { newId } from "../../../src/server/domain/ids";
import type { Storage } from "../../../src/server/storage/seam";
import type { AuditEvent } from "../../../src/server/records";
import { auditHash, GENESIS_HASH } from "../../../src/server/domain/audit-chain";
import { auditView } from "../../../src/server/domain/views";
import { verifyStoredAudit } from "../../../src/server/storage/audit-verify";

const uid = (): string => randomBytes(6).toString("hex");

/** A record without its place in the chain. */
function unchained(e: AuditEvent): AuditEvent {
  const { seq: _seq, prevHash: _prev, hash: _hash, ...rest } = e;
  return rest;
}
const T0 = 1_800_000_000_000;

export function describeAuditLog(store: () => Storage): void {
  describe("audit log", () => {
    const event = (workspaceId: string, over: Partial<AuditEvent> = {}): AuditEvent => ({
      id: newId("aud"),
      time: T0,
      workspaceId,
      actorId: "rk_a",
      operation: "keys.updateKey",
      targets: ["key_1"],
      outcome: "success",
      requestId: newId("req"),
      ip: "127.0.0.1",
      change: { name: "n", nested: { enabled: false, list: [1, "two"] } },
      ...over,
    });
    const append = (e: AuditEvent) => store().transaction((tx) => tx.appendAudit(e));
    // The records as appended: without the chain fields the store adds (checked below).
    const list = async (q: Omit<Parameters<Storage["direct"]["listAudit"]>[0], "limit"> & { limit?: number }) =>
      (await store().direct.listAudit({ limit: 100, ...q })).map(unchained);

    it("keeps records whole, lists them newest first, and only the workspace's", async () => {
      const w = `ws_${uid()}`;
      const named = event(w, { actorName: "deploy bot", targets: ["key_1", "api_1"] });
      const later = event(w, { time: T0 + 1, outcome: "refused" });
      await append(named);
      await append(later);
      await append(event(`ws_${uid()}`));
      expect(await list({ workspaceId: w })).toEqual([later, named]);
      expect((await store().transaction((tx) => tx.listAudit({ workspaceId: w, limit: 1 }))).map(unchained)).toEqual([later]);
    });

    it("filters by actor, target, operation and time range, and pages from an id", async () => {
      const w = `ws_${uid()}`;
      const a = event(w, { actorId: "rk_one", targets: ["key_a"], operation: "keys.createKey", time: T0 + 10 });
      const b = event(w, { actorId: "rk_two", targets: ["key_a", "key_b"], time: T0 + 20 });
      const c = event(w, { actorId: "rk_one", targets: ["key_b"], time: T0 + 30 });
      for (const e of [a, b, c]) await append(e);
      const ids = async (q: Record<string, unknown>) => (await list({ workspaceId: w, ...q })).map((e) => e.id);
      expect(await ids({ actorId: "rk_one" })).toEqual([c.id, a.id]);
      expect(await ids({ targetId: "key_a" })).toEqual([b.id, a.id]);
      expect(await ids({ targetId: "key_b", actorId: "rk_one" })).toEqual([c.id]);
      expect(await ids({ operation: "keys.createKey" })).toEqual([a.id]);
      expect(await ids({ since: T0 + 20 })).toEqual([c.id, b.id]);
      expect(await ids({ until: T0 + 20 })).toEqual([a.id]);
      expect(await ids({ since: T0 + 10, until: T0 + 30 })).toEqual([b.id, a.id]);
      expect(await ids({ from: b.id })).toEqual([b.id, a.id]);
      expect(await ids({ from: b.id, limit: 1 })).toEqual([b.id]);
      expect(await ids({ targetId: "key_none" })).toEqual([]);
    });

    it("finds a record by each of many targets", async () => {
      const w = `ws_${uid()}`;
      const targets = Array.from({ length: 11 }, (_, i) => `key_many${i}`);
      const many = event(w, { targets });
      await append(many);
      await append(event(w, { targets: ["key_many3"], time: T0 + 1 }));
      for (const targetId of targets) expect(await list({ workspaceId: w, targetId })).toContainEqual(many);
      expect((await list({ workspaceId: w, targetId: "key_many3" })).length).toBe(2);
    });

    it("keeps a record appended in a transaction only when the transaction commits", async () => {
      const w = `ws_${uid()}`;
      const boom = new Error("boom");
      await expect(
        store().transaction(async (tx) => {
          await tx.appendAudit(event(w));
          throw boom;
        }),
      ).rejects.toBe(boom);
      expect(await list({ workspaceId: w })).toEqual([]);
      const alone = event(w);
      await store().direct.appendAudit(alone);
      expect(await list({ workspaceId: w })).toEqual([alone]);
    });

    it("deletes the records older than a time (and only those), their targets with them", async () => {
      const w = `ws_${uid()}`;
      const old = event(w, { time: 1_000, targets: ["key_old"] });
      const kept = event(w, { time: 2_000, targets: ["key_old"] });
      await append(old);
      await append(kept);
      expect(await store().deleteAuditBefore(2_000)).toBeGreaterThanOrEqual(1);
      expect(await list({ workspaceId: w })).toEqual([kept]);
      expect(await list({ workspaceId: w, targetId: "key_old" })).toEqual([kept]);
    });

    it("chains a workspace's records: seq from 1, each prevHash the hash before it, each hash over the record", async () => {
      const w = `ws_${uid()}`;
      const other = `ws_${uid()}`;
      for (const e of [
        event(w),
        event(other),
        event(w, { actorName: "ci" }),
        event(w, { change: { b: 1, a: [2, { z: null, y: "é" }], q: '"seq":1 \\ 🎉 \u2028', prevHash: "x" } }),
      ])
        await append(e);
      const chain = (await store().direct.listAudit({ workspaceId: w, limit: 10 })).reverse();
      expect(chain.map((e) => e.seq)).toEqual([1, 2, 3]);
      expect(chain.map((e) => e.prevHash)).toEqual([GENESIS_HASH, chain[0]!.hash, chain[1]!.hash]);
      for (const e of chain) expect(e.hash).toBe(auditHash(auditView(e)));
      expect((await store().direct.listAudit({ workspaceId: other, limit: 10 }))[0]).toMatchObject({ seq: 1, prevHash: GENESIS_HASH });
      expect((await store().auditHeads()).get(w)).toEqual({ seq: 3, hash: chain[2]!.hash });
      const verdicts = await verifyStoredAudit(store());
      expect(verdicts.find((v) => v.workspaceId === w)).toEqual({
        workspaceId: w,
        summary: { records: 3, unchained: 0, firstSeq: 1, head: { seq: 3, hash: chain[2]!.hash } },
      });
    });

    it("keeps the chain one line under concurrent appends, and a rolled-back append leaves no gap", async () => {
      const w = `ws_${uid()}`;
      const boom = new Error("boom");
      const writes = Array.from({ length: 30 }, (_, i) => {
        if (i % 10 === 3) {
          return store()
            .transaction(async (tx) => {
              await tx.appendAudit(event(w));
              throw boom;
            })
            .catch((err: unknown) => expect(err).toBe(boom));
        }
        return i % 2 === 0 ? store().direct.appendAudit(event(w)) : append(event(w));
      });
      await Promise.all(writes);
      const chain: AuditEvent[] = [];
      let after: { seq?: number; id: string } | undefined;
      for (;;) {
        const page = await store().readAuditChain(w, after, 7);
        chain.push(...page);
        if (page.length < 7) break;
        after = { seq: page[6]!.seq, id: page[6]!.id };
      }
      expect(chain.map((e) => e.seq)).toEqual(Array.from({ length: 27 }, (_, i) => i + 1));
      const verdict = (await verifyStoredAudit(store())).find((v) => v.workspaceId === w);
      expect(verdict?.problem).toBeUndefined();
      expect(verdict?.summary.head.seq).toBe(27);
    });

    it("moves a root key's last use forward, never back (markUsed)", async () => {
      const id = `rk_${uid()}`;
      await store().direct.markUsed(new Map([[id, T0 + 60_000]]));
      await store().direct.markUsed(new Map([[id, T0]]));
      expect(await store().direct.lastUsed([id, `rk_${uid()}`])).toEqual(new Map([[id, T0 + 60_000]]));
      await store().transaction((tx) => tx.markUsed(new Map([[id, T0 + 120_000]])));
      expect(await store().direct.lastUsed([id])).toEqual(new Map([[id, T0 + 120_000]]));
    });
  });
}
