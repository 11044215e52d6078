// The shape of one operation of the local service: its body schema, extra checks that need the
// whole body, and a synchronous `run` over the in-memory state (so counters are race-free).
import type { OperationName, Operations, Pagination, ValidationErrorDetail } from "../protocol/types";
import type { RootContext } from "./auth";
import type { Store } from "./store";
import type { Schema } from "./validate";

export interface OpContext {
  store: Store;
  root: RootContext;
  /** The service clock, read once per request. */
  now: number;
  /** Source address of the request (for API IP allowlists). */
  ip: string;
}

export interface OpResult<T> {
  data: T;
  pagination?: Pagination;
}

export interface OperationDef<N extends OperationName> {
  schema: Schema;
  /** Checks across fields, run after `schema` and still before the root key is looked up. */
  refine?(body: Operations[N]["req"]): ValidationErrorDetail[];
  run(ctx: OpContext, body: Operations[N]["req"]): OpResult<Operations[N]["res"]>;
}

export type OperationTable = { [N in OperationName]: OperationDef<N> };

/** Defines one operation with its types taken from the `Operations` table. */
export function defineOperation<N extends OperationName>(_name: N, def: OperationDef<N>): OperationDef<N> {
  return def;
}
