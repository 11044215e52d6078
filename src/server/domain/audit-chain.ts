// The audit log's hash chain (docs/security.md, "The audit chain"): each record of a workspace
// carries `seq` (its place in the workspace's log, from 1), `prevHash` (the hash of the record
// before it; GENESIS_HASH for the first) and `hash`, the hex SHA-256 of its canonical form. And the
// check of a chain, record by record, naming the first record changed, removed or inserted.
import * as crypto from "node:crypto";
import type { AuditEventItem } from "../../protocol/types";
import type { AuditEvent } from "../records";

/** `prevHash` of a workspace's first chained record: 64 zeros. */
export const GENESIS_HASH = "0".repeat(64);

/** The head of a workspace's chain: the place and hash of its last record (seq 0 and GENESIS_HASH before the first). */
export interface ChainHead {
  seq: number;
  hash: string;
}

/**
 * The canonical form of a JSON value: object members sorted by name (code units, at every depth),
 * members whose value is `undefined` left out, arrays in order, strings and numbers as
 * `JSON.stringify` writes them, no whitespace (RFC 8785's JCS for the values a record holds).
 */
function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ",";
      const v: unknown = value[i];
      out += v === undefined ? "null" : canonicalJson(v);
    }
    return `${out}]`;
  }
  let out = "{";
  for (const name of canonicalNames(value as Record<string, unknown>)) {
    if (out.length > 1) out += ",";
    out += canonicalMember(name, (value as Record<string, unknown>)[name]);
  }
  return `${out}}`;
}

/** An object's member names in canonical order: sorted by code units (sort's default order), those whose value is `undefined` left out. */
function canonicalNames(value: Record<string, unknown>): string[] {
  return Object.keys(value)
    .filter((k) => value[k] !== undefined)
    .sort();
}

/** `"name":value` in canonical form. */
function canonicalMember(name: string, value: unknown): string {
  return `${JSON.stringify(name)}:${canonicalJson(value)}`;
}

const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: "hex") => string }).hash;

/** SHA-256 of `text` (UTF-8), hex. */
function sha256(text: string): string {
  // crypto.hash (Node >= 20.12) is the one-shot form, about twice as cheap as createHash.
  return oneShotHash !== undefined ? oneShotHash("sha256", text, "hex") : crypto.createHash("sha256").update(text, "utf8").digest("hex");
}

/** The members of an exported record (`auditView`) its hash covers: all but `hash`. The compiler checks that the list is whole. */
const COVERED_MEMBERS: Record<Exclude<keyof AuditEventItem, "hash">, true> = {
  actorId: true,
  actorName: true,
  change: true,
  id: true,
  ip: true,
  operation: true,
  outcome: true,
  prevHash: true,
  requestId: true,
  seq: true,
  targets: true,
  time: true,
};

/** The covered members in canonical order (sorted by code units, as `canonicalNames` sorts), each with its `"name":`. */
const COVERED = (Object.keys(COVERED_MEMBERS) as Array<keyof typeof COVERED_MEMBERS>)
  .sort()
  .map((name) => [name, `${JSON.stringify(name)}:`] as const);

/** Where a record is placed in its workspace's chain. */
interface Place {
  seq: number;
  prevHash: string;
}

/**
 * The canonical form of `event`'s exported record at `place`, without `hash`, written from the
 * event itself with no copy of it: `canonicalJson(auditView(placed))`. With "holes" (PostgreSQL's
 * template), the text cut where `prevHash` (between its quotes) and `seq` go.
 */
function coveredForm(event: AuditEvent, place: Place | "holes"): string[] {
  const pieces: string[] = [];
  let text = "{";
  let first = true;
  for (const [name, prefix] of COVERED) {
    const comma = first ? "" : ",";
    if ((name === "seq" || name === "prevHash") && place === "holes") {
      // prevHash is a string: its hole is between the quotes.
      const quote = name === "prevHash" ? '"' : "";
      pieces.push(`${text}${comma}${prefix}${quote}`);
      text = quote;
      first = false;
      continue;
    }
    const value: unknown =
      place === "holes" ? event[name] : name === "seq" ? place.seq : name === "prevHash" ? place.prevHash : event[name];
    if (value === undefined) continue;
    text += comma + prefix + canonicalJson(value);
    first = false;
  }
  pieces.push(`${text}}`);
  return pieces;
}

/** The hash of a record as exported (`audit.listEvents`'s item): SHA-256 over its canonical form without `hash`, hex. */
export function auditHash(item: AuditEventItem): string {
  const { hash: _hash, ...covered } = item;
  return sha256(canonicalJson(covered));
}

/** What a check found: the first record changed, removed or inserted. */
export interface ChainProblem {
  kind: "changed" | "removed" | "inserted";
  /** The place in the chain (`seq`) of the record, or of the first one missing. */
  seq?: number;
  /** The record's id (for a removal: the record after the gap, when there is one). */
  id?: string;
  message: string;
}

/** What a check saw of one workspace's log. */
export interface ChainSummary {
  records: number;
  /** Records from before the chain (no `seq`): not covered. */
  unchained: number;
  /** The first place present (1 unless older records were deleted by retention). */
  firstSeq?: number;
  head: ChainHead;
}

/**
 * Checks one workspace's log, fed in chain order: the records without `seq` first (by id), then
 * the others by `seq` (several with one `seq` by id). `expectedHead`: the head the store keeps (a
 * record removed or inserted at the end is seen against it); an export has none.
 */
export class ChainCheck {
  private problem: ChainProblem | undefined;
  private readonly unchainedIds: string[] = [];
  private records = 0;
  private firstSeq: number | undefined;
  /** The last record accepted. */
  private prev: (ChainHead & { id: string }) | undefined;
  /** Records sharing the `seq` being read. */
  private group: AuditEventItem[] = [];

  constructor(private expectedHead?: ChainHead) {}

  /**
   * The head read again after the records: records appended while the check read them (by a
   * service running meanwhile) are genuine when the head has moved past them. At exactly the
   * last record read, that record is checked against it; beyond it, there is no head to check.
   */
  headMovedTo(head: ChainHead, lastSeq: number): void {
    this.expectedHead = head.seq === lastSeq ? head : undefined;
  }

  /** The first problem found so far. */
  get found(): ChainProblem | undefined {
    return this.problem;
  }

  add(item: AuditEventItem): void {
    if (this.problem) return;
    this.records++;
    if (item.seq === undefined) {
      if (this.group.length > 0 || this.prev) {
        this.problem = { kind: "inserted", id: item.id, message: `record ${item.id} has no place in the chain but comes after it began` };
      } else this.unchainedIds.push(item.id);
      return;
    }
    if (this.group.length > 0 && this.group[0]!.seq !== item.seq) this.settleGroup();
    if (!this.problem) this.group.push(item);
  }

  /** Ends the check: the first problem, if any, and what was seen. */
  end(): { problem?: ChainProblem; summary: ChainSummary } {
    if (!this.problem && this.group.length > 0) this.settleGroup();
    if (!this.problem && this.expectedHead) this.checkHead(this.expectedHead);
    const summary: ChainSummary = {
      records: this.records,
      unchained: this.unchainedIds.length,
      head: this.prev ? { seq: this.prev.seq, hash: this.prev.hash } : { seq: 0, hash: GENESIS_HASH },
    };
    if (this.firstSeq !== undefined) summary.firstSeq = this.firstSeq;
    return this.problem ? { problem: this.problem, summary } : { summary };
  }

  /** The records of one `seq`: one of them genuine (its hash holds and it follows the previous), the others inserted. */
  private settleGroup(): void {
    const group = this.group;
    this.group = [];
    const seq = group[0]!.seq!;
    const prev = this.prev;
    if (prev === undefined) {
      this.firstSeq = seq;
      const after = this.unchainedIds.find((id) => id > group[0]!.id);
      if (after !== undefined) {
        this.problem = {
          kind: "inserted",
          id: after,
          message: `record ${after} has no place in the chain but is newer than its first record`,
        };
        return;
      }
    } else if (seq > prev.seq + 1) {
      this.problem = {
        kind: "removed",
        seq: prev.seq + 1,
        id: group[0]!.id,
        message: `record #${prev.seq + 1} is missing (between ${prev.id} and ${group[0]!.id})`,
      };
      return;
    }
    const holds = (r: AuditEventItem) => r.hash === auditHash(r);
    const links = (r: AuditEventItem) => (prev ? r.prevHash === prev.hash : seq > 1 || r.prevHash === GENESIS_HASH);
    const genuine = group.find((r) => holds(r) && links(r)) ?? group[0]!;
    const extra = group.find((r) => r !== genuine);
    if (extra) {
      this.problem = { kind: "inserted", seq, id: extra.id, message: `record ${extra.id} takes the place #${seq} of ${genuine.id}` };
      return;
    }
    if (!holds(genuine)) {
      this.problem = { kind: "changed", seq, id: genuine.id, message: `record #${seq} (${genuine.id}) does not match its hash` };
      return;
    }
    if (!links(genuine)) {
      // Its own hash holds: what it follows was changed (and its hash made again), or its prevHash was.
      this.problem = prev
        ? { kind: "changed", seq: prev.seq, id: prev.id, message: `record #${prev.seq} (${prev.id}) is not the one record #${seq} follows` }
        : { kind: "changed", seq, id: genuine.id, message: `record #1 (${genuine.id}) does not start the chain` };
      return;
    }
    this.prev = { seq, hash: genuine.hash!, id: genuine.id };
  }

  private checkHead(head: ChainHead): void {
    const last = this.prev ?? { seq: 0, hash: GENESIS_HASH, id: undefined };
    if (last.seq < head.seq) {
      const message = `record #${last.seq + 1} is missing (the last ${head.seq - last.seq} of the chain's ${head.seq})`;
      this.problem = { kind: "removed", seq: last.seq + 1, message };
    } else if (last.seq > head.seq) {
      this.problem = { kind: "inserted", seq: head.seq + 1, message: `records after #${head.seq}, the chain's last, were added` };
    } else if (last.hash !== head.hash) {
      this.problem = {
        kind: "changed",
        seq: last.seq,
        ...(last.id ? { id: last.id } : {}),
        message: `record #${last.seq} is not the chain's last`,
      };
    }
  }
}

/** `event` placed after `head`: its `seq`, `prevHash` and `hash` (over the record as exported), and the new head. */
export function chainAfter(event: AuditEvent, head: ChainHead): { event: AuditEvent; head: ChainHead } {
  const seq = head.seq + 1;
  const hash = sha256(coveredForm(event, { seq, prevHash: head.hash })[0]!);
  // Object.assign, not a spread: V8 spreads a record with properties added after its literal by a
  // slow path (about ten times the cost here).
  const placed: AuditEvent = Object.assign({}, event);
  placed.seq = seq;
  placed.prevHash = head.hash;
  placed.hash = hash;
  return { event: placed, head: { seq, hash } };
}

/**
 * The canonical form `chainAfter` hashes, with two holes: `event` placed at any head is
 * `before + head.hash + between + String(head.seq + 1) + after`. For a store that places a record
 * where its head is read (PostgreSQL, in the statement that moves the head), not before.
 */
export function chainTemplate(event: AuditEvent): { before: string; between: string; after: string } {
  // "prevHash" sorts before "seq".
  const [before, between, after] = coveredForm(event, "holes");
  return { before: before!, between: between!, after: after! };
}
