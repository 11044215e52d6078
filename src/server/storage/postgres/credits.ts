// Charging credits in PostgreSQL: the due refill, the balance check and the charge in ONE
// `UPDATE` (a concurrent spend waits for the row and re-checks the condition on the balance the
// other left), so a balance never goes below zero and no credit is charged twice.
import type { DueRefill, SpendOutcome } from "../seam";
import type { Query } from "./tx";

/** `Storage.spendCredits` over `query`; `keys` is the schema-qualified keys table. */
export async function spendCredits(
  query: Query,
  keys: string,
  keyId: string,
  cost: number,
  now: number,
  refill?: DueRefill,
): Promise<SpendOutcome | undefined> {
  const boundary = refill?.boundary ?? null;
  const amount = refill?.amount ?? null;
  const due = "($3::bigint IS NOT NULL AND credits_last_refill_at < $3::bigint)";
  const balance = `(CASE WHEN ${due} THEN $4::bigint ELSE credits_remaining END)`;
  const charged = await query<{ remaining: number }>(
    `UPDATE ${keys} SET credits_remaining = ${balance} - $2::bigint,
       credits_last_refill_at = CASE WHEN ${due} THEN $5::bigint ELSE credits_last_refill_at END
     WHERE id = $1 AND credits_remaining IS NOT NULL AND ${balance} >= $2::bigint
     RETURNING credits_remaining::float8 AS remaining`,
    [keyId, cost, boundary, amount, now],
  );
  if (charged[0]) return { ok: true, remaining: Number(charged[0].remaining) };
  // Not charged: apply a refill that fell due anyway, and report the balance.
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
  return { ok: false, remaining: Number(remaining) };
}
