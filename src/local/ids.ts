// Ids of the local key service: `<prefix>_<time><random>`, base58, sortable by creation order.
// Lists page by id, so creation order is also list order.
import { randomBytes } from "node:crypto";
import { encodeBase58Fixed } from "./base58";

export type IdPrefix = "req" | "key" | "api" | "perm" | "role" | "id" | "rl" | "ws" | "rk" | "rlor" | "mig";

let lastMs = 0;
let seq = 0;

/** A new id with the given prefix. Later calls in one process give ids that sort after earlier ones. */
export function newId(prefix: IdPrefix): string {
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    seq = 0;
  } else if (++seq > 4095) {
    lastMs++;
    seq = 0;
  }
  const time = encodeBase58Fixed(BigInt(lastMs) * 4096n + BigInt(seq), 11);
  const random = encodeBase58Fixed(BigInt(`0x${randomBytes(8).toString("hex")}`), 11);
  return `${prefix}_${time}${random}`;
}
