// The key.expiring claim's part of the store conformance suite: a claim takes the keys expiring in
// its range that were not noticed for their current expiry, once; a changed expiry arms a key
// again; a claim rolled back takes nothing; two claims at the same time never take the same key.
// Called by describeStoreConformance with its store; every test uses a workspace and times of its own.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { Storage } from "../../../src/server/storage/seam";
import type { ExpiringKey, KeyRecord } from "../../../src/server/records";
import { keyRecord } from "../../support/records";

const uid = (): string => randomBytes(6).toString("hex");

export function describeExpiryNotices(store: () => Storage): void {
  describe("key.expiring claims", () => {
    const key = (workspaceId: string, expires: number | undefined): KeyRecord =>
      keyRecord({ id: `key_${uid()}`, workspaceId, apiId: "api_x", ...(expires === undefined ? {} : { expires }) });
    // Claims look at keys of every workspace: each test's keys expire at times of their own.
    const base = () => 2_000_000_000_000 + Math.floor(Math.random() * 1e6) * 1_000_000;
    const claim = async (w: string, from: number, until: number): Promise<ExpiringKey[]> =>
      (await store().transaction((tx) => tx.claimExpiryNotices(from, until, 1000))).filter((k) => k.workspaceId === w);

    it("takes the keys expiring in the range once, earliest first, and marks them", async () => {
      const w = `ws_${uid()}`;
      const t = base();
      const soon = key(w, t + 10);
      const sooner = key(w, t + 5);
      const later = key(w, t + 100_000);
      const expired = key(w, t);
      const never = key(w, undefined);
      await store().transaction(async (tx) => {
        for (const k of [soon, sooner, later, expired, never]) await tx.put("keys", k);
      });
      expect(await claim(w, t, t + 1_000)).toEqual([
        { keyId: sooner.id, workspaceId: w, apiId: "api_x", expires: t + 5 },
        { keyId: soon.id, workspaceId: w, apiId: "api_x", expires: t + 10 },
      ]);
      expect(await claim(w, t, t + 1_000)).toEqual([]);
      expect((await store().direct.get("keys", soon.id))?.expiryNoticeFor).toBe(t + 10);
      // A changed expiry arms the key again; the same expiry put again does not.
      await store().transaction(async (tx) => {
        await tx.put("keys", { ...(await tx.get("keys", soon.id))!, expires: t + 20 });
        await tx.put("keys", { ...(await tx.get("keys", sooner.id))!, name: "renamed" });
      });
      expect((await claim(w, t, t + 1_000)).map((k) => [k.keyId, k.expires])).toEqual([[soon.id, t + 20]]);
    });

    it("takes nothing in a transaction rolled back", async () => {
      const w = `ws_${uid()}`;
      const t = base();
      const k = key(w, t + 10);
      await store().transaction((tx) => tx.put("keys", k));
      await expect(
        store().transaction(async (tx) => {
          expect((await tx.claimExpiryNotices(t, t + 1_000, 1000)).map((x) => x.keyId)).toContain(k.id);
          throw new Error("boom");
        }),
      ).rejects.toThrow("boom");
      expect((await claim(w, t, t + 1_000)).map((x) => x.keyId)).toEqual([k.id]);
    });

    it("never gives one key to two claims made at the same time", async () => {
      const w = `ws_${uid()}`;
      const t = base();
      const keys = Array.from({ length: 12 }, (_, i) => key(w, t + 1 + i));
      await store().transaction(async (tx) => {
        for (const k of keys) await tx.put("keys", k);
      });
      const claims = await Promise.all([0, 1, 2].map(() => claim(w, t, t + 1_000)));
      const taken = claims.flat().map((k) => k.keyId);
      expect(taken).toHaveLength(keys.length);
      expect([...taken].sort()).toEqual(keys.map((k) => k.id).sort());
    });
  });
}
