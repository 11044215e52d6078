// keyguard's own audit.* operation: the workspace's audit log (every change made through the
// operations, and every attempt refused for permissions), newest first.
import * as Type from "typebox";
import { freeForm, id, listFields, strict, text } from "./fields";

/** Unix ms. */
const Time = Type.Integer({ minimum: 0 });

export const ListAuditEventsRequest = strict({
  /** Only what this root key did (its id, `rk_…`). */
  actorId: Type.Optional(id()),
  /** Only records naming this id among their targets (a key's history: its `keyId`). */
  targetId: Type.Optional(id()),
  /** Only this operation (`keys.createKey`). */
  operation: Type.Optional(text(128, { pattern: "^[A-Za-z]+\\.[A-Za-z]+$", "x-fix": "Use an operation name such as keys.createKey." })),
  /** From this time on (Unix ms, inclusive). */
  since: Type.Optional(Time),
  /** Before this time (Unix ms, exclusive). */
  until: Type.Optional(Time),
  ...listFields,
});

export const AuditEventItem = Type.Object({
  id: Type.String(),
  time: Type.Integer(),
  /** The root key that made the request (never the key). */
  actorId: Type.String(),
  actorName: Type.Optional(Type.String()),
  operation: Type.String(),
  /** Ids of the records changed, or aimed at by a refused attempt. */
  targets: Type.Array(Type.String()),
  outcome: Type.Union([Type.Literal("success"), Type.Literal("refused")]),
  requestId: Type.String(),
  /** The caller's address. */
  ip: Type.String(),
  /** A compact description of the change, or of the refusal. Never a key or a hash. */
  change: freeForm(),
  /** Its place in the workspace's audit chain, from 1 (absent on records from before the chain). */
  seq: Type.Optional(Type.Integer({ minimum: 1 })),
  /** The hash of the record before it in the chain (64 zeros for the first), hex SHA-256. */
  prevHash: Type.Optional(Type.String()),
  /** SHA-256 (hex) of this record's canonical form without `hash` (docs/security.md, "The audit chain"). */
  hash: Type.Optional(Type.String()),
});

export const auditOperations = {
  "audit.listEvents": { request: ListAuditEventsRequest, response: Type.Array(AuditEventItem) },
} as const;
