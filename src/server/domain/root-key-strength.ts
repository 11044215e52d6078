// Whether a root key the operator gives (rootKey, UNKEY_ROOT_KEY, --root-key) is strong enough to
// guard every permission: an estimate of its entropy from its length and the characters it uses
// (docs/security.md, "Root keys the operator gives"). A generated key always passes.

/** Least estimated entropy of a root key the operator gives, in bits. */
const MIN_ROOT_KEY_BITS = 128;

/** A command that makes a good root key (the shape docs/self-hosting.md recommends: `root_` + 48 hex digits, 192 bits). */
export const ROOT_KEY_COMMAND = 'echo "root_$(openssl rand -hex 24)"';

/** A leading name such as `root_` or `unkey_`: not secret, so not counted. */
const PREFIX = /^[A-Za-z][A-Za-z0-9]{0,15}_/;

/** The alphabet a string's characters are taken to be drawn from: digits, hex, or the classes it uses. */
function alphabetSize(body: string): number {
  if (/^[0-9]+$/.test(body)) return 10;
  if (/^[0-9a-f]+$/.test(body) || /^[0-9A-F]+$/.test(body)) return 16;
  let size = 0;
  if (/[a-z]/.test(body)) size += 26;
  if (/[A-Z]/.test(body)) size += 26;
  if (/[0-9]/.test(body)) size += 10;
  // The other visible ASCII characters (a root key is 8..512 of them).
  if (/[^A-Za-z0-9]/.test(body)) size += 32;
  return size;
}

/**
 * Why `key` is too weak, or undefined when it is not. Estimated bits: length × log2(alphabet)
 * over what follows a leading `name_`; weak below MIN_ROOT_KEY_BITS, when it repeats a shorter
 * string, or when it uses fewer than a quarter of the distinct characters its length and alphabet allow.
 */
export function rootKeyWeakness(key: string): string | undefined {
  const body = key.replace(PREFIX, "");
  const alphabet = alphabetSize(body);
  const bits = Math.floor(body.length * Math.log2(alphabet));
  if (bits < MIN_ROOT_KEY_BITS) {
    return `it holds about ${bits} bits of entropy (${body.length} characters from an alphabet of ${alphabet}${body === key ? "" : ", after its prefix"}); at least ${MIN_ROOT_KEY_BITS} are needed`;
  }
  if (/^(.+?)\1+$/s.test(body)) return "it repeats a shorter string";
  const distinct = new Set(body).size;
  if (distinct < Math.min(body.length, alphabet) / 4) return `it uses only ${distinct} distinct characters in ${body.length}`;
  return undefined;
}
