// Charges made together outside a transaction share one `UPDATE` (as key lookups share a `SELECT`,
// coalesce.ts): while a statement is out, further charges wait and then leave together. Each row
// of the statement makes the same check as `spendCredits`' own (the due refill, the balance, the
// crossing), and PostgreSQL re-checks it on the balance a concurrent spend left, so the charges
// stay exact. One statement updates a row once: a second charge of a key already in the batch
// waits for the next one, so it sees the balance the first left. A charge the statement did not
// make is answered as `spendCredits` answers it (`notCharged`).
import type { CreditsCrossings, DueRefill, SpendOutcome } from "../../domain/credits";
import type { CoalescerSettings } from "./coalesce";
import { notCharged, spendCredits } from "./credits";
import type { Query } from "./query";

interface Charge {
  keyId: string;
  cost: number;
  now: number;
  refill: DueRefill | undefined;
  crossings: CreditsCrossings | undefined;
  resolve: (outcome: SpendOutcome | undefined) => void;
  reject: (err: unknown) => void;
}

export class CreditsBatcher {
  private waiting: Charge[] = [];
  private out = 0;
  /** When the last statement left (performance.now()). */
  private lastSent = 0;

  /** `keys`: the schema-qualified keys table. */
  constructor(
    private readonly query: Query,
    private readonly keys: string,
    private readonly settings: CoalescerSettings,
  ) {}

  spend(keyId: string, cost: number, now: number, refill?: DueRefill, crossings?: CreditsCrossings): Promise<SpendOutcome | undefined> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ keyId, cost, now, refill, crossings, resolve, reject });
      const { maxOut, maxBatch, patienceMs } = this.settings;
      if (this.out < maxOut || this.waiting.length >= maxBatch || performance.now() - this.lastSent >= patienceMs) this.send();
    });
  }

  /** Sends the waiting charges of distinct keys, at most `maxBatch`, in one statement; the rest wait. */
  private send(): void {
    if (this.waiting.length === 0) return;
    const batch: Charge[] = [];
    const rest: Charge[] = [];
    const keyIds = new Set<string>();
    for (const c of this.waiting) {
      if (batch.length < this.settings.maxBatch && !keyIds.has(c.keyId)) {
        keyIds.add(c.keyId);
        batch.push(c);
      } else rest.push(c);
    }
    this.waiting = rest;
    this.out++;
    this.lastSent = performance.now();
    let charged: Promise<Array<SpendOutcome | undefined>>;
    try {
      charged = batch.length === 1 ? this.one(batch[0]!) : this.many(batch);
    } catch (err) {
      charged = Promise.reject(err);
    }
    charged
      .then(
        (outcomes) => {
          for (let i = 0; i < batch.length; i++) batch[i]!.resolve(outcomes[i]);
        },
        (err: unknown) => {
          for (const c of batch) c.reject(err);
        },
      )
      .finally(() => {
        this.out--;
        if (this.out < this.settings.maxOut) this.send();
      });
  }

  /** One charge alone keeps `spendCredits`' plain statement. */
  private async one(c: Charge): Promise<Array<SpendOutcome | undefined>> {
    return [await spendCredits(this.query, this.keys, c.keyId, c.cost, c.now, c.refill, c.crossings)];
  }

  private async many(batch: readonly Charge[]): Promise<Array<SpendOutcome | undefined>> {
    const due = "(v.boundary IS NOT NULL AND k.credits_last_refill_at < v.boundary)";
    const balance = `(CASE WHEN ${due} THEN v.amount ELSE k.credits_remaining END)`;
    // As in credits.ts: with `crossings` (v.guarded), not when it crosses, to 0 or from above the
    // low threshold to at or below it.
    const crossing = `(v.guarded AND v.cost > 0 AND (${balance} = v.cost OR (v.low IS NOT NULL AND ${balance} > v.low AND ${balance} - v.cost <= v.low)))`;
    const rows = await this.query<{ id: string; remaining: number }>(
      `UPDATE ${this.keys} k SET credits_remaining = ${balance} - v.cost,
         credits_last_refill_at = CASE WHEN ${due} THEN v.now ELSE k.credits_last_refill_at END
       FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::boolean[], $7::bigint[])
         AS v(id, cost, boundary, amount, now, guarded, low)
       WHERE k.id = v.id AND k.credits_remaining IS NOT NULL AND ${balance} >= v.cost AND NOT ${crossing}
       RETURNING k.id, k.credits_remaining::float8 AS remaining`,
      [
        batch.map((c) => c.keyId),
        batch.map((c) => c.cost),
        batch.map((c) => c.refill?.boundary ?? null),
        batch.map((c) => c.refill?.amount ?? null),
        batch.map((c) => c.now),
        batch.map((c) => c.crossings !== undefined),
        batch.map((c) => c.crossings?.lowThreshold ?? null),
      ],
    );
    const remaining = new Map(rows.map((r) => [r.id, Number(r.remaining)]));
    return Promise.all(
      batch.map((c) => {
        const left = remaining.get(c.keyId);
        if (left !== undefined) return { ok: true as const, remaining: left };
        return notCharged(this.query, this.keys, c.keyId, c.cost, c.now, c.refill, c.crossings);
      }),
    );
  }
}
