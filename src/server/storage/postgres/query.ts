// What every statement module of the PostgreSQL store is given to run its statements: a transaction's
// client or the pool, behind one function type, so that the statements do not know which; and the
// parts a write statement is built from, so that several writes can leave in one statement.

/** Runs one statement; errors are already turned into `StoreUnavailableError` for outages. */
export type Query = <R>(text: string, params?: readonly unknown[]) => Promise<R[]>;

/** A statement's parameters, numbered as they are added: the parts of one statement share one. */
export class Params {
  readonly values: unknown[] = [];

  /** The placeholder (`$n`) of `value`, added to the list. */
  add(value: unknown): string {
    return `$${this.values.push(value)}`;
  }
}

/**
 * One write as `WITH` entries (named from the prefix its builder was given, so that parts do not
 * clash) and an expression of what the statement answers for it (`null` when nothing). Alone it is
 * a statement of its own (`runPart`); with others, one statement that writes them all
 * (optimistic.ts). Parts of one statement see the same snapshot: none reads what another writes.
 * A builder given a `when` (an SQL condition) writes only under it (`row`, `and`, `where` below):
 * there, a check every write must wait for.
 */
export interface Part {
  ctes: string[];
  answer: string;
}

/** The statement of `parts`: their entries, then one column per part's answer (`a0`, `a1`, …) and `extra`. */
export function statementOf(parts: readonly Part[], extra = ""): string {
  const answers = parts.map((p, i) => `${p.answer} AS a${i}`);
  if (extra !== "") answers.push(extra);
  return `WITH ${parts.flatMap((p) => p.ctes).join(",\n")}\nSELECT ${answers.join(", ")}`;
}

/** Runs the part `build` makes (over parameters of its own) as a statement of its own; its answer. */
export async function runPart<A>(query: Query, build: (p: Params) => Part): Promise<A | undefined> {
  const params = new Params();
  const [answer] = await query<{ a0: A }>(statementOf([build(params)]), params.values);
  return answer?.a0;
}

/** The source of a one-row insert: its values, or, `when` given, a select of them under it. */
export function row(values: readonly string[], when: string | undefined): string {
  return when === undefined ? `VALUES (${values.join(", ")})` : `SELECT ${values.join(", ")} WHERE ${when}`;
}

/** ` AND when` for a `WHERE` that has a condition already; nothing without `when`. */
export function and(when: string | undefined): string {
  return when === undefined ? "" : ` AND ${when}`;
}

/** ` WHERE when` for a select that has none; nothing without `when`. */
export function where(when: string | undefined): string {
  return when === undefined ? "" : ` WHERE ${when}`;
}
