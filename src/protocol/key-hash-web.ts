// A key's SHA-256 in base64 without importing node:crypto, for the Web-standard path (Bun, Deno,
// Cloudflare Workers, edge runtimes, and Node): the same value as key-hash.ts gives. Where the
// runtime lends its node:crypto through `process.getBuiltinModule` (Node ≥ 20.16, Bun, Deno), the
// hash is computed synchronously; elsewhere with Web Crypto (`crypto.subtle`, asynchronous), which
// on Node runs on the thread pool and costs a cached request several times the hash itself.

/** What a key hash looks like: 43 base64 characters and the one `=` of 32 bytes. */
export const KEY_HASH_PATTERN = /^[A-Za-z0-9+/]{43}=$/;

interface LentCrypto {
  hash?: (algorithm: string, data: string, encoding: "base64") => string;
  createHash(algorithm: string): { update(data: string, encoding: "utf8"): { digest(encoding: "base64"): string } };
}

type WithProcess = { process?: { getBuiltinModule?: (id: string) => unknown } };

const lent = (globalThis as WithProcess).process?.getBuiltinModule?.("node:crypto") as LentCrypto | undefined;

const syncHash: ((key: string) => string) | undefined =
  lent === undefined
    ? undefined
    : typeof lent.hash === "function"
      ? (key) => lent.hash!("sha256", key, "base64")
      : (key) => lent.createHash("sha256").update(key, "utf8").digest("base64");

const encoder = new TextEncoder();

/** base64(SHA-256(key)) with `crypto.subtle.digest`. */
export async function subtleKeyHash(key: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(key)));
  let binary = "";
  for (const byte of digest) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** base64(SHA-256(key)), 44 characters: at once where the runtime lends node:crypto, else a promise of Web Crypto's. */
export const webKeyHash: (key: string) => string | Promise<string> = syncHash ?? subtleKeyHash;
