// Ids of the local key service: `<prefix>_<time><random>`, base58, sortable by creation order.
// Lists page by id, so creation order is also list order. Every request gets one (its request
// id), so the encoding runs on numbers rather than BigInt and random bytes come from a pool.
import { randomFillSync } from "node:crypto";
import { BASE58_ALPHABET, encodeBase58Fixed } from "../../protocol/base58";

type IdPrefix =
  "req" | "key" | "api" | "perm" | "role" | "id" | "rl" | "ws" | "rk" | "rlor" | "mig" | "aud" | "whep" | "msg" | "portal" | "ps";

const WIDTH = 11;
const TWO_32 = 2 ** 32;
const POOL = new Uint32Array(512);
let poolAt = POOL.length;

let lastMs = 0;
let seq = 0;

/** The id's text after the prefix, written here (base58 digits are ASCII), then read as one string. */
const TEXT = Buffer.alloc(2 * WIDTH);
const DIGITS = Uint8Array.from(BASE58_ALPHABET, (c) => c.charCodeAt(0));

/** `value` (a safe integer) in exactly WIDTH base58 digits at TEXT[0, WIDTH); the same text as encodeBase58Fixed. */
function writeSafe(value: number): void {
  let n = value;
  for (let i = WIDTH - 1; i >= 0; i--) {
    TEXT[i] = DIGITS[n % 58]!;
    n = Math.floor(n / 58);
  }
}

/** `hi * 2^32 + lo` (two 32-bit words) in exactly WIDTH base58 digits at TEXT[at, at + WIDTH), by long division. */
function writeWords(hi: number, lo: number, at: number): void {
  let h = hi;
  let l = lo;
  for (let i = at + WIDTH - 1; i >= at; i--) {
    const carry = (h % 58) * TWO_32 + l; // < 58 * 2^32: exact in a double
    h = Math.floor(h / 58);
    l = Math.floor(carry / 58);
    TEXT[i] = DIGITS[carry % 58]!;
  }
}

/** `hi * 2^32 + lo` (two 32-bit words) in exactly WIDTH base58 digits. */
export function encodeWords(hi: number, lo: number): string {
  writeWords(hi, lo, 0);
  return TEXT.toString("latin1", 0, WIDTH);
}

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
  const stamp = lastMs * 4096 + seq;
  if (!Number.isSafeInteger(stamp)) TEXT.write(encodeBase58Fixed(BigInt(lastMs) * 4096n + BigInt(seq), WIDTH), 0, "latin1");
  else writeSafe(stamp);
  if (poolAt >= POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  writeWords(POOL[poolAt++]!, POOL[poolAt++]!, WIDTH);
  return `${prefix}_${TEXT.toString("latin1", 0, 2 * WIDTH)}`;
}
