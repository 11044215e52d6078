// Store records for the storage tests: a key with what every key has, a fresh id and hash unless given.
import { randomBytes } from "node:crypto";
import type { KeyRecord } from "keyguard/server";

let n = 0;

/** A plain enabled key (no credits, limits or relations) of `ws_test`'s `api_test`, with `over` on top. */
export function keyRecord(over: Partial<KeyRecord> = {}): KeyRecord {
  return {
    id: `key_record_${process.pid}_${++n}`,
    workspaceId: "ws_test",
    apiId: "api_test",
    hash: randomBytes(32).toString("base64"),
    start: "sk_abc",
    byteLength: 16,
    createdAt: 1,
    enabled: true,
    permissionIds: [],
    roleIds: [],
    ratelimits: [],
    ...over,
  };
}
