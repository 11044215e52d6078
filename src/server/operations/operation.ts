// The shape of one operation of the key service: its wire name, how it uses the store (`access`),
// the authorisation it declares, extra checks across its body's fields, and its handler (`run`).
// Its body's schema is in the contract (src/protocol/contract), found by the wire name.
import type { Static } from "typebox";
import type { EXTENSION_CONTRACT } from "../../protocol/contract";
import type { OperationName, Operations, Pagination, ValidationErrorDetail } from "../../protocol/types";
import type { RootContext } from "./auth";
import type { KeyVault } from "../domain/key-vault";
import type { AnalyticsPlan, AnalyticsScope } from "../analytics/plan";
import type { RatelimitCountQuery, StorageTx, WebhookQuery } from "../storage/seam";
import type { DueRefill, SpendOutcome } from "../domain/credits";
import type { RatelimitCount, VerificationEvent, WebhookMessage } from "../records";
import type { WebhookEvent } from "../webhooks/events";

/**
 * How an operation uses the store: `read` and `write` run in one transaction each; `direct`
 * runs on `Storage.direct`: its writes must be the atomic `spendCredits` and `limit`, or a `put` that
 * racing requests may repeat without harm (a namespace created on first use under an id derived from
 * its name; a migrated key rehashed to the same hash).
 */
type Access = "read" | "write" | "direct";

/** What an operation's steps see of its request: the store, the authenticated root key, the clock… */
export interface OpContext {
  tx: StorageTx;
  root: RootContext;
  /** The service clock, read once per request. */
  now: number;
  /** Address of the caller (for API IP allowlists): the socket's, or the last `X-Forwarded-For` entry with `trustProxy`. */
  ip: string;
  /** Seals and opens recoverable keys; undefined when no key-encryption key is configured. */
  vault: KeyVault | undefined;
  /** The request's id (`meta.requestId` of the answer). */
  requestId: string;
  /** The origin the caller reached the service at (`Host`; `https:` behind TLS): where portal URLs point. */
  origin: string;
  /**
   * Notes a change the operation made beyond what its `audit` declares (a rate-limit namespace
   * created on first use): written to the audit log with the request's record.
   */
  changed(change: AuditChange): void;
  /** Notes a verification event (appended to the store with the next batch). */
  record(event: VerificationEvent): void;
  /** Counts one outcome of ratelimit.limit in a namespace of the workspace, at `time` (added to the store with the next batch of events). */
  countLimit(workspaceId: string, namespaceId: string, time: number, passed: boolean): void;
  /** The webhooks side of the service. */
  webhooks: {
    /** Whether endpoints on non-public addresses are allowed (`--webhooks-allow-private`). */
    allowPrivate: boolean;
    /** A workspace's outbox messages matching the query, newest first. */
    messages(query: WebhookQuery): Promise<WebhookMessage[]>;
    /** One outbox message by id, of any workspace. */
    message(messageId: string): Promise<WebhookMessage | undefined>;
    /** Puts a message back in the outbox, due at once, and asks for a delivery pass; returns it as written. */
    resend(message: WebhookMessage): Promise<WebhookMessage>;
    /** Asks for a delivery pass (messages put in the outbox on `direct`, committed already). */
    deliverSoon(): void;
    /**
     * Charges a key's credits in a transaction of its own, with the messages of the webhook events
     * the charge causes (`events` of its outcome) in the outbox: written together or not at all. For
     * the charges `direct` leaves to a transaction (`SpendOutcome.crossing`).
     */
    chargeWithEvents(
      keyId: string,
      cost: number,
      now: number,
      refill: DueRefill | undefined,
      events: (charged: { remaining: number }) => readonly WebhookEvent[],
    ): Promise<SpendOutcome | undefined>;
  };
  /** The analytics side of the service: what a query may reach. */
  analytics: {
    /** Retention of verification events, ms. */
    retentionMs: number;
    /** Runs a checked plan on the store (outside any transaction). */
    query(plan: AnalyticsPlan, scope: AnalyticsScope): Promise<Array<Record<string, unknown>>>;
    /** The counts of ratelimit.limit outcomes stored (outside any transaction). */
    ratelimitCounts(query: RatelimitCountQuery): Promise<RatelimitCount[]>;
  };
}

/** What `run` sees: the request's context and what the operation's authorisation resolved. */
export interface RunContext<Resource> extends OpContext {
  /** The record the authorisation loaded to decide (the key, the API, the namespaces…), so `run` does not load it again. */
  resource: Resource;
}

/**
 * The authorisation an operation declares (built with the forms of `./authorization`): which
 * permission, on which resource. The pipeline runs it once the root key is known and before `run`:
 * it throws the 403 (or the 404 production masks it with) and returns `run`'s `ctx.resource`.
 */
export type Authorization<Body, Resource> =
  | {
      /** The permission asked for, in production's words (`api.*.create_api`, `api.<apiId>.read_api`). */
      readonly permission: string;
      /** Decided from the root key's permissions alone, before the transaction opens. */
      readonly reads: false;
      check(root: RootContext, body: Body): Resource;
    }
  | {
      readonly permission: string;
      /** Needs records of the store: runs first in the operation's transaction (or on `direct`). */
      readonly reads: true;
      check(ctx: OpContext, body: Body): Promise<Resource>;
    };

/** What a change did, as its audit record tells it. */
export interface AuditChange {
  /** Ids of the records changed. */
  targets: ReadonlyArray<string | undefined>;
  /** A compact description of the change (never a secret). Default: the request body described (`describeChange`). */
  change?: Record<string, unknown>;
}

/** The `audit` of an operation whose `run` notes the ids it changed itself (`ctx.changed`), once it has resolved them. */
export const targetsNotedByRun = (): AuditChange => ({ targets: [] });

export interface OpResult<T> {
  data: T;
  pagination?: Pagination;
}

/** One operation: what the pipeline needs to serve `POST /v2/<name>`. */
export interface OperationDef<Name extends string, Req, Res, Resource = unknown> {
  /** The wire name, `<group>.<operation>`. */
  name: Name;
  access: Access;
  /**
   * For a `write`: whether this request's steps, authorisation and audit record included, only
   * read records by id (`get`) before they write (`put`, the audit record, webhook messages): then
   * the store may run them optimistically (`TransactionOptions.optimistic`). Absent: never.
   */
  optimistic?(body: Req): boolean;
  /**
   * Who calls it: a root key (`Authorization: Bearer`; the default), a portal session's end user by
   * its access token (`portalSession`: `Authorization: Bearer pat_…` or the `portal_session` cookie),
   * or by the session's exchange code in the body (`portalCode`: portal.exchangeCode). Every
   * `portal.*` answer, errors included, carries `Cache-Control: no-store`.
   */
  caller?: "root" | "portalSession" | "portalCode";
  authorize: Authorization<Req, Resource>;
  /**
   * Present on every operation that changes state: what a successful call changed. The pipeline
   * writes the audit record in the operation's transaction, after `run`. Absent: read-only.
   */
  audit?(body: Req, data: Res, resource: Resource): AuditChange;
  /** Checks across fields, run after the contract's schema and still before the root key is looked up. */
  refine?(body: Req): ValidationErrorDetail[];
  run(ctx: RunContext<Resource>, body: Req): Promise<OpResult<Res>>;
  /**
   * Answers `Accept: application/x-ndjson` with every item matching the request, one JSON document
   * a line, instead of a page (for SIEM ingestion). Runs on `Storage.direct`, once authorised.
   */
  exportAll?(ctx: RunContext<Resource>, body: Req): AsyncIterable<unknown>;
}

/** An operation of production's v2 API, typed by the protocol's `Operations` table. */
type Operation<N extends OperationName> = OperationDef<N, Operations[N]["req"], Operations[N]["res"]>;

export type OperationTable = { [N in OperationName]: Operation<N> };

/** Defines one operation with its types taken from the `Operations` table. */
export function defineOperation<N extends OperationName, Resource>(
  name: N,
  def: Omit<OperationDef<N, Operations[N]["req"], Operations[N]["res"], Resource>, "name">,
): OperationDef<N, Operations[N]["req"], Operations[N]["res"], Resource> {
  return { name, ...def };
}

type Extensions = typeof EXTENSION_CONTRACT;

/** Defines one of keyguard's own operations (not in production's v2 API), with its types taken from its contract. */
export function defineExtension<N extends keyof Extensions, Resource = unknown>(
  name: N,
  def: Omit<OperationDef<N, Static<Extensions[N]["request"]>, Static<Extensions[N]["response"]>, Resource>, "name">,
): OperationDef<N, Static<Extensions[N]["request"]>, Static<Extensions[N]["response"]>, Resource> {
  return { name, ...def };
}
