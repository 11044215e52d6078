// Charging credits in PostgreSQL: the due refill, the balance check and the charge in ONE
// `UPDATE` (a concurrent spend waits for the row and re-checks the condition on the balance the
// other left), so a balance never goes below zero and no credit is charged twice.
import type { CreditsCrossings, DueRefill, SpendOutcome } from "../../domain/credits";
import type { Query } from "./query";

/** `Storage.spendCredits` over `query`; `keys` is the schema-qualified keys table. */
export async function spendCredits(
  query: Query,
  keys: string,
  keyId: string,
  cost: number,
  now: number,
  refill?: DueRefill,
  crossings?: CreditsCrossings,
): Promise<SpendOutcome | undefined> {
  const boundary = refill?.boundary ?? null;
  const amount = refill?.amount ?? null;
  const due = "($3::bigint IS NOT NULL AND credits_last_refill_at < $3::bigint)";
  const balance = `(CASE WHEN ${due} THEN $4::bigint ELSE credits_remaining END)`;
  // With `crossings`: not when it crosses, to 0 or from above the low threshold ($6) to at or below
  // it (domain/credits.ts `crossings`).
  const unlessCrossing =
    crossings === undefined
      ? ""
      : `AND NOT ($2::bigint > 0 AND (${balance} = $2::bigint OR ($6::bigint IS NOT NULL AND ${balance} > $6::bigint AND ${balance} - $2::bigint <= $6::bigint)))`;
  const charged = await query<{ remaining: number }>(
    `UPDATE ${keys} SET credits_remaining = ${balance} - $2::bigint,
       credits_last_refill_at = CASE WHEN ${due} THEN $5::bigint ELSE credits_last_refill_at END
     WHERE id = $1 AND credits_remaining IS NOT NULL AND ${balance} >= $2::bigint ${unlessCrossing}
     RETURNING credits_remaining::float8 AS remaining`,
    crossings === undefined ? [keyId, cost, boundary, amount, now] : [keyId, cost, boundary, amount, now, crossings.lowThreshold ?? null],
  );
  if (charged[0]) return { ok: true, remaining: Number(charged[0].remaining) };
  return notCharged(query, keys, keyId, cost, now, refill, crossings);
}

/**
 * A charge its `UPDATE` did not make: applies a refill that fell due anyway, and reports the
 * balance (undefined for a key without credits or not found).
 */
export async function notCharged(
  query: Query,
  keys: string,
  keyId: string,
  cost: number,
  now: number,
  refill?: DueRefill,
  crossings?: CreditsCrossings,
): Promise<SpendOutcome | undefined> {
  const boundary = refill?.boundary ?? null;
  const amount = refill?.amount ?? null;
  const rows =
    refill === undefined
      ? []
      : await query<{ remaining: number }>(
          `UPDATE ${keys} SET credits_remaining = $2::bigint, credits_last_refill_at = $4::bigint
           WHERE id = $1 AND credits_remaining IS NOT NULL AND credits_last_refill_at < $3::bigint
           RETURNING credits_remaining::float8 AS remaining`,
          [keyId, amount, boundary, now],
        );
  const balanceRows = rows.length
    ? rows
    : await query<{ remaining: number | null }>(`SELECT credits_remaining::float8 AS remaining FROM ${keys} WHERE id = $1`, [keyId]);
  const remaining = balanceRows[0]?.remaining;
  if (remaining === undefined || remaining === null) return undefined;
  // Covered but not charged: it would cross (or a concurrent change let it through since).
  if (crossings !== undefined && cost > 0 && Number(remaining) >= cost) return { ok: false, remaining: Number(remaining), crossing: true };
  return { ok: false, remaining: Number(remaining) };
}
