// An optimistic transaction of the PostgreSQL store (`TransactionOptions.optimistic`). Its operation
// reads records by id as outside a transaction (from the record cache where it keeps them: no lock,
// no round trip), and its writes wait. At its end one statement, on the pool, checks that every
// record read is still as it was read (its row's `data` equal to the record; locked until the
// statement ends, before anything is written: `FOR SHARE`, or `FOR UPDATE` when the statement
// writes it too, so that two such statements wait for each other rather than deadlock) and makes
// all the writes: a createKey whose API is kept is one round trip (the check of the API, the key
// with its links and its audit record) where a transaction takes five (`BEGIN`, the API, the key,
// the audit record, `COMMIT`). Where a record changed meanwhile, or the copy read was stale, the
// statement fails (SQLSTATE KG001, from `unchanged` in schema.ts) having written nothing; where the
// operation calls what cannot wait (a lookup by name, a delete, a counter), that call throws
// `RunAgain`. Either way the store runs the operation again as an ordinary transaction. A statement
// with an audit record waits for its workspace's turn (chain-turns.ts).
import type { StorageTx } from "../seam";
import { RunAgain } from "../seam";
import type { AuditEvent, TableName, Tables, WebhookMessage } from "../../records";
import { LAYOUTS } from "./rows";
import { Params, statementOf, type Part, type Query } from "./query";
import { putPart } from "./writes";
import { appendAuditPart } from "./audit";
import { enqueuePart } from "./outbox";
import type { Turns } from "./chain-turns";

/** The SQLSTATE of a record read that changed before the writes (schema.ts, `unchanged`). */
export const CHANGED_SQLSTATE = "KG001";

/**
 * Tables whose records carry more than their row's `data` (a key's links and credits, a role's
 * permissions): not read here, as the check compares a record with `data`.
 */
const LINKED: ReadonlySet<TableName> = new Set<TableName>(["keys", "roles"]);

/** The condition every write of the statement is made under: the check, which fails the statement when it does not hold. */
const WHEN = "(SELECT ok FROM g)";

/** A record read: its table, its id, and the record as JSON (`null`: there was none). */
interface Read {
  table: TableName;
  id: string;
  json: string | null;
}

type OptimisticCalls = "get" | "put" | "appendAudit" | "enqueueWebhooks";

/** The store's calls an optimistic transaction makes itself; each other one gives the attempt up. */
export type OptimisticTx = Pick<StorageTx, OptimisticCalls> & {
  /** Sends the check and the writes (nothing when there are none and one record was read); whether a record others may keep was changed. */
  commit(): Promise<boolean>;
  /** Whether a call gave this attempt up (`fn` may have caught its `RunAgain`). */
  abandoned(): boolean;
};

/**
 * A `StorageTx` for one optimistic attempt: its reads through `direct` (the store's calls outside a
 * transaction, through its record cache), its statement over `query` (the pool). `schema`: the
 * schema's quoted name, `t`: a table's schema-qualified name; `announces`: whether a table's
 * changes are announced to the record caches; `chainTurns`: the store's turns of the workspaces'
 * audit chains, a statement with an audit record sent in its workspace's.
 */
export function optimisticTx(
  direct: StorageTx,
  query: Query,
  schema: string,
  t: (table: string) => string,
  announces: (table: TableName) => boolean,
  chainTurns: Turns,
): StorageTx & OptimisticTx {
  const reads: Read[] = [];
  /** `table id` of each record put: its check locks it as the write will (FOR UPDATE), not FOR SHARE. */
  const written = new Set<string>();
  const parts: Part[] = [];
  const params = new Params();
  /** The answers that tell whether a key was created (`a<n>` of the statement), of puts the caches must hear of unless so. */
  const announced: Array<{ part: number; creates: boolean }> = [];
  let gaveUp: string | undefined;
  /** The workspace whose audit chain the statement appends to, if it does. */
  let chain: string | undefined;

  const giveUp = (why: string): never => {
    gaveUp ??= why;
    throw new RunAgain(why);
  };
  const notDeferred = (name: string) => async () => giveUp(`${name} is not made in an optimistic transaction`);

  const tx: OptimisticTx = {
    async get<T extends TableName>(table: T, id: string): Promise<Tables[T] | undefined> {
      if (parts.length > 0) giveUp("a read after a write would not see it");
      if (LINKED.has(table)) giveUp(`${table} are more than their rows' data`);
      const record = await direct.get(table, id);
      if (!reads.some((r) => r.table === table && r.id === id)) {
        reads.push({ table, id, json: record === undefined ? null : JSON.stringify(record) });
      }
      return record;
    },
    async put<T extends TableName>(table: T, record: Tables[T]): Promise<void> {
      if (announces(table)) announced.push({ part: parts.length, creates: table === "keys" });
      written.add(`${table} ${record.id}`);
      parts.push(putPart(t, table, record, params, `w${parts.length}`, WHEN));
    },
    async appendAudit(event: AuditEvent): Promise<void> {
      chain = event.workspaceId;
      parts.push(appendAuditPart(t, event, params, `w${parts.length}`, WHEN));
    },
    async enqueueWebhooks(messages: readonly WebhookMessage[]): Promise<void> {
      if (messages.length > 0) parts.push(enqueuePart(t, messages, params, `w${parts.length}`, WHEN));
    },
    abandoned: () => gaveUp !== undefined,
    async commit(): Promise<boolean> {
      if (gaveUp !== undefined) throw new RunAgain(gaveUp);
      if (parts.length === 0 && reads.length <= 1) return false;
      const check = reads.map((r) => {
        const table = t(LAYOUTS[r.table].table);
        const id = params.add(r.id);
        const lock = written.has(`${r.table} ${r.id}`) ? "FOR UPDATE" : "FOR SHARE";
        return r.json === null
          ? `NOT EXISTS (SELECT 1 FROM ${table} WHERE id = ${id})`
          : `EXISTS (SELECT 1 FROM ${table} WHERE id = ${id} AND data = ${params.add(r.json)}::jsonb ${lock})`;
      });
      const guard: Part = {
        ctes: [`g AS (SELECT ${schema}.unchanged(${check.length === 0 ? "true" : check.join(" AND ")}) AS ok)`],
        answer: WHEN,
      };
      // a0 is the check; part i's answer is a(i + 1).
      const send = () => query<Record<string, unknown>>(statementOf([guard, ...parts]), params.values);
      const [row] = chain === undefined ? await send() : await chainTurns.run(chain, send);
      return announced.some((a) => !a.creates || row?.[`a${a.part + 1}`] !== true);
    },
  };

  const rest: Omit<StorageTx, OptimisticCalls> = {
    keyByHash: notDeferred("keyByHash"),
    rootKeyByHash: notDeferred("rootKeyByHash"),
    find: notDeferred("find"),
    list: notDeferred("list"),
    sortedKeys: notDeferred("sortedKeys"),
    delete: notDeferred("delete"),
    spendCredits: notDeferred("spendCredits"),
    limit: notDeferred("limit"),
    dropCounters: notDeferred("dropCounters"),
    getMeta: notDeferred("getMeta"),
    setMeta: notDeferred("setMeta"),
    lastUsed: notDeferred("lastUsed"),
    markUsed: notDeferred("markUsed"),
    listAudit: notDeferred("listAudit"),
    rescheduleWebhooks: notDeferred("rescheduleWebhooks"),
    claimExpiryNotices: notDeferred("claimExpiryNotices"),
  };
  return Object.assign(rest, tx) as StorageTx & OptimisticTx;
}
