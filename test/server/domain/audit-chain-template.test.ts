// The audit chain's template (what the PostgreSQL store hashes in SQL): filled with a head, it is
// exactly the canonical form chainAfter hashes, for any record. And chainAfter's hash is the one a
// check computes again from the record as exported (the generic canonical form of auditView).
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { auditHash, chainAfter, chainTemplate, GENESIS_HASH } from "../../../src/server/domain/audit-chain";
import { auditView } from "../../../src/server/domain/views";
import type { AuditEvent } from "../../../src/server/records";

const base: AuditEvent = {
  id: "aud_1",
  time: 1_800_000_000_000,
  workspaceId: "ws_1",
  actorId: "rk_1",
  operation: "keys.createKey",
  targets: ["key_1", "api_1"],
  outcome: "success",
  requestId: "req_1",
  ip: "127.0.0.1",
  change: { name: "n" },
};

const sha = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

describe("chainTemplate", () => {
  const cases: Array<[string, AuditEvent]> = [
    ["a plain record", base],
    ["one with an actor's name", { ...base, actorName: "deploy bot" }],
    [
      "one whose change holds names and strings like the holes",
      { ...base, change: { prevHash: "x", seq: 3, q: '"seq":1 \\ 🎉 \u2028', a: [null, { z: 1 }] } },
    ],
    ["one with an empty change and a single target", { ...base, targets: ["key_1"], change: {} }],
    ["one already placed (its old place ignored)", { ...base, seq: 9, prevHash: "f".repeat(64), hash: "e".repeat(64) }],
  ];
  for (const [name, event] of cases) {
    it(`filled with a head gives chainAfter's hash: ${name}`, () => {
      const t = chainTemplate(event);
      for (const head of [
        { seq: 0, hash: GENESIS_HASH },
        { seq: 41, hash: "a".repeat(64) },
      ]) {
        const placed = chainAfter(event, head).event;
        expect(sha(`${t.before}${head.hash}${t.between}${head.seq + 1}${t.after}`)).toBe(placed.hash);
      }
    });

    it(`places it after the head with the hash of its exported record: ${name}`, () => {
      const head = { seq: 41, hash: "a".repeat(64) };
      const { event: placed, head: next } = chainAfter(event, head);
      expect(placed).toEqual({ ...event, seq: 42, prevHash: head.hash, hash: next.hash });
      expect(next.seq).toBe(42);
      expect(auditHash(auditView(placed))).toBe(next.hash);
    });
  }
});
