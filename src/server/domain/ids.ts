// Ids of the local key service: `<prefix>_<time><random>`, base58, sortable by creation order.
// Lists page by id, so creation order is also list order. Every request gets one (its request
// id), so the encoding runs on numbers rather than BigInt and random bytes come from a pool.
import { randomFillSync } from "node:crypto";
import { BASE58_ALPHABET, encodeBase58Fixed } from "./base58";

type IdPrefix = "req" | "key" | "api" | "perm" | "role" | "id" | "rl" | "ws" | "rk" | "rlor" | "mig" | "aud" | "whep" | "msg";

const WIDTH = 11;
const TWO_32 = 2 ** 32;
const POOL = new Uint32Array(512);
let poolAt = POOL.length;

let lastMs = 0;
let seq = 0;

/** Two random 32-bit words from a pool refilled from the CSPRNG. */
function randomWords(): [number, number] {
  if (poolAt >= POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  return [POOL[poolAt++]!, POOL[poolAt++]!];
}

/** `value` (a safe integer) in exactly WIDTH base58 digits; the same text as encodeBase58Fixed. */
function encodeSafe(value: number): string {
  let n = value;
  let out = "";
  for (let i = 0; i < WIDTH; i++) {
    out = BASE58_ALPHABET[n % 58]! + out;
    n = Math.floor(n / 58);
  }
  return out;
}

/** `hi * 2^32 + lo` (two 32-bit words) in exactly WIDTH base58 digits, by long division. */
export function encodeWords(hi: number, lo: number): string {
  let h = hi;
  let l = lo;
  let out = "";
  for (let i = 0; i < WIDTH; i++) {
    const carry = (h % 58) * TWO_32 + l; // < 58 * 2^32: exact in a double
    h = Math.floor(h / 58);
    l = Math.floor(carry / 58);
    out = BASE58_ALPHABET[carry % 58]! + out;
  }
  return out;
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
  const time = Number.isSafeInteger(stamp) ? encodeSafe(stamp) : encodeBase58Fixed(BigInt(lastMs) * 4096n + BigInt(seq), WIDTH);
  const [hi, lo] = randomWords();
  return `${prefix}_${time}${encodeWords(hi, lo)}`;
}
