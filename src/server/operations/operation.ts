// The shape of one operation of the local service (its body's schema is in the contract,
// src/protocol/contract): extra checks that need the whole body, how it uses the store (`access`) and an asynchronous `run` over a `StoreTx`.
import type { Static } from "typebox";
import type { EXTENSION_CONTRACT } from "../../protocol/contract";
import type { OperationName, Operations, Pagination, ValidationErrorDetail } from "../../protocol/types";
import type { RootContext } from "./auth";
import type { KeyVault } from "../domain/key-vault";
import type { AnalyticsPlan, AnalyticsScope } from "../analytics/plan";
import type { StoreTx, VerificationEvent } from "../storage/seam";

/**
 * How an operation uses the store: `read` and `write` run in one transaction each; `direct`
 * runs on `Store.direct`: its writes must be the atomic `spendCredits` and `limit`, or a `put` that
 * racing requests may repeat without harm (a namespace created on first use under an id derived from
 * its name; a migrated key rehashed to the same hash).
 */
type Access = "read" | "write" | "direct";

export interface OpContext {
  tx: StoreTx;
  root: RootContext;
  /** The service clock, read once per request. */
  now: number;
  /** Address of the caller (for API IP allowlists): the socket's, or the first `X-Forwarded-For` entry with `trustProxy`. */
  ip: string;
  /** Seals and opens recoverable keys; undefined when no key-encryption key is configured. */
  vault: KeyVault | undefined;
  /** The request's id (`meta.requestId` of the answer). */
  requestId: string;
  /** Notes a verification event (appended to the store with the next batch). */
  record(event: VerificationEvent): void;
  /** The analytics side of the service: what a query may reach. */
  analytics: {
    /** Retention of verification events, ms. */
    retentionMs: number;
    /** Runs a checked plan on the store (outside any transaction). */
    query(plan: AnalyticsPlan, scope: AnalyticsScope): Promise<Array<Record<string, unknown>>>;
  };
}

export interface OpResult<T> {
  data: T;
  pagination?: Pagination;
}

export interface OperationDef<N extends OperationName> {
  access: Access;
  /** Checks across fields, run after the contract's schema and still before the root key is looked up. */
  refine?(body: Operations[N]["req"]): ValidationErrorDetail[];
  run(ctx: OpContext, body: Operations[N]["req"]): Promise<OpResult<Operations[N]["res"]>>;
}

export type OperationTable = { [N in OperationName]: OperationDef<N> };

/** Defines one operation with its types taken from the `Operations` table. */
export function defineOperation<N extends OperationName>(_name: N, def: OperationDef<N>): OperationDef<N> {
  return def;
}

/** An operation of keyguard's own (not in production's v2 API), with its body and answer types. */
export interface ExtensionDef<Req, Res> {
  access: Access;
  refine?(body: Req): ValidationErrorDetail[];
  run(ctx: OpContext, body: Req): Promise<OpResult<Res>>;
}

type Extensions = typeof EXTENSION_CONTRACT;

/** Defines one of keyguard's own operations, with its types taken from its contract. */
export function defineExtension<N extends keyof Extensions>(
  _name: N,
  def: ExtensionDef<Static<Extensions[N]["request"]>, Static<Extensions[N]["response"]>>,
): ExtensionDef<Static<Extensions[N]["request"]>, Static<Extensions[N]["response"]>> {
  return def;
}
