// What of a caller's value an error message may repeat. A caller who puts a key or a root key in
// the wrong field (`keys.getKey {"keyId": "<the key>"}`) must not get it back in an error body, or in
// the logs that keep error bodies: a value with the shape of a secret is described, not quoted.
import { BASE58_ALPHABET } from "../../protocol/base58";

/** A run of base58 characters as long as the shortest generated key's random part. */
const SECRET_RUN = new RegExp(`[${BASE58_ALPHABET}]{16,}`, "g");
/** The ids this service gives out: `<prefix>_` + 11 digits of creation time + 11 random digits. */
const OUR_ID = new RegExp(
  `^(?:req|key|api|perm|role|id|rl|ws|rk|rlor|mig|aud|whep|msg)_([${BASE58_ALPHABET}]{11})[${BASE58_ALPHABET}]{11}$`,
);
/** A rate-limit namespace's id, derived from its workspace and name (see namespaces.ts). */
const NAMESPACE_ID = new RegExp(`^rlns_[${BASE58_ALPHABET}]{22}$`);
/** Ids carry their creation time; one made before this date is not ours. */
const FIRST_ID_MS = Date.UTC(2024, 0, 1);

/** Whether a base58 run mixes at least two kinds of character, as random text does and words rarely do. */
function looksRandom(run: string): boolean {
  const kinds = Number(/[0-9]/.test(run)) + Number(/[A-Z]/.test(run)) + Number(/[a-z]/.test(run));
  return kinds >= 2;
}

/** Whether `value` is an id this service could have made (its time part a plausible creation time). */
function isOurId(value: string): boolean {
  if (NAMESPACE_ID.test(value)) return true;
  const time = OUR_ID.exec(value)?.[1];
  if (time === undefined) return false;
  let n = 0;
  for (const ch of time) n = n * 58 + BASE58_ALPHABET.indexOf(ch);
  const ms = Math.floor(n / 4096);
  return ms >= FIRST_ID_MS && ms <= Date.now() + 86_400_000;
}

/** Whether `value` may be a key or a root key: it holds a long random-looking base58 run and is not one of our ids. */
export function mayBeSecret(value: string): boolean {
  if (isOurId(value)) return false;
  for (const [run] of value.matchAll(SECRET_RUN)) if (looksRandom(run)) return true;
  return false;
}

/** `value` quoted for an error message, or a description of it when it may be a secret. */
export function echo(value: string): string {
  return mayBeSecret(value) ? "(a value shaped like a key, not repeated here)" : JSON.stringify(value);
}
