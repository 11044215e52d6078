// Charges made together outside a transaction share one statement
// (src/server/storage/postgres/credits-batch.ts), against a real PostgreSQL and Redis: many
// charges at once, of several keys and several on one key, stay exact (no balance below zero,
// every success taken from the balance once), a crossing is still left to a transaction, a due
// refill is applied, and they leave in fewer statements than charges.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Storage } from "../../../src/server/storage/seam";
import { postgresStorage } from "../../../src/server/storage/postgres/store";
import type { SpendOutcome } from "../../../src/server/domain/credits";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";
import { keyRecord } from "../../support/records";

const skip = await postgresRedisSkipReason("the PostgreSQL store's charges made together");

describe.skipIf(skip !== undefined)("the PostgreSQL store's charges made together", () => {
  const ns = isolatedNamespace();
  let store: Storage;

  beforeAll(async () => {
    store = await postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema });
  });
  afterAll(async () => {
    await store?.close();
    await ns.drop();
  });

  const seed = async (remaining: number[]) => {
    const keys = remaining.map((r) => keyRecord({ credits: { remaining: r, lastRefillAt: 1 } }));
    await store.transaction(async (tx) => {
      for (const k of keys) await tx.put("keys", k);
    });
    return keys;
  };
  const balance = async (id: string) => (await store.direct.get("keys", id))?.credits?.remaining;

  it("charges many keys at once exactly, several charges of one key included, in fewer statements", async () => {
    const keys = await seed([30, 5, 1000, 0]);
    // 60 charges of 1 on the first (30 can pass), 20 on the second (5 can), 20 on the third, 5 on the empty one.
    const plan = [...Array(60).fill(0), ...Array(20).fill(1), ...Array(20).fill(2), ...Array(5).fill(3)] as number[];
    const statements = vi.spyOn(pg.Client.prototype, "query");
    let outcomes: Array<SpendOutcome | undefined>;
    let texts: string[];
    try {
      outcomes = await Promise.all(plan.map((i) => store.direct.spendCredits(keys[i]!.id, 1, Date.now())));
    } finally {
      texts = statements.mock.calls.map(([q]) => (typeof q === "string" ? q : (q as { text: string }).text));
      statements.mockRestore();
    }
    const passed = (i: number) => outcomes.filter((o, n) => plan[n] === i && o?.ok).length;
    expect([passed(0), passed(1), passed(2), passed(3)]).toEqual([30, 5, 20, 0]);
    expect(await Promise.all(keys.map((k) => balance(k.id)))).toEqual([0, 0, 980, 0]);
    // Every refusal reports the balance, never below zero.
    for (const o of outcomes) expect(o).toMatchObject({ remaining: expect.any(Number) });
    expect(outcomes.every((o) => o!.remaining >= 0)).toBe(true);
    const charges = texts.filter((t) => t.includes("credits_remaining = "));
    expect(charges.some((t) => t.includes("unnest("))).toBe(true);
    expect(charges.length).toBeLessThan(plan.length);
  });

  it("leaves a charge that would cross to a transaction, and applies a due refill, within a batch", async () => {
    const [lead, low, refilled, plain] = await seed([5, 10, 0, 50]);
    const now = Date.now();
    // The first charge leaves alone; the others wait for it and leave together.
    const [, ...outcomes] = await Promise.all([
      store.direct.spendCredits(lead!.id, 1, now),
      // Crosses the low threshold of 9: not charged, said to cross.
      store.direct.spendCredits(low!.id, 2, now, undefined, { lowThreshold: 9 }),
      // A refill fell due: refilled to 100, then charged.
      store.direct.spendCredits(refilled!.id, 3, now, { boundary: now - 1, amount: 100 }),
      store.direct.spendCredits(plain!.id, 50, now, undefined, { lowThreshold: undefined }),
      store.direct.spendCredits("no such key", 1, now),
    ]);
    expect(outcomes).toEqual([
      { ok: false, remaining: 10, crossing: true },
      { ok: true, remaining: 97 },
      // Reaching 0 crosses too.
      { ok: false, remaining: 50, crossing: true },
      undefined,
    ]);
    expect([await balance(low!.id), await balance(refilled!.id), await balance(plain!.id)]).toEqual([10, 97, 50]);
  });
});
